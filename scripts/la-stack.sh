# SPDX-License-Identifier: BSD-3-Clause
# la-stack.sh: sourced by the scripts that run the whole chain on loopback
# (demo.sh, bench-balance.sh): starts a GlobalAgent (fresh SQLite store,
# stitch.timeout 5s) and a LocalAgent uplinked to it, with a new shared
# secret, all in one working directory. Starting only: the caller owns the
# directory and stops the daemons (their pids are appended to its pids
# array) from its EXIT trap, with la_stack_stop.

# Stops every process in the caller's pids array: SIGTERM to all, then
# up to 5 s each to exit before SIGKILL; reaps them.
la_stack_stop() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
}

# Waits up to 10 s for a port file to be written. 0 or 1.
la_stack_wait_port() { # file
  for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}

# Starts both daemons from BIN with their files and logs
# (globalagent.log, localagent.log) in WORK; exports LA_AGENT and
# LA_GLOBAL. Returns 1 after "NAME: ... did not start: <log tail>" on
# stderr.
la_stack_start() { # name bin work
  local name=$1 bin=$2 work=$3
  "$bin/lactl" secret "$work/secret" >/dev/null ||
    { echo "$name: cannot create a secret" >&2; return 1; }
  "$bin/la-globalagent" --agents.listen=127.0.0.1:0 \
    --agents.port_file="$work/ga.port" --feed.listen=127.0.0.1:0 \
    --feed.port_file="$work/feed.port" --store.path="$work/la.db" \
    --agents.secret_file="$work/secret" --stitch.timeout=5s \
    >/dev/null 2>"$work/globalagent.log" &
  pids+=($!)
  la_stack_wait_port "$work/ga.port" && la_stack_wait_port "$work/feed.port" ||
    { echo "$name: the GlobalAgent did not start:" \
        "$(tail -3 "$work/globalagent.log")" >&2; return 1; }
  "$bin/la-localagent" --agent.listen=127.0.0.1:0 \
    --agent.port_file="$work/la.port" \
    --global.address="127.0.0.1:$(cat "$work/ga.port")" \
    --global.secret_file="$work/secret" --global.spool_dir="$work/spool" \
    >/dev/null 2>"$work/localagent.log" &
  pids+=($!)
  la_stack_wait_port "$work/la.port" ||
    { echo "$name: the LocalAgent did not start:" \
        "$(tail -3 "$work/localagent.log")" >&2; return 1; }
  export LA_AGENT="127.0.0.1:$(cat "$work/la.port")"
  export LA_GLOBAL="127.0.0.1:$(cat "$work/feed.port")"
}
