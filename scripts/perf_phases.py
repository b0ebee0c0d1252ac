#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""perf_phases.py: where the LocalAgent's threads spend their CPU, from
`perf script` output of a `perf record -e cpu-clock --call-graph dwarf` of
the agent (scripts/bench-laprofile.sh).

Usage: perf_phases.py SCRIPT_OUTPUT FREQ_HZ RANK_CYCLES [OUT.json]

Each sample is given to its thread (by name: loop, la-compact, la-sync,
la-lane, others as they are named) and to a phase: walking its call chain
from the leaf, the first function that marks a phase (PHASES below)
names it; a chain that unwinding lost inside the compaction code (perf
cannot always unwind through it) is counted as compaction by its
innermost frames (the robust weights' own compaction included).
Prints per thread and phase the samples, their share of the thread and
the CPU per rank-cycle they stand for (samples / FREQ_HZ / RANK_CYCLES);
writes the same as JSON when OUT.json is given.
"""
import collections
import json
import sys

# (phase, functions that mark it); the first marker found from the leaf wins
PHASES = [
    ("cycle marked taken (table slot, or log write)", ["la_outq_taken"]),
    ("message encoding (protobuf)", ["la_frame_pack"]),
    ("log append (write(2) of the message)", ["la_outq_append"]),
    ("ack record", ["la_outq_ack"]),
    ("acknowledged segments deleted", ["la__seglog_trim"]),
    ("log fsync", ["la_outq_sync"]),
    ("job handed to a compaction thread (wake-up)", ["la_pool_submit"]),
    ("loop woken for a finished job (eventfd)", ["eventfd_write"]),
    ("send to the GlobalAgent (TCP)", ["la__pump"]),
    ("robust weights", ["la_weights_cycle_recon_starts",
                        "la_weights_cycle_recon", "la_weights_cycle"]),
    ("history", ["la_history_match", "la_history_match_robust_exc",
                 "la_history_check", "la_history_refit",
                 "la_history_learn_recon", "la_history_take"]),
    ("compaction", ["la_compact", "la_compact_spread", "la__channels"]),
    ("copy out of shared memory", ["la_app_ipc_take_rows", "la_app_ipc_take",
                                   "la_app_ipc_take_pieces",
                                   "la_app_ipc_flags",
                                   "la_app_ipc_take_blocks"]),
    ("weights area", ["la_app_ipc_put_weights_values",
                      "la_app_ipc_put_weights",
                      "la_app_ipc_put_weights_pieces"]),
    ("buffer given back (semaphore)", ["la_app_ipc_give_back"]),
    ("application's notifications (read, decode)", ["la__drain",
                                                    "la__sess_frame"]),
    ("GlobalAgent's acknowledgements (read)", ["la__on_read"]),
    ("finished jobs (counting)", ["la__after", "la__run_done"]),
    ("waiting and waking (epoll, futex, scheduler)", [
        "epoll_wait", "___pthread_cond_wait", "__pthread_cond_wait_common",
        "__futex_abstimed_wait_common64", "futex_do_wait",
        "finish_task_switch.isra.0", "schedule"]),
]
MARK = {f: p for p, fs in PHASES for f in fs}
# leaves of the compaction code, where unwinding often stops
COMPACT_LEAF = ("la_cenc", "la_huff", "build_code", "map_avx2", "qscan",
                "stats_", "la_compact", "pl_", "codes_put", "count_syms",
                "table_len", "la__step", "sort_syms", "la__forward",
                "la__backward", "la__weights_avx2", "la__resolution",
                "la__scan_avx2", "la__front_avx2", "la_robust", "la_cbuf",
                "la_varint", "la_zigzag", "lengths", "by_count", "_mm")


def thread_name(comm):
    return "loop" if comm.startswith("la-localagent") else comm


def phase_of(frames):
    for f in frames:
        if f in MARK:
            return MARK[f]
    if any(f.startswith(COMPACT_LEAF) for f in frames[:6]):
        return "compaction"
    return "other (libuv, libc, kernel)"


def read_samples(path):
    """Yields (thread, [function names from the leaf]) per sample."""
    comm, frames = None, []
    with open(path, errors="replace") as fh:
        for line in fh:
            if not line.strip():
                if comm is not None:
                    yield thread_name(comm), frames
                comm, frames = None, []
            elif line[0] not in " \t":
                comm, frames = line.split()[0], []
            else:
                parts = line.split(None, 1)
                name = parts[1].strip() if len(parts) > 1 else "?"
                frames.append(name.split(" ")[0])
    if comm is not None:
        yield thread_name(comm), frames


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: perf_phases.py SCRIPT_OUTPUT FREQ_HZ RANK_CYCLES "
                 "[OUT.json]")
    freq, cycles = float(sys.argv[2]), float(sys.argv[3])
    if freq <= 0 or cycles <= 0:
        sys.exit("perf_phases.py: FREQ_HZ and RANK_CYCLES must be > 0")
    per = collections.defaultdict(collections.Counter)
    for thread, frames in read_samples(sys.argv[1]):
        per[thread][phase_of(frames)] += 1
    out = {}
    us = 1e6 / freq / cycles  # microseconds per rank-cycle of one sample
    for thread in sorted(per, key=lambda t: -sum(per[t].values())):
        total = sum(per[thread].values())
        print("%s: %d samples, %.0f us per rank-cycle" %
              (thread, total, total * us))
        rows = []
        for phase, n in per[thread].most_common():
            print("  %5.1f%%  %6.1f us  %s" % (100.0 * n / total, n * us,
                                                phase))
            rows.append({"phase": phase, "samples": n,
                         "share": n / total, "us_per_rank_cycle": n * us})
        out[thread] = {"samples": total, "us_per_rank_cycle": total * us,
                       "phases": rows}
    if len(sys.argv) > 4:
        with open(sys.argv[4], "w") as fh:
            json.dump({"freq_hz": freq, "rank_cycles": cycles,
                       "threads": out}, fh, indent=1)


if __name__ == "__main__":
    main()
