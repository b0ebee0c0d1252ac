#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""run_blocks.py: the documentation's commands and code, run as written.

Run by tests/unit/test_docs.c (from the source tree) as

    run_blocks.py blocks  SRC BUILD   # the marked blocks of README.md, docs/*.md
    run_blocks.py configs SRC BUILD   # packaging/*.conf against the daemons
    run_blocks.py man     SRC BUILD   # --help options and settings in man/*.scd

and exits 0 when everything holds, 1 after naming each failure (file:line).

Markers: the info string of a fenced block says what the test does with it
(docs/testing.md, "Documentation that runs"):

    ```sh run       run with bash -e in a fresh scratch directory, the
                    build's bin/ first on PATH; it must exit 0
    ```sh cluster   needs a cluster, root or files the test does not have:
                    only parsed (bash -n)
    ```c compile    a whole C program: compiled and linked against the
                    build's libla_client and libla (not run)

Any other block (```sh, ```c, ```text, ...) is not touched, so blocks may
be added freely. In a `sh run` block the ports 7461, 7462 and 7463 (the
LocalAgent, the GlobalAgent's agents port and its feed) are replaced by
free ephemeral ports, the same ones throughout the block; after a line
that starts a program in the background (ending in `&`), the block waits
up to 10 s until the ports that line names accept connections. Every
process a block started is killed when it ends (it runs in its own
session), and it has 60 s.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)```(\S*)\s*(\S*)\s*$")
PORTS = ("7461", "7462", "7463")


def blocks_of(path):
    """Yields (lang, marker, first_line, text) of every fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, marker = m.group(1), m.group(2), m.group(3)
        start = i + 1
        j = start
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l
                for l in lines[start:j]]
        yield lang, marker, start + 1, "\n".join(body) + "\n"
        i = j + 1


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(str(s.getsockname()[1]))
    for s in socks:
        s.close()
    return ports


def logical_lines(text):
    out, cur = [], ""
    for line in text.split("\n"):
        if line.endswith("\\"):
            cur += line + "\n"
            continue
        out.append(cur + line)
        cur = ""
    if cur:
        out.append(cur)
    return out


BG = re.compile(r"(?<!&)&\s*(#.*)?$")
WAIT = r'''__la_wait() {  # __la_wait PORT...: until each accepts, at most 10 s
  local p i
  for p in "$@"; do
    for i in $(seq 100); do
      (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break
      sleep 0.1
    done
  done
}
'''


def prepare(text):
    """The block as bash runs it: ports substituted, waits inserted."""
    new = dict(zip(PORTS, free_ports(len(PORTS))))
    text = re.sub(r"\b(746[123])\b", lambda m: new[m.group(1)], text)
    out = [WAIT]
    for line in logical_lines(text):
        out.append(line)
        if BG.search(line.split("\n")[-1]):
            ports = [p for p in new.values() if re.search(r"\b%s\b" % p, line)]
            out.append("__la_wait %s" % " ".join(ports) if ports else "sleep 1")
    return "\n".join(out) + "\n"


def run_sh(text, bindir):
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    for k in ("LA_AGENT", "LA_GLOBAL", "LA_COMPACT"):
        env.pop(k, None)
    with tempfile.TemporaryDirectory(prefix="la-docs-") as d:
        script = os.path.join(d, "block.sh")
        open(script, "w").write(prepare(text))
        log = open(os.path.join(d, "block.log"), "wb+")
        # output to a file: daemons the block leaves running keep it open
        p = subprocess.Popen(["bash", "-e", "-o", "pipefail", script],
                             cwd=d, env=env, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = -1
        # everything the block left running: TERM, then KILL
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            for _ in range(50):
                try:
                    os.killpg(p.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                continue
            break
        if rc == -1:
            p.wait()
        log.seek(0)
        out = log.read().decode(errors="replace")
        log.close()
        if rc == -1:
            out += "(timed out after 60 s)\n"
        return rc, out


def compile_c(text, build):
    with tempfile.TemporaryDirectory(prefix="la-docs-") as d:
        src = os.path.join(d, "block.c")
        open(src, "w").write(text)
        lib = os.path.join(build, "lib")
        cmd = ["cc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall",
               "-Werror", "-I" + os.path.join(build, "include"), src, "-o",
               os.path.join(d, "block"), os.path.join(lib, "libla_client.a"),
               os.path.join(lib, "libla.a"), "-lprotobuf-c", "-lpapi",
               "-lpthread", "-lm"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        return p.returncode, p.stdout.decode(errors="replace")


def doc_files(src):
    files = [os.path.join(src, "README.md")]
    d = os.path.join(src, "docs")
    files += sorted(os.path.join(d, f) for f in os.listdir(d)
                    if f.endswith(".md"))
    return files


def cmd_blocks(src, build):
    bindir = os.path.abspath(os.path.join(build, "bin"))
    bad = counts = 0
    tally = {"run": 0, "cluster": 0, "compile": 0}
    for f in doc_files(src):
        rel = os.path.relpath(f, src)
        for lang, marker, line, text in blocks_of(f):
            where = "%s:%d" % (rel, line)
            if lang == "sh" and marker == "run":
                rc, out = run_sh(text, bindir)
            elif lang == "sh" and marker == "cluster":
                p = subprocess.run(["bash", "-n"], input=text.encode(),
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
                rc, out = p.returncode, p.stdout.decode(errors="replace")
            elif lang == "c" and marker == "compile":
                rc, out = compile_c(text, build)
            elif marker in ("run", "cluster", "compile"):
                print("%s: marker '%s' is not for ```%s (sh run, sh cluster, "
                      "c compile)" % (where, marker, lang))
                bad += 1
                continue
            else:
                continue
            tally[marker] += 1
            counts += 1
            status = "ok" if rc == 0 else "FAILED (exit %d)" % rc
            print("%s: ```%s %s: %s" % (where, lang, marker, status))
            if rc != 0:
                bad += 1
                print("  " + out.rstrip().replace("\n", "\n  "))
    print("blocks: %d run, %d parsed, %d compiled, %d failed"
          % (tally["run"], tally["cluster"], tally["compile"], bad))
    if tally["run"] == 0:
        print("no ```sh run block found: the markers are gone?")
        return 1
    return 1 if bad else 0


def effective(daemon, args):
    """The daemon's --check-config output as {section.key: value}."""
    p = subprocess.run([daemon] + args + ["--check-config"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    cfg, sec = {}, ""
    for line in p.stdout.decode().split("\n"):
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            sec = m.group(1)
        m = re.match(r"^(\w+) = ?(.*)$", line)
        if m and sec:
            cfg[sec + "." + m.group(1)] = m.group(2)
    return p.returncode, cfg, p.stdout.decode()


# Settings --check-config verifies on this machine (a directory that only
# an installation creates): pinned to a scratch value in every run, and the
# sample's text compared with the default --help prints instead.
PINNED = {"la-globalagent": {"store.path": "la.db",
                              "agents.secret_file": "secret"},
          "la-localagent": {"global.secret_file": "secret"}}


def help_defaults(daemon):
    p = subprocess.run([daemon, "--help"], stdout=subprocess.PIPE)
    # a setting's help may wrap onto lines indented past the option column
    text = re.sub(r"\n {20,}", " ", p.stdout.decode())
    return dict(re.findall(r"--([a-z_]+\.[a-z_]+)=VALUE\s.*\(default: ([^)]*)\)$",
                           text, re.M))


def cmd_configs(src, build):
    bad = 0
    scratch = tempfile.mkdtemp(prefix="la-docs-")
    subprocess.run([os.path.join(build, "bin", "lactl"), "secret",
                    os.path.join(scratch, "secret")], stdout=subprocess.DEVNULL)
    for name in ("la-localagent", "la-globalagent"):
        conf = os.path.join(src, "packaging", name + ".conf")
        daemon = os.path.join(build, "bin", name)
        pinned = PINNED.get(name, {})
        pin = ["--%s=%s" % (k, os.path.join(scratch, v))
               for k, v in pinned.items()]
        rc, defaults, out = effective(daemon, pin)
        if rc != 0 or not defaults:
            print("%s --check-config failed:\n%s" % (name, out))
            return 1
        hdef = help_defaults(daemon)
        for k in pinned:
            sec, key = k.split(".")
            m = re.search(r"^\[%s\]\n((?:^(?!\[).*\n)*?)^%s\s*=[ \t]*(.*?)\s*$"
                          % (sec, key), open(conf).read(), re.M)
            said = re.findall(r"\(default: ([^)]*)\)",
                              m.group(1).split("\n\n")[-1]) if m else []
            ok = m and (m.group(2) == hdef.get(k) or
                        (said and said[-1] == hdef.get(k)))
            if not ok:
                print("%s: %s = %r, the default is %r and no '(default: "
                      "...)' comment above it says so"
                      % (os.path.relpath(conf, src), k,
                         m.group(2) if m else None, hdef.get(k)))
                bad += 1
        rc, sample, out = effective(daemon, ["-c", conf] + pin)
        if rc != 0:
            print("%s: refused by %s:\n%s" % (conf, name, out))
            bad += 1
            continue
        # the keys the file sets, with the comment lines right above each
        sec, above, keys = "", [], {}
        for n, line in enumerate(open(conf).read().split("\n"), 1):
            m = re.match(r"^\[(\w+)\]", line)
            if m:
                sec, above = m.group(1), []
                continue
            if line.startswith("#"):
                above.append(line)
                continue
            m = re.match(r"^(\w+)\s*=", line)
            if m:
                keys[sec + "." + m.group(1)] = (n, above)
            above = []
        rel = os.path.relpath(conf, src)
        for k in sorted(set(defaults) - set(keys)):
            print("%s: %s (default %r) is missing from the sample"
                  % (rel, k, defaults[k]))
            bad += 1
        for k in sorted(set(keys) - set(defaults)):
            print("%s:%d: %s is not a setting of %s" % (rel, keys[k][0], k,
                                                         name))
            bad += 1
        for k in sorted(set(keys) & set(defaults)):
            if sample.get(k) == defaults[k]:
                continue
            n, above = keys[k]
            stated = None
            for c in above:
                m = re.search(r"\(default: ([^)]*)\)", c)
                if m:
                    stated = m.group(1).strip()
            if stated is None:
                print("%s:%d: %s = %r is not the default %r, and no "
                      "'(default: ...)' comment above it says so"
                      % (rel, n, k, sample.get(k), defaults[k]))
                bad += 1
                continue
            value = "" if stated == "none" else stated
            _, norm, _ = effective(daemon, pin + ["--%s=%s" % (k, value)])
            if norm.get(k) != defaults[k]:
                print("%s:%d: %s: the comment says '(default: %s)', the "
                      "default is %r" % (rel, n, k, stated, defaults[k]))
                bad += 1
        print("%s: %d keys, %d set to other than the default (each says so)"
              % (rel, len(keys),
                 sum(1 for k in keys if sample.get(k) != defaults.get(k))))
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if bad else 0


def help_options(lactl, cmd):
    p = subprocess.run([lactl] + ([cmd] if cmd else []) + ["--help"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", p.stdout.decode()))


def cmd_man(src, build):
    lactl = os.path.join(build, "bin", "lactl")
    page = os.path.join(src, "man", "lactl.1.scd")
    text = open(page).read()
    p = subprocess.run([lactl, "--help"], stdout=subprocess.PIPE)
    cmds = re.findall(r"^  (\w+)\s", p.stdout.decode(), re.M)
    bad = 0
    if not cmds:
        print("lactl --help lists no command")
        return 1
    for c in cmds:
        if not re.search(r"\*%s\*" % c, text):
            print("man/lactl.1.scd: command %s (in lactl --help) is not "
                  "described" % c)
            bad += 1
        for o in sorted(help_options(lactl, c)):
            if o not in text.replace("\\-", "-"):
                print("man/lactl.1.scd: lactl %s %s (in its --help) is "
                      "missing" % (c, o))
                bad += 1
    for d, sec in (("la-localagent", 8), ("la-globalagent", 8)):
        page = os.path.join(src, "man", "%s.%d.scd" % (d, sec))
        text = open(page).read()
        p = subprocess.run([os.path.join(build, "bin", d), "--help"],
                           stdout=subprocess.PIPE)
        for k in re.findall(r"--([a-z_]+\.[a-z_]+)=VALUE", p.stdout.decode()):
            if "*%s*" % k not in text:
                print("man/%s.%d.scd: setting %s (in %s --help) is missing"
                      % (d, sec, k, d))
                bad += 1
    # la-replay's options in its page (an MPI program: --help runs as a
    # singleton without mpiexec)
    replay = os.path.join(build, "bin", "la-replay")
    if os.access(replay, os.X_OK):
        text = open(os.path.join(src, "man", "la-replay.1.scd")).read()
        p = subprocess.run([replay, "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)",
                              p.stdout.decode()))
        if not opts:
            print("la-replay --help names no option")
            bad += 1
        for o in sorted(opts):
            if "*%s*" % o not in text:
                print("man/la-replay.1.scd: %s (in la-replay --help) is "
                      "missing" % o)
                bad += 1
    # the bash completion offers every option of each command
    comp = os.path.join(src, "packaging", "bash-completion", "lactl")
    for c in cmds:
        script = ("source '%s'; COMP_WORDS=(lactl %s -); COMP_CWORD=2; "
                  "_lactl; echo \"${COMPREPLY[*]}\"" % (comp, c))
        p = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        offered = set(p.stdout.decode().split())
        for o in sorted(help_options(lactl, c) - offered):
            print("%s: lactl %s %s (in its --help) is not completed"
                  % (os.path.relpath(comp, src), c, o))
            bad += 1
    # every LA_ function of the public header in libla(3)
    text = open(os.path.join(src, "man", "libla.3.scd")).read()
    header = re.sub(r"/\*.*?\*/|//[^\n]*", "",
                    open(os.path.join(src, "libla", "la.h")).read(), flags=re.S)
    for fn in sorted(set(re.findall(r"\b(LA_[A-Za-z][A-Za-z_]*)\s*\(",
                                    header))):
        if "*%s*" % fn not in text:
            print("man/libla.3.scd: %s (libla/la.h) is not described" % fn)
            bad += 1
    print("man: lactl's %d commands, their completion, both daemons' "
          "settings, la-replay's options and libla's functions checked, "
          "%d missing" %
          (len(cmds), bad))
    return 1 if bad else 0


def main(argv):
    if len(argv) != 4 or argv[1] not in ("blocks", "configs", "man"):
        print(__doc__)
        return 2
    src, build = argv[2], argv[3]
    return {"blocks": cmd_blocks, "configs": cmd_configs,
            "man": cmd_man}[argv[1]](src, build)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
