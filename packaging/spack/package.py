# SPDX-License-Identifier: BSD-3-Clause
# package.py: Spack recipe for LA (libla, libla_client, the Fortran module,
# la-localagent, la-globalagent, lactl). Copy it into a Spack repository as
# packages/la/package.py. Set `git` to where the LA sources live, or build
# a checkout with `spack develop --path /path/to/la la@main`.
#
# The build is LA's own Makefile: `make libs bins` then `make install`, with
# Spack's compilers and prefix passed as make variables. Variants map to
# make's PAPI and FORTRAN switches. libla never links libpapi: with +papi it
# loads the libpapi of the papi dependency (its full path, PAPI_LIB) at run
# time when a PAPI metric is chosen; ~papi builds without papi.h.

from spack.package import *


class La(MakefilePackage):
    """LA: a fine-grained per-mesh-element profiler for MPI codes. A small
    library in the application measures each element's time (or a PAPI
    counter) every Nth step; node and front-end daemons collect, compact and
    store the traces; libla_client feeds them to load balancers."""

    homepage = "https://example.invalid/la"
    git = "https://example.invalid/la.git"  # replace with LA's repository

    license("BSD-3-Clause")

    version("main", branch="main")

    variant(
        "papi",
        default=True,
        description="PAPI metrics (cycles, instructions, papi:EVENT); "
        "libpapi is loaded at run time only when one is chosen",
    )
    variant("fortran", default=True, description="Build the la_mod Fortran module")

    depends_on("c", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("gmake", type="build")
    # libla: protobuf-c (and protoc-c at build time)
    depends_on("protobuf-c")
    # the daemons and lactl
    depends_on("libuv")
    depends_on("libsodium")
    depends_on("sqlite")
    # the daemons' HTTP metrics endpoint
    depends_on("libmicrohttpd")
    # the GlobalAgent's PostgreSQL store (libpq; Spack's postgresql provides it)
    depends_on("postgresql")
    # lactl whatif partitions with METIS
    depends_on("metis")
    # lactl's pictures (plot --grid, serve) embed PNG images (zlib's deflate)
    depends_on("zlib-api")
    depends_on("papi", when="+papi")
    # MPI only for the examples and tests: libla does not link MPI
    depends_on("mpi", type="test")
    depends_on("cmocka", type="test")
    depends_on("cmake", type="test")
    depends_on("pkgconfig", type="test")

    def make_vars(self):
        """The make variables of both build and install."""
        spec = self.spec
        v = [
            "PREFIX={0}".format(self.prefix),
            "CC={0}".format(spack_cc),
            "PAPI={0}".format(1 if spec.satisfies("+papi") else 0),
            "FORTRAN={0}".format(1 if spec.satisfies("+fortran") else 0),
        ]
        if spec.satisfies("+fortran"):
            v.append("FC={0}".format(spack_fc))
        if spec.satisfies("+papi"):
            libs = find_libraries(
                "libpapi", root=spec["papi"].prefix, shared=True, recursive=True
            )
            if libs:
                v.append("PAPI_LIB={0}".format(libs[0]))
        return v

    def edit(self, spec, prefix):
        pass  # configured entirely by make variables

    @property
    def build_targets(self):
        return ["libs", "bins"] + self.make_vars()

    @property
    def install_targets(self):
        return ["install"] + self.make_vars()

    def check(self):
        # the install test builds C, Fortran and CMake programs against a
        # temporary install; the full `make check` needs sanitizers and MPI
        make("tests", *self.make_vars())
        bash = which("bash")
        bash("scripts/run-tests.sh", "test_libla", "test_install")
