# SPDX-License-Identifier: BSD-3-Clause
"""check_spack_package.py: checks packaging/spack/package.py without Spack.

Run by test_install with Debian's /usr/bin/python3:
    check_spack_package.py PATH/TO/package.py [PATH/TO/Makefile]
Compiles the recipe, then loads it against a stand-in `spack.package`
module that records Spack's directives, and checks what a user of the
recipe relies on: a MakefilePackage named La with the papi and fortran
variants, the libraries LA links as dependencies (papi only with +papi;
with the Makefile, every -lNAME it links, through a table of which Spack
package provides each),
and make variables that follow the variants (PAPI=0, FORTRAN=0 when off,
PAPI_LIB the papi dependency's library when on). Prints "spack package: OK"
or fails with an assertion naming what is wrong.
"""
import sys
import types

path = sys.argv[1]
code = compile(open(path).read(), path, "exec")

recorded = {"variant": [], "depends_on": [], "version": [], "license": []}


def directive(name):
    def record(*args, **kwargs):
        recorded[name].append((args, kwargs))

    return record


class MakefilePackage:
    pass


class Spec:
    def __init__(self, on, prefix):
        self.on = on
        self.prefix = prefix

    def satisfies(self, s):
        return s[1:] in self.on if s[0] == "+" else False

    def __getitem__(self, name):
        return Spec(set(), "/spack/" + name)


stub = types.ModuleType("spack.package")
for name in recorded:
    setattr(stub, name, directive(name))
stub.MakefilePackage = MakefilePackage
stub.spack_cc = "/spack/env/cc"
stub.spack_fc = "/spack/env/gfortran"
stub.find_libraries = lambda n, root, shared, recursive: [root + "/lib/" + n + ".so"]
sys.modules["spack"] = types.ModuleType("spack")
sys.modules["spack.package"] = stub

ns = {"__name__": "la_package"}
exec(code, ns)
La = ns["La"]
assert issubclass(La, MakefilePackage), "La is not a MakefilePackage"
assert recorded["license"] == [(("BSD-3-Clause",), {})], recorded["license"]
variants = {a[0] for a, _ in recorded["variant"]}
assert {"papi", "fortran"} <= variants, "variants: %s" % variants
deps = {a[0]: k for a, k in recorded["depends_on"]}
for d in ("protobuf-c", "libuv", "libsodium", "sqlite", "papi", "mpi"):
    assert d in deps, "no depends_on(%r)" % d

# Every library the Makefile links (-lNAME) is a dependency of the recipe:
# the Spack package that provides it, or None for the C library's own and
# for what LA uses only where the system has it.
LIB_PACKAGE = {
    "m": None, "dl": None, "pthread": None,  # the C library
    "systemd": None,  # sd_notify only when libsystemd is installed
    "protobuf-c": "protobuf-c", "uv": "libuv", "sodium": "libsodium",
    "sqlite3": "sqlite", "microhttpd": "libmicrohttpd", "pq": "postgresql",
    "metis": "metis", "cmocka": "cmocka", "sde": "papi", "z": "zlib-api",
}
if len(sys.argv) > 2:
    import re
    text = open(sys.argv[2]).read()
    libs = set(re.findall(r"(?<![\w-])-l([A-Za-z0-9_+.-]+)", text))
    assert libs, "no -l in %s" % sys.argv[2]
    for lib in sorted(libs):
        assert lib in LIB_PACKAGE, (
            "the Makefile links -l%s: map it to its Spack package in "
            "check_spack_package.py and add depends_on" % lib)
        pkg = LIB_PACKAGE[lib]
        assert pkg is None or pkg in deps, (
            "the Makefile links -l%s but the recipe has no depends_on(%r)"
            % (lib, pkg))
assert deps["papi"].get("when") == "+papi", "papi is not tied to +papi"
assert recorded["version"], "no version"


def make_vars(on):
    pkg = La.__new__(La)
    pkg.spec = Spec(on, "/spack/la")
    pkg.prefix = "/spack/la"
    return pkg.build_targets, pkg.install_targets


b, i = make_vars(set())
assert "libs" in b and "bins" in b and "install" in i, (b, i)
for v in ("PAPI=0", "FORTRAN=0", "PREFIX=/spack/la", "CC=/spack/env/cc"):
    assert v in b and v in i, "%s missing in %s" % (v, b)
b, i = make_vars({"papi", "fortran"})
for v in ("PAPI=1", "FORTRAN=1", "FC=/spack/env/gfortran",
          "PAPI_LIB=/spack/papi/lib/libpapi.so"):
    assert v in b and v in i, "%s missing in %s" % (v, b)
print("spack package: OK")
