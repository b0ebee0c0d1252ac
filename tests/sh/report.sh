# SPDX-License-Identifier: BSD-3-Clause
# report.sh: sourced by the shell tests (tests/sh/test_*.sh) to report each
# check the way run-tests.sh counts cmocka's results: one "[       OK ]",
# "[  FAILED  ]" or "[  SKIPPED ]" line per check; la_sh_done exits 1 when
# one failed.

la_sh_failed=0

la_sh_ok() { # name
  echo "[       OK ] $1"
}

la_sh_fail() { # name, what went wrong
  echo "[  FAILED  ] $1"
  printf '%s\n' "$2" | sed 's/^/    /'
  la_sh_failed=1
}

la_sh_skip() { # name, why
  echo "skip: $2"
  echo "[  SKIPPED ] $1"
}

la_sh_done() {
  exit "$la_sh_failed"
}
