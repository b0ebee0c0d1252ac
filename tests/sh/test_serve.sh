#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_serve.sh: `lactl serve` in a real browser. Starts the real daemons
# on loopback (scripts/la-stack.sh), runs wavetoy under mpiexec, starts
# `lactl serve` on an ephemeral port and loads its page in headless
# Chromium (tests/python/serve_page.py, over the DevTools protocol): the
# page shows the application and its latest cycle with the per-rank
# totals `lactl show --json` reads from the store and the behaviour classes
# `lactl show --clusters --json` finds; a second application
# run while the page is open reaches it without a reload (its sets
# counted, its latest cycle listed and then shown); requests without the
# token, or with another, get 403. Screenshots are written to
# build/test-output/test_serve/ ($LA_TEST_OUTPUT); SIGTERM stops it
# cleanly. LA_TEST_LACTL names another build's lactl to serve with (e.g.
# build/asan/bin/lactl: no sanitizer report allowed). About 10-40 s.
#
# Run by run-tests.sh after make all; skips when the programs, mpiexec or
# chromium are missing, except under CI=true, where a missing chromium
# fails (CI installs it: scripts/install-deps.sh).
set -u
cd "$(dirname "$0")/../.."
. tests/sh/report.sh
NAME=test_serve
for f in build/bin/la-globalagent build/bin/la-localagent build/bin/lactl \
         build/examples/wavetoy; do
  [ -x "$f" ] || { la_sh_skip $NAME "$f is missing (make all first)"; la_sh_done; }
done
command -v mpiexec >/dev/null ||
  { la_sh_skip $NAME "mpiexec is missing (make deps)"; la_sh_done; }
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  if [ "${CI:-}" = true ]; then
    la_sh_fail $NAME "chromium is missing: CI installs it (scripts/install-deps.sh, Debian package chromium)"
  else
    la_sh_skip $NAME "chromium is missing (Debian package chromium: make deps)"
  fi
  la_sh_done
fi

out=${LA_TEST_OUTPUT:-build/test-output}/$NAME
mkdir -p "$out"
work=$(mktemp -d /tmp/la-test-serve.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
. scripts/la-stack.sh
if ! la_stack_start $NAME build/bin "$work"; then
  la_sh_fail "$NAME/daemons" "the daemons did not start"
  la_sh_done
fi

app_a=wavetoy-serve-a-$$ app_b=wavetoy-serve-b-$$
if ! LA_APP_ID=$app_a timeout 120 mpiexec -n 2 build/examples/wavetoy \
     --n 24 --steps 6 >"$work/a.out" 2>&1; then
  la_sh_fail "$NAME/app" "wavetoy failed: $(tail -5 "$work/a.out")"
  la_sh_done
fi
# its 6 cycles stored and closed before the page is loaded (the
# LocalAgent uplinks after the run ends)
stored=
for _ in $(seq 1200); do
  c=$(build/bin/lactl cycles "$app_a" 2>/dev/null | head -1)
  case $c in *": 6 cycles ("*", 0 open)"*) stored=1; break ;; esac
  sleep 0.1
done
if [ -z "$stored" ]; then
  la_sh_fail "$NAME/app" "$app_a: not 6 closed cycles within 120 s: $c"
  la_sh_done
fi

"${LA_TEST_LACTL:-build/bin/lactl}" serve --listen 127.0.0.1:0 --url-file "$work/url" \
  >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=($serve_pid)
for _ in $(seq 300); do [ -s "$work/url" ] && break; sleep 0.1; done
if [ ! -s "$work/url" ]; then
  la_sh_fail "$NAME/serve" "lactl serve did not start: $(tail -5 "$work/serve.err")"
  la_sh_done
fi
url=$(cat "$work/url")
if grep -qF "open $url" "$work/serve.out" && [ "$(stat -c %a "$work/url")" = 600 ]; then
  la_sh_ok "$NAME/url"
else
  la_sh_fail "$NAME/url" "printed: $(cat "$work/serve.out"); url file mode $(stat -c %a "$work/url")"
fi

python3 tests/python/serve_page.py "$chromium" "$url" build/bin/lactl "$out" \
  "$app_a" "$app_b" 4 --then env LA_APP_ID=$app_b timeout 120 mpiexec -n 3 \
  build/examples/wavetoy --n 18 --steps 4 || la_sh_failed=1

# SIGTERM: a clean stop that says what it served (and, in a sanitized
# build, no report)
kill -TERM $serve_pid
wait $serve_pid
rc=$?
if [ $rc -eq 0 ] && grep -q 'lactl serve: stopped; [0-9]* requests ([1-9][0-9]* refused' "$work/serve.err" &&
   ! grep -qE 'Sanitizer|runtime error' "$work/serve.err"; then
  la_sh_ok "$NAME/stop"
else
  la_sh_fail "$NAME/stop" "exit $rc: $(tail -20 "$work/serve.err")"
fi
la_sh_done
