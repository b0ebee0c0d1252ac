# SPDX-License-Identifier: BSD-3-Clause
"""check_markdown.py: the Markdown of README.md and docs/*.md renders as
written. Run by test_docs with Debian's /usr/bin/python3:
    check_markdown.py FILE...
Checks, per file, what breaks rendering silently:
  - every code fence (``` or ~~~, three or more) is closed;
  - a closing fence's line holds nothing but the fence (text after it
    turns the rest of the page into code);
  - a table (a header row and a |---| row) is not broken by a blank line
    between rows (the rows after it render as a paragraph of pipes);
  - every relative link ([text](path#anchor), outside code) names a file
    that exists and, in a Markdown file, a heading that exists (GitHub's
    anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2 for
    repeats);
  - docs/overview.md, the entry point, links every page of docs/.
Prints each problem as FILE:LINE: message, then "markdown: OK" or exits 1.
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def slug(heading):
    """The anchor GitHub gives a heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def prose(path, code=False):
    """(line number, line) of a file outside its code fences, inline code
    removed unless code."""
    fence = None
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        m = FENCE.match(line)
        if m and (fence is None or m.group(1)[0] == fence):
            fence = m.group(1)[0] if fence is None else None
            continue
        if fence is None:
            yield n, line if code else re.sub(r"`[^`]*`", "", line)


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, out = {}, set()
        for _, line in prose(path, code=True):
            m = HEADING.match(line)
            if m:
                s = slug(m.group(1))
                k = seen.get(s, 0)
                seen[s] = k + 1
                out.add(s if k == 0 else "%s-%d" % (s, k))
        _anchors[path] = out
    return _anchors[path]


def check_links(path):
    problems, targets = [], set()
    for n, line in prose(path):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) \
                if file else path
            targets.add(dest)
            if not os.path.exists(dest):
                problems.append("%s:%d: link to %s: no such file" % (path, n, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append("%s:%d: link to %s: no such heading in %s"
                                % (path, n, target, dest))
    return problems, targets

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
DELIM = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def check(path):
    problems = []
    lines = open(path, encoding="utf-8").read().split("\n")
    fence = None  # (char, length, opening line number)
    table_end = None  # line number of the last row of the table above
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]:
                if m.group(2).strip():
                    problems.append("%s:%d: text after the closing fence "
                                    "(opened at line %d): %r"
                                    % (path, n, fence[2], m.group(2).strip()))
                fence = None
            elif line.lstrip().startswith(fence[0] * 3) and line.strip(
                    fence[0] + " \t"):
                problems.append("%s:%d: a fence with text after it inside "
                                "the block opened at line %d" % (path, n, fence[2]))
            continue
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            # (a backtick fence's info string has no backtick: CommonMark)
            fence = (m.group(1)[0], len(m.group(1)), n)
            table_end = None
            continue
        if DELIM.match(line) and n > 1 and lines[n - 2].lstrip().startswith("|"):
            table_end = n
        elif table_end is not None:
            if line.lstrip().startswith("|"):
                table_end = n
            elif not line.strip():
                nxt = lines[n] if n < len(lines) else ""
                if nxt.lstrip().startswith("|") and not (
                        n + 1 < len(lines) and DELIM.match(lines[n + 1])):
                    problems.append("%s:%d: a blank line inside the table "
                                    "whose rows end at line %d" % (path, n, table_end))
                table_end = None
            else:
                table_end = None
    if fence:
        problems.append("%s:%d: code fence never closed" % (path, fence[2]))
    return problems


problems = []
for f in sys.argv[1:]:
    problems += check(f)
    link_problems, targets = check_links(f)
    problems += link_problems
    if os.path.normpath(f) == os.path.join("docs", "overview.md"):
        for page in sorted(glob.glob(os.path.join(os.path.dirname(f), "*.md"))):
            page = os.path.normpath(page)
            if page != os.path.normpath(f) and page not in targets:
                problems.append("%s: the entry point does not link %s"
                                % (f, page))
for p in problems:
    print(p)
if problems:
    sys.exit(1)
print("markdown: OK")
