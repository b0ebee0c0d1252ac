#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# install-deps.sh: installs every Debian package LA builds, tests or runs with.
# Idempotent: when everything is present it prints one line and exits at once.
# Run by `make deps`, and by `make check` / `make demo` when a tool is missing.
set -euo pipefail

PKGS=(
  build-essential pkg-config gfortran
  libuv1-dev
  libprotobuf-c-dev protobuf-c-compiler
  libpapi-dev papi-tools
  libcmocka-dev
  mpich libmpich-dev
  libsqlite3-dev sqlite3
  libsodium-dev
  libmetis-dev
  # services: sd_notify (libsystemd), unit checks (systemd-analyze in
  # systemd); metrics over HTTP (libmicrohttpd); man pages (scdoc); the
  # CMake package test (cmake); the Python package and VTK read-back tests
  # (Debian's /usr/bin/python3 with numpy, vtk, pip, setuptools, and venv
  # for the documented install of the Python package); the JSON schemas of
  # lactl's and the status' output checked by python3-jsonschema
  libsystemd-dev systemd libmicrohttpd-dev scdoc cmake
  python3 python3-numpy python3-vtk9 python3-pip python3-setuptools
  python3-venv python3-jsonschema
  # make check: ThreadSanitizer and ASan runtimes of gcc (libtsan2, libasan8
  # come with gcc), libFuzzer and its runtimes (clang, libclang-rt-14-dev),
  # symbolized sanitizer reports (llvm), per-test accounting (procps: ps;
  # util-linux: setsid, unshare)
  clang libclang-rt-14-dev llvm procps util-linux
  # test_services: the daemons' system calls against the units' filters
  strace
  # bench-compact: zstd -19 of the raw series, the size compact traces are
  # compared with; bench-idiom: instructions executed (valgrind)
  zstd valgrind
  # in-job balancing example: Zoltan (Debian builds it with Open MPI, so the
  # example is built with mpicc.openmpi); the PostgreSQL store backend and
  # its tests (libpq; a throw-away server started from postgresql's binaries)
  # libopenmpi-dev: Open MPI's mpi.h, without which mpicc.openmpi cannot
  # compile the Zoltan example (libtrilinos-zoltan-dev does not pull it in)
  libtrilinos-zoltan-dev libopenmpi-dev
  libpq-dev postgresql
  # lactl's pictures embed PNG images (zlib); test_serve loads lactl serve's
  # page in headless Chromium
  zlib1g-dev chromium
)

# LA is built and tested with MPICH. Another package (python3-vtk9) pulls in
# Open MPI, whose alternatives would then win for mpicc/mpiexec: point them
# back at MPICH whenever they point elsewhere.
pin_mpich() {
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  local name target
  for name in mpi:/usr/bin/mpicc.mpich mpirun:/usr/bin/mpirun.mpich; do
    target=${name#*:}; name=${name%%:*}
    [ -x "$target" ] || continue
    if [ "$(readlink -f "/etc/alternatives/$name" 2>/dev/null)" != "$(readlink -f "$target")" ]; then
      $SUDO update-alternatives --set "$name" "$target" >/dev/null
      echo "install-deps: $name alternatives set to MPICH ($target)"
    fi
  done
}

# The postgresql package would create and start a system-wide cluster; LA's
# tests start their own server in a temporary directory, so ask for none.
no_main_cluster() {
  local conf=/etc/postgresql-common/createcluster.conf
  if [ ! -e "$conf" ] && [ "$(id -u)" -eq 0 ]; then
    mkdir -p "$(dirname "$conf")"
    echo "create_main_cluster = false" > "$conf"
  fi
}

# promtool (`promtool check metrics`, test_metrics) is in Debian's prometheus
# package, whose installation would start a Prometheus server: fetch the
# package instead and take only usr/bin/promtool out of it, into
# /usr/local/bin, whenever no promtool is on PATH.
install_promtool() {
  command -v promtool >/dev/null 2>&1 && return 0
  local SUDO="" tmp
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  tmp=$(mktemp -d)
  chmod 755 "$tmp" # apt's _apt user writes the download there
  if (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1) &&
     dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x" &&
     $SUDO install -m 755 "$tmp/x/usr/bin/promtool" /usr/local/bin/promtool; then
    echo "install-deps: promtool installed in /usr/local/bin (from the prometheus package, not installed)"
  else
    echo "install-deps: could not fetch promtool (apt-get download prometheus)" >&2
  fi
  rm -rf "$tmp"
}

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  pin_mpich
  install_promtool
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
no_main_cluster
$SUDO apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
pin_mpich
install_promtool
echo "install-deps: done"
