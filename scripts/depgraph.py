#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""depgraph.py: the file-level call graph of each component, its cycles,
and the edges between components that point the wrong way.

Reads the object files of each component (build/obj/COMPONENT/*.o for
wire, compact, daemon, store, libla, client, tools, localagent and
globalagent)
with nm: a file
that leaves a symbol undefined which another file of the same component
defines calls (or reads) that file. Prints one line per file with the files it uses, then
every cycle (strongly connected set of files). A call through a function
pointer (a callback the owner registered) is not a link-time reference, so
it does not appear: such a reverse edge is explicit in the interface struct
that carries it, not hidden in the graph.

Between components, the layers (LAYERS below) say who may use whom:
wire (codec, validation, sockets, errors, the shared-memory layout) uses
no other component; compact (the compaction engine) and daemon (the daemon
framework) use wire; store (the GlobalAgent's store and its query
answers) uses those three; libla and client use wire and compact;
localagent uses wire, compact and daemon, globalagent those and store;
tools (lactl) use wire, compact, daemon (the shared secret), client and
store; replay (la-replay, an MPI application profiled by libla that reads
recorded runs as lactl does: from the feed through client, or offline
from a store file through store) uses wire, compact, libla, client and
store, and nothing uses it. replay is built only where an MPI compiler
is (and not in the sanitized trees): its objects are checked when
BUILD_DIR/obj/replay exists. An edge the layers do not allow fails, whether it is a
symbol one component's object takes from another's (nm) or a header it
includes (the compiler's dependency file, COMPONENT/*.d): printed as
"UPWARD: FILE uses COMPONENT/FILE (SYMBOL or header)".

Usage: scripts/depgraph.py [--symbols] [BUILD_DIR]   (default: build)
  --symbols  name the symbols behind each edge
Exits 0 when no component has a cycle and no edge points the wrong way, 1
otherwise, 2 on errors (objects missing: run `make -j2 all` first).
"""
import os
import subprocess
import sys

COMPONENTS = ("wire", "compact", "daemon", "store", "libla", "client",
              "tools", "localagent", "globalagent", "replay")
# Components whose objects may be absent (built only with an MPI compiler).
OPTIONAL = ("replay",)
# The components each component may use (besides itself).
LAYERS = {
    "wire": set(),
    "compact": {"wire"},
    "daemon": {"wire"},
    "libla": {"wire", "compact"},
    "client": {"wire", "compact"},
    "store": {"wire", "compact", "daemon"},
    "localagent": {"wire", "compact", "daemon"},
    "globalagent": {"wire", "compact", "daemon", "store"},
    "tools": {"wire", "compact", "daemon", "client", "store"},
    "replay": {"wire", "compact", "libla", "client", "store"},
}


def present(build):
    """The components whose objects are in build (the optional ones only
    when built)."""
    return [c for c in COMPONENTS
            if c not in OPTIONAL or os.path.isdir(os.path.join(build, "obj", c))]


# (defined, undefined) of each object file read so far: every object is
# read once, and the objects of a tree by one nm run (load_symbols), not one
# nm process per object and per pass (three passes: on a loaded machine the
# processes' start-up was nearly all of the time).
_SYMBOLS = {}


def load_symbols(objs):
    """Reads the symbols of the object files objs (paths) with one nm run
    (-A: each line names its file) into _SYMBOLS."""
    objs = [o for o in objs if o not in _SYMBOLS]
    if not objs:
        return
    out = subprocess.run(["nm", "-A", "--"] + objs, check=True,
                         capture_output=True, text=True).stdout
    found = {o: (set(), set()) for o in objs}
    for line in out.splitlines():
        # "FILE.o:VALUE TYPE NAME" or "FILE.o:  U NAME" (FILE one of objs)
        at = line.rfind(".o:")  # a C symbol holds no ".o:"
        if at < 0 or line[:at + 2] not in found:
            raise RuntimeError("nm: unexpected line: " + line)
        defined, undefined = found[line[:at + 2]]
        parts = line[at + 3:].split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1].isupper():
            defined.add(parts[2])
    _SYMBOLS.update(found)


def symbols(obj):
    """Returns (defined, undefined) symbol name sets of one object file."""
    load_symbols([obj])
    return _SYMBOLS[obj]


def graph(objdir):
    """Returns {file: {used file: [symbols]}} for the objects in objdir."""
    objs = sorted(f for f in os.listdir(objdir) if f.endswith(".o"))
    syms = {f[:-2] + ".c": symbols(os.path.join(objdir, f)) for f in objs}
    owner = {}
    for name, (defined, _) in syms.items():
        for s in defined:
            owner[s] = name
    edges = {name: {} for name in syms}
    for name, (_, undefined) in syms.items():
        for s in sorted(undefined):
            to = owner.get(s)
            if to and to != name:
                edges[name].setdefault(to, []).append(s)
    return edges


def owners(build):
    """Returns {symbol: (component, file)} over every component's objects."""
    own = {}
    for comp in present(build):
        objdir = os.path.join(build, "obj", comp)
        for f in sorted(os.listdir(objdir)):
            if f.endswith(".o"):
                defined, _ = symbols(os.path.join(objdir, f))
                for s in defined:
                    own.setdefault(s, (comp, f[:-2] + ".c"))
    return own


def headers(depfile):
    """The files a compiler dependency file (.d) names as prerequisites of
    its object, as normalized paths."""
    text = open(depfile, encoding="utf-8").read().replace("\\\n", " ")
    first = text.split("\n", 1)[0]
    if ":" not in first:
        return []
    return [os.path.normpath(p) for p in first.split(":", 1)[1].split()]


def upward(build):
    """Lines naming every edge between components that LAYERS forbids."""
    own = owners(build)
    out = []
    for comp in present(build):
        objdir = os.path.join(build, "obj", comp)
        allowed = LAYERS[comp] | {comp}
        for f in sorted(os.listdir(objdir)):
            src = f"{comp}/{f[:-2]}.c"
            if f.endswith(".o"):
                _, undefined = symbols(os.path.join(objdir, f))
                for s in sorted(undefined):
                    to = own.get(s)
                    if to and to[0] not in allowed:
                        out.append(f"UPWARD: {src} uses {to[0]}/{to[1]} "
                                   f"({s}); {comp} may use "
                                   f"{', '.join(sorted(LAYERS[comp])) or 'nothing'}")
            elif f.endswith(".d"):
                for h in headers(os.path.join(objdir, f)):
                    top = h.split(os.sep)[0]
                    if top in COMPONENTS and top not in allowed:
                        out.append(f"UPWARD: {src} includes {h}; {comp} may "
                                   f"use {', '.join(sorted(LAYERS[comp])) or 'nothing'}")
    return out


def cycles(edges):
    """Tarjan's strongly connected components with more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main(argv):
    show = "--symbols" in argv
    args = [a for a in argv if a != "--symbols"]
    if any(a.startswith("-") for a in args) or len(args) > 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = args[0] if args else "build"
    bad = 0
    objs = []
    for d in present(build):
        objdir = os.path.join(build, "obj", d)
        if os.path.isdir(objdir):
            objs += [os.path.join(objdir, f) for f in sorted(os.listdir(objdir))
                     if f.endswith(".o")]
    load_symbols(objs)
    for d in present(build):
        objdir = os.path.join(build, "obj", d)
        if not os.path.isdir(objdir):
            print(f"depgraph: {objdir}: no objects (make -j2 all)",
                  file=sys.stderr)
            return 2
        edges = graph(objdir)
        print(f"{d}: file -> files it calls")
        for name in sorted(edges):
            uses = sorted(edges[name])
            print(f"  {name:12} -> {', '.join(uses) if uses else '-'}")
            if show:
                for to in uses:
                    print(f"      {to}: {' '.join(edges[name][to])}")
        cyc = cycles(edges)
        for comp in cyc:
            print(f"  CYCLE: {' <-> '.join(comp)}")
        if not cyc:
            print("  no cycles")
        bad |= bool(cyc)
    up = upward(build)
    print("between components (layers: "
          + "; ".join(f"{c} -> {', '.join(sorted(LAYERS[c])) or '-'}"
                      for c in COMPONENTS) + ")")
    for line in up:
        print(f"  {line}")
    if not up:
        print("  no edge points the wrong way")
    return 1 if bad or up else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
