#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench-overhead.py: the overhead study (the design study's
figures 4-6), run by `make bench-overhead` and `make bench`.

For each program (wavetoy: a light stencil; heavy: many flops per cell) it
runs, interleaved so machine noise hits every variant alike:
  none    --no-la: no LA call at all (the baseline)
  floor   --floor: two raw timer reads and a store per cell into a local
          array, no library, no agent (hand-written minimal instrumentation)
  LA      per metric (time; papi:perf::TASK-CLOCK), per profiling period
          (1, 5, 15, 50) and, for the wall-time metric, per compaction CV
          (0.05, 0.1, 0.2: CV changes only the agent's work), with a real
          LocalAgent and GlobalAgent running on loopback. A PAPI software
          event costs a system call per reading, so its runs are long.
  probe   for a program with --probe (wavetoy), the wall-time metric at
          CV 0.1 also with each other probe mode: per cell in every step's
          loop (cell-always, the plain instrumentation) and per row of cells
          (row); the default mode (cell) runs the probed loop in profiled
          steps only (LA_PROFILED).
and reports the median wall time of each (rank 0's max over ranks) and the
overhead over the baseline, and the median CPU time of each run: the
program's (user + system of the finished children: mpiexec, its proxy and
the ranks, so compare with the baseline's), the LocalAgent's and the
GlobalAgent's (the sum of their threads' on-CPU time from
/proc/PID/task/*/schedstat, nanoseconds; /proc/PID/stat's ticks where
schedstat is missing), read before and after each run, after the agent has
finished the run's cycles. Writes build/bench/overhead.json and a Markdown
table build/bench/overhead.md. Environment: LA_BENCH_REPS (default 3),
LA_BENCH_NP (MPI ranks, default 1: the per-cell probe cost does not depend
on the rank count, and one core stays free for the agents); to run a part:
LA_BENCH_PROGRAMS (e.g. "wavetoy"), LA_BENCH_METRICS ("time"),
LA_BENCH_PERIODS ("1,15"), LA_BENCH_CVS ("0.1"), LA_BENCH_PROBES (of
floor, cell, cell-always, row: e.g. "row" runs only the baseline and the
row probes), comma-separated.
LA_BENCH_STEPS=N runs every program N steps instead of its default: the
steady state. Two times are reported per variant: "wall", the program's own
time-step loop (what it prints; registration and LA_finalize are outside
it), and "whole run", the elapsed time of mpiexec around it (start-up,
LA_registerGrid, the loop, LA_finalize, MPI_Finalize). A 150-step wavetoy
loop lasts about 0.02 s, so fixed costs weigh on it; with
LA_BENCH_STEPS=3000 (about 0.5 s) the loop is the steady state. The
LocalAgent's CPU per profiled cycle (its CPU seconds over the cycles the
program reports as profiled) is the figure least moved by other load.
LA_BENCH_BUSY=1 is the node as deployed: as many ranks as cores
(LA_BENCH_NP defaults to the core count), the agents on the same cores,
wavetoy (128^3 cells, 300 steps), heavy and multiloop (1024^2 cells, three
loops per step: channels), the wall-time metric at periods 1 and 15 with
cell and row probes (LA_BENCH_PERIODS etc. still choose); it reports
besides the overhead the application's waits for a buffer (all ranks) and
the LocalAgent's CPU per cell of a profiled cycle (its CPU over profiled
cycles x cells of the job), the daemons' CPU while the program ran (work
left for after it is not taken from the ranks), and per profiled
rank-cycle each daemon thread's CPU and context switches (wake-ups and
preemptions) from /proc/PID/task/*/ (the threads by name: loop, la-lane,
la-sync, la-compact, la-commit, la-ckpt; "pool" for libuv's), and the
traces each variant stored over all its runs, how many of them coarse
(the LocalAgent was behind) and how many cycles recorded missing (read
from the GlobalAgent's store after the runs).
LA_BENCH_AGENT_B=PATH starts a second LocalAgent from PATH (another build,
to compare side by side) beside the first, on the same GlobalAgent, and
runs every LA variant against each, interleaved; B's variants carry "/B"
in their key (their probe column reads e.g. "cell/B"). PATH may be a
command line: "chrt --idle 0 build/bin/la-localagent --agent.threads=1".
LA_BENCH_GLOBAL_B=PATH starts a second GlobalAgent from PATH for the B
variants (their LocalAgent is LA_BENCH_AGENT_B's, or this tree's when only
LA_BENCH_GLOBAL_B is given), so that GlobalAgents are compared too; a
variant's GlobalAgent CPU is then its own GlobalAgent's.
LA_BENCH_GLOBAL_A=PATH starts the A variants' GlobalAgent from PATH
instead of this tree's (a command line too: with LA_BENCH_GLOBAL_B, two
GlobalAgents under the same "chrt --idle 0").
LA_BENCH_PIN=1 runs the daemons on CPU 1 and the program on CPU 0
(taskset), so that the agent's work on a profiled cycle does not take the
program's core: on a 2-core machine shared with other work the scheduler
otherwise often runs them on the same core. LA_BENCH_LOCALAGENT_OPTS adds
options to the LocalAgent's command line (e.g. "--history.memory=0").
"""
import json
import os
import random
import resource
import re
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
REPS = int(os.environ.get("LA_BENCH_REPS", "3"))
NP = int(os.environ.get("LA_BENCH_NP", "1"))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(BUILD, "bench",
                                                         "overhead.json")
PROGRAMS = {
    # name: arguments giving roughly 0.5-1 s per run on this machine
    # (wavetoy: 150 steps, a multiple of every period, so that a period-p
    # run profiles exactly 1/p of the steps)
    "wavetoy": ["--n", "64", "--steps", "150"],
    "heavy": ["--n", "32", "--steps", "20"],
}
METRICS = ["time", "papi:perf::TASK-CLOCK"]
PERIODS = [1, 5, 15, 50]
CVS = [0.05, 0.1, 0.2]
PROBE_MODES = ["cell-always", "row"]  # besides the default, cell
# cells of the whole job per program, for the agent's CPU per cell
CELLS = {"wavetoy": lambda n: n ** 3, "heavy": lambda n: n ** 3,
         "multiloop": lambda n: n ** 2}
BUSY = os.environ.get("LA_BENCH_BUSY", "") == "1"
if BUSY:
    NP = int(os.environ.get("LA_BENCH_NP", str(os.cpu_count() or 1)))
    PROGRAMS = {"wavetoy": ["--n", "128", "--steps", "300"],
                "heavy": ["--n", "32", "--steps", "30"],
                "multiloop": ["--n", "1024", "--steps", "150"]}
    METRICS = ["time"]
    PERIODS = [1, 15]
    CVS = [0.1]
    PROBE_MODES = ["row"]
STEPS = os.environ.get("LA_BENCH_STEPS", "")
if STEPS:
    PROGRAMS = {k: v[:2] + ["--steps", str(int(STEPS))] + v[4:]
                for k, v in PROGRAMS.items()}


def env_list(name, default, conv):
    v = os.environ.get(name, "")
    return [conv(x) for x in v.split(",") if x] if v else default


PROGRAMS = {k: v for k, v in PROGRAMS.items()
            if k in env_list("LA_BENCH_PROGRAMS", list(PROGRAMS), str)}
METRICS = env_list("LA_BENCH_METRICS", METRICS, str)
PERIODS = env_list("LA_BENCH_PERIODS", PERIODS, int)
CVS = env_list("LA_BENCH_CVS", CVS, float)
PROBES = env_list("LA_BENCH_PROBES", ["floor", "cell"] + PROBE_MODES, str)
PROBE_MODES = [m for m in PROBE_MODES if m in PROBES]
WALL = re.compile(r"wall time ([0-9.]+) s")
PROFILED = re.compile(r"profiled ([0-9]+)")
WAITS = re.compile(r"waits ([0-9]+) \(all ranks\)")
REGISTER = re.compile(r"LA_registerGrid ([0-9.]+) ms")
PIN = os.environ.get("LA_BENCH_PIN", "") == "1" and shutil.which("taskset")


def pinned(cmd, cpu):
    return ["taskset", "-c", str(cpu)] + cmd if PIN else cmd


def start(cmd, port_file, name, work):
    log = open(os.path.join(work, name + ".log"), "w")
    p = subprocess.Popen(pinned(cmd, 1), stdout=subprocess.DEVNULL, stderr=log,
                         start_new_session=True)
    for _ in range(500):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return p, int(open(port_file).read())
        if p.poll() is not None:
            break
        time.sleep(0.01)
    log.close()
    raise SystemExit("bench-overhead: %s did not start: %s" %
                     (name, open(log.name).read()[-600:]))


def supports(prog, option):
    out = subprocess.run([prog, "--help"], capture_output=True, text=True)
    return option in out.stdout + out.stderr


def cpu_seconds(pid):
    """CPU time of process pid so far (all its threads), in seconds."""
    total, ok = 0, True
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        ok = False
    if not ok:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_label(pid, tid, comm):
    """A daemon thread's name in the per-thread table: its own name (the
    named threads: la-lane, la-sync, la-compact, la-commit, la-ckpt),
    "loop" for the main thread, "pool" for libuv's other threads."""
    if tid == pid:
        return "loop"
    return "pool" if comm.startswith("la-localagent") or comm.startswith(
        "la-globalagen") else comm


def thread_stats(pid):
    """{label: [on-CPU ns, context switches]} summed over pid's threads."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            base = "/proc/%d/task/%s/" % (pid, t)
            with open(base + "comm") as f:
                comm = f.read().strip()
            with open(base + "schedstat") as f:
                ns = int(f.read().split()[0])
            with open(base + "status") as f:
                sw = sum(int(x) for x in re.findall(
                    r"^(?:non)?voluntary_ctxt_switches:\s+(\d+)", f.read(),
                    re.M))
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
        a = out.setdefault(thread_label(pid, int(t), comm), [0, 0])
        a[0] += ns
        a[1] += sw
    return out


def settle(pids, quiet=0.05, limit=2.0):
    """Waits until the daemons pids use no CPU for `quiet` seconds (the
    last cycles of a run are compacted and stored after the program
    exits), at most `limit` seconds."""
    t_end = time.time() + limit
    last = [cpu_seconds(p) for p in pids]
    while time.time() < t_end:
        time.sleep(quiet)
        now = [cpu_seconds(p) for p in pids]
        if all(b - a < 0.002 for a, b in zip(last, now)):
            return
        last = now


def run(prog, args, env_add, daemons):
    """One run: (wall s from the program, app CPU s, [daemon CPU s],
    whole-run s, profiled cycles, registration ms, waits, [daemon CPU s
    while the program ran], [{thread: [CPU ns, switches]} per daemon])."""
    env = dict(os.environ)
    env.update(env_add)
    d0 = [cpu_seconds(p) for p in daemons]
    th0 = [thread_stats(p) for p in daemons]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = subprocess.run(pinned(["mpiexec", "-n", str(NP), prog] + args, 0),
                         capture_output=True, text=True, env=env, timeout=300)
    whole = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    dmid = [cpu_seconds(p) for p in daemons]
    if "LA_AGENT" in env_add:
        settle(daemons)
    d1 = [cpu_seconds(p) for p in daemons]
    th1 = [thread_stats(p) for p in daemons]
    threads = [{k: [v[0] - a.get(k, [0, 0])[0], v[1] - a.get(k, [0, 0])[1]]
                for k, v in b.items()} for a, b in zip(th0, th1)]
    m = WALL.search(out.stdout)
    if out.returncode != 0 or not m:
        raise SystemExit("bench-overhead: %s %s failed:\n%s%s" %
                         (prog, " ".join(args), out.stdout, out.stderr))
    app = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    prof, reg = PROFILED.search(out.stdout), REGISTER.search(out.stdout)
    waits = WAITS.search(out.stdout)
    return (float(m.group(1)), app, [b - a for a, b in zip(d0, d1)], whole,
            int(prof.group(1)) if prof else 0,
            float(reg.group(1)) if reg else 0.0,
            int(waits.group(1)) if waits else 0,
            [b - a for a, b in zip(d0, dmid)], threads)


def main():
    work = tempfile.mkdtemp(prefix="la-bench-overhead.")
    procs = []
    try:
        ga_prog = shlex.split(os.environ.get(
            "LA_BENCH_GLOBAL_A", os.path.join(BUILD, "bin", "la-globalagent")))
        ga_cmd = ga_prog + [
                  "--agents.listen=127.0.0.1:0",
                  "--agents.port_file=" + os.path.join(work, "gport"),
                  "--feed.listen=127.0.0.1:0",
                  "--store.path=" + os.path.join(work, "la.db"),
                  "--log.level=warn"]
        ga, gport = start(ga_cmd, os.path.join(work, "gport"), "globalagent",
                          work)
        procs.append(ga)
        la_cmd = [os.path.join(BUILD, "bin", "la-localagent"),
                  "--agent.listen=127.0.0.1:0",
                  "--agent.port_file=" + os.path.join(work, "lport"),
                  "--global.address=127.0.0.1:%d" % gport,
                  "--global.spool_dir=" + os.path.join(work, "spool"),
                  "--log.level=warn"] + os.environ.get(
                      "LA_BENCH_LOCALAGENT_OPTS", "").split()
        la, lport = start(la_cmd, os.path.join(work, "lport"), "localagent",
                          work)
        procs.append(la)
        agent = "127.0.0.1:%d" % lport
        agents = [("", agent, la, ga)]
        stores = {"": os.path.join(work, "la.db")}  # per tag
        if os.environ.get("LA_BENCH_AGENT_B") or os.environ.get(
                "LA_BENCH_GLOBAL_B"):
            gb, gbport = ga, gport
            if os.environ.get("LA_BENCH_GLOBAL_B"):
                gb_cmd = shlex.split(os.environ["LA_BENCH_GLOBAL_B"]) + [
                    a + "B" if a.startswith(("--agents.port_file=",
                                             "--store.path=")) else a
                    for a in ga_cmd[len(ga_prog):]]
                gb, gbport = start(gb_cmd, os.path.join(work, "gportB"),
                                   "globalagentB", work)
                procs.append(gb)
            lb_cmd = shlex.split(os.environ.get("LA_BENCH_AGENT_B",
                                                la_cmd[0])) + [
                "--global.address=127.0.0.1:%d" % gbport
                if a.startswith("--global.address=") else a
                for a in la_cmd[1:]]
            lb_cmd = [a + "B" if a.startswith(("--agent.port_file=",
                                                 "--global.spool_dir="))
                      else a for a in lb_cmd]
            lb, lbport = start(lb_cmd, os.path.join(work, "lportB"),
                               "localagentB", work)
            procs.append(lb)
            agents.append(("/B", "127.0.0.1:%d" % lbport, lb, gb))
            stores["/B"] = stores[""] + (
                "B" if os.environ.get("LA_BENCH_GLOBAL_B") else "")

        variants = []  # (program, key, args, env)
        for name, args in PROGRAMS.items():
            prog = os.path.join(BUILD, "examples", name)
            if not os.access(prog, os.X_OK):
                print("bench-overhead: %s not built, skipped" % name)
                continue
            variants.append((name, "none", prog, args + ["--no-la"], {}))
            if supports(prog, "--floor") and "floor" in PROBES:
                variants.append((name, "floor", prog, args + ["--floor"], {}))
            modes = PROBE_MODES if supports(prog, "--probe") else []
            for metric in METRICS:
                for period in PERIODS:
                    # CV changes only the agent's work: varied for the
                    # wall-time metric; PAPI runs at the default CV. Other
                    # probe modes: wall time, CV 0.1.
                    runs = [(cv, None) for cv in
                            (CVS if metric == "time" else [0.1])
                            if "cell" in PROBES]
                    if metric == "time":
                        runs += [(0.1, m) for m in modes]
                    for (cv, mode), (tag, addr, _, _) in [
                            (r, a) for r in runs for a in agents]:
                        key = "%s/p%d/cv%g" % (metric, period, cv)
                        extra = []
                        key += "/" + (mode or "cell") + tag
                        if mode:
                            extra = ["--probe", mode]
                        variants.append((name, key, prog, args + extra, {
                            "LA_AGENT": addr, "LA_METRIC": metric,
                            "LA_PERIOD": str(period),
                            "LA_COMPACT": "polyline:cv=%g" % cv,
                            "LA_APP_ID": "ovh-%s-%d" % (name, len(variants)),
                        }))
        # PAPI software events may be unavailable: probe once, drop if so.
        probe = None if len(METRICS) < 2 else subprocess.run(
            ["mpiexec", "-n", "1", variants[0][2]] + PROGRAMS[variants[0][0]]
            [:2] + ["--steps", "1"], capture_output=True, text=True,
            env=dict(os.environ, LA_AGENT=agent, LA_METRIC=METRICS[1]))
        if probe and "LA registered" not in probe.stdout:
            print("bench-overhead: %s unavailable here; skipped" % METRICS[1])
            variants = [v for v in variants if METRICS[1] not in v[1]]

        times = {(v[0], v[1]): [] for v in variants}
        cpu = {(v[0], v[1]): [] for v in variants}  # (app, la, ga) per run
        wholes = {(v[0], v[1]): [] for v in variants}
        extra = {(v[0], v[1]): [] for v in variants}  # (profiled, reg ms,
        #                                                  waits)
        during = {(v[0], v[1]): [] for v in variants}  # daemons' CPU s
        #                                   while the program ran (la, ga)
        per_thread = {(v[0], v[1]): [] for v in variants}  # per run:
        #                        {"LocalAgent la-lane": [CPU ns, switches]}
        # CPU of every daemon per run; a variant reports its own pair
        daemons = sorted({p.pid for a in agents for p in a[2:]})
        pair = {a[0]: (daemons.index(a[2].pid), daemons.index(a[3].pid))
                for a in agents}
        load0 = os.getloadavg()
        t_start = time.time()
        for rep in range(REPS):
            order = list(variants)
            random.Random(rep).shuffle(order)
            for name, key, prog, args, env in order:
                # an id of its own per run: a rerun under the same id
                # would be the GlobalAgent's duplicates, not new traces
                if "LA_APP_ID" in env:
                    env = dict(env, LA_APP_ID="%s-r%d" % (env["LA_APP_ID"],
                                                          rep))
                wall, app, dcpu, whole, prof, reg, waits, dmid, th = run(
                    prog, args, env, daemons)
                li, gi = pair["/B" if key.endswith("/B") else ""]
                dcpu = [dcpu[li], dcpu[gi]]  # the agents this variant used
                during[(name, key)].append([dmid[li], dmid[gi]])
                per_thread[(name, key)].append(dict(
                    [("LocalAgent " + k, v) for k, v in th[li].items()] +
                    [("GlobalAgent " + k, v) for k, v in th[gi].items()]))
                times[(name, key)].append(wall)
                wholes[(name, key)].append(whole)
                extra[(name, key)].append((prof, reg, waits))
                cpu[(name, key)].append([app] + dcpu)
        load1 = os.getloadavg()
        # the profiled rank-cycles each variant stored whole, stored coarse
        # (the LocalAgent behind) and recorded missing, from the stores
        stored = {}
        for (name, key) in times:
            app = [e for v in variants if (v[0], v[1]) == (name, key)
                   for e in [v[4].get("LA_APP_ID")] if e]
            if not app:
                continue
            tag = "/B" if key.endswith("/B") else ""
            try:
                db = sqlite3.connect("file:%s?mode=ro" % stores[tag],
                                     uri=True, timeout=30)
                like = app[0] + "-r%"
                q = [db.execute(sql, (like,)).fetchone()[0] for sql in (
                    "SELECT count(*) FROM traces WHERE app_id LIKE ?",
                    "SELECT count(*) FROM coarse WHERE app_id LIKE ?",
                    "SELECT count(*) FROM missing WHERE app_id LIKE ?")]
                db.close()
                stored[(name, key)] = {"traces": q[0], "coarse": q[1],
                                       "missing": q[2]}
            except sqlite3.Error as e:
                stored[(name, key)] = {"error": str(e)}

        def cpu_medians(k):
            runs = cpu[k]
            return {what: statistics.median(r[i] for r in runs)
                    for i, what in enumerate(("app", "localagent",
                                              "globalagent"))}

        result = {"ranks": NP, "reps": REPS, "pinned": bool(PIN),
                  "busy_node": BUSY, "cores": os.cpu_count(),
                  "seconds": round(time.time() - t_start, 1),
                  "loadavg_1min": [load0[0], load1[0]], "programs": {}}
        md = ["| program | metric | probe | period | CV | median s | "
              "overhead % | app CPU s | LocalAgent CPU s | GlobalAgent "
              "CPU s | whole run overhead % | LocalAgent ms per profiled "
              "cycle |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for name in PROGRAMS:
            if (name, "none") not in times:
                continue
            base = statistics.median(times[(name, "none")])
            wbase = statistics.median(wholes[(name, "none")])
            bcpu = cpu_medians((name, "none"))
            entry = {"baseline_s": base, "args": PROGRAMS[name],
                     "baseline_whole_s": wbase,
                     "baseline_cpu_s": bcpu, "configs": []}
            md.append("| %s | none (--no-la) | - | - | - | %.3f | 0 | %.3f "
                      "| %.3f | %.3f | 0 | - |" % (name, base, bcpu["app"],
                                            bcpu["localagent"],
                                            bcpu["globalagent"]))
            if (name, "floor") in times:
                fl = statistics.median(times[(name, "floor")])
                entry["floor_s"] = fl
                entry["floor_overhead_pct"] = 100 * (fl - base) / base
                fcpu = cpu_medians((name, "floor"))
                entry["floor_cpu_s"] = fcpu
                md.append("| %s | floor (2x rdtsc + store) | - | - | - | %.3f "
                          "| %.1f | %.3f | - | - | - | - |" % (
                              name, fl, entry["floor_overhead_pct"],
                              fcpu["app"]))
            for (pname, key), ts in sorted(times.items()):
                if pname != name or key in ("none", "floor"):
                    continue
                parts = key.split("/")
                metric, p, cv = parts[:3]
                mode = "/".join(parts[3:]) or "cell"
                med = statistics.median(ts)
                cc = cpu_medians((pname, key))
                wmed = statistics.median(wholes[(pname, key)])
                prof = statistics.median(e[0] for e in extra[(pname, key)])
                per = [r[1] / e[0] for r, e in zip(cpu[(pname, key)],
                                                   extra[(pname, key)])
                       if e[0] > 0]
                cfg = {"metric": metric, "period": int(p[1:]),
                       "cv": float(cv[2:]), "probe": mode, "median_s": med,
                       "overhead_pct": 100 * (med - base) / base,
                       "runs_s": ts, "cpu_s": cc,
                       "whole_s": wmed,
                       "whole_overhead_pct": 100 * (wmed - wbase) / wbase,
                       "profiled": prof,
                       "register_ms": statistics.median(
                           e[1] for e in extra[(pname, key)]),
                       "localagent_ms_per_cycle": 1e3 * statistics.median(
                           per) if per else None,
                       "waits": statistics.median(
                           e[2] for e in extra[(pname, key)]),
                       "cpu_runs_s": cpu[(pname, key)],
                       "stored_all_runs": stored.get((pname, key)),
                       "daemons_during_s": {
                           w: statistics.median(r[i] for r in during[(
                               pname, key)])
                           for i, w in enumerate(("localagent",
                                                  "globalagent"))}}
                # each daemon thread's CPU and context switches (wake-ups
                # and preemptions) per profiled rank-cycle, medians
                runs = [(r, e[0]) for r, e in zip(per_thread[(pname, key)],
                                                  extra[(pname, key)])
                        if e[0] > 0]
                if runs:
                    labels = sorted({k for r, _ in runs for k in r})
                    cfg["threads_per_cycle"] = {
                        k: {"cpu_ms": statistics.median(
                                r.get(k, [0, 0])[0] / 1e6 / n for r, n in runs),
                            "switches": statistics.median(
                                r.get(k, [0, 0])[1] / n for r, n in runs)}
                        for k in labels}
                n_arg = PROGRAMS[pname][PROGRAMS[pname].index("--n") + 1]
                if per and pname in CELLS:
                    # per profiled cycle of one rank: its cells
                    cfg["localagent_ns_per_cell"] = 1e9 * statistics.median(
                        per) * NP / CELLS[pname](int(n_arg))
                if "floor_overhead_pct" in entry and entry[
                        "floor_overhead_pct"] > 0:
                    cfg["ratio_to_floor"] = cfg["overhead_pct"] / entry[
                        "floor_overhead_pct"]
                entry["configs"].append(cfg)
                md.append("| %s | %s | %s | %s | %s | %.3f | %.1f | %.3f | "
                          "%.3f | %.3f | %.1f | %s |" %
                          (name, metric, mode, p[1:], cv[2:], med,
                           cfg["overhead_pct"], cc["app"], cc["localagent"],
                           cc["globalagent"], cfg["whole_overhead_pct"],
                           "%.3f" % cfg["localagent_ms_per_cycle"]
                           if per else "-"))
            result["programs"][name] = entry
        os.makedirs(os.path.dirname(OUT), exist_ok=True)
        with open(OUT, "w") as f:
            json.dump(result, f, indent=1)
        with open(os.path.splitext(OUT)[0] + ".md", "w") as f:
            f.write("\n".join(md) + "\n")
        print("overhead study: %d ranks, median of %d interleaved runs, "
              "%.0f s%s, load average %.1f -> %.1f" % (
                  NP, REPS, result["seconds"], ", pinned" if PIN else "",
                  load0[0], load1[0]))
        for name, e in result["programs"].items():
            print("  %s %s: baseline %.3f s loop, %.3f s whole run (app CPU "
                  "%.3f s)%s" % (
                name, " ".join(e["args"]), e["baseline_s"],
                e["baseline_whole_s"], e["baseline_cpu_s"]["app"],
                ", floor +%.1f%%" % e["floor_overhead_pct"]
                if "floor_overhead_pct" in e else ""))
            print("    %-24s %-12s %-10s %8s %8s   CPU s: app / LocalAgent / "
                  "GlobalAgent; LocalAgent ms per profiled cycle; "
                  "LA_registerGrid ms" % ("metric", "probe", "period", "loop",
                                          "whole"))
            for c in sorted(e["configs"], key=lambda c: (
                    c["metric"], c["probe"], c["period"])):
                if c["cv"] == 0.1:
                    print("    %-24s %-12s period %-3d %+7.1f%% %+7.1f%%   "
                          "%.3f / %.3f / %.3f; %s; %.1f%s" % (
                              c["metric"], c["probe"], c["period"],
                              c["overhead_pct"], c["whole_overhead_pct"],
                              c["cpu_s"]["app"],
                              c["cpu_s"]["localagent"],
                              c["cpu_s"]["globalagent"],
                              "%.3f ms (%.2f ns/cell), %d waits" % (
                                  c["localagent_ms_per_cycle"],
                                  c.get("localagent_ns_per_cell", 0),
                                  c["waits"])
                              if c["localagent_ms_per_cycle"] else "-",
                              c["register_ms"],
                              "  (%.2fx floor)" % c["ratio_to_floor"]
                              if "ratio_to_floor" in c else ""))
                st = c.get("stored_all_runs") or {}
                if BUSY and "traces" in st:
                    print("      stored in all runs: %d traces, %d of them "
                          "coarse, %d recorded missing" % (
                              st["traces"], st["coarse"], st["missing"]))
                if BUSY and c.get("threads_per_cycle"):
                    dd = c["daemons_during_s"]
                    print("      daemons' CPU while the program ran: "
                          "LocalAgent %.3f s, GlobalAgent %.3f s; per "
                          "profiled rank-cycle, by thread (CPU ms, context "
                          "switches):" % (dd["localagent"],
                                          dd["globalagent"]))
                    print("        " + "; ".join(
                        "%s %.3f, %.1f" % (k, t["cpu_ms"], t["switches"])
                        for k, t in sorted(c["threads_per_cycle"].items())
                        if t["cpu_ms"] >= 0.001 or t["switches"] >= 0.1))
        print("wrote %s and %s" % (OUT, os.path.splitext(OUT)[0] + ".md"))
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, 15)
                p.wait(timeout=10)
            except Exception:
                try:
                    os.killpg(p.pid, 9)
                except Exception:
                    pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
