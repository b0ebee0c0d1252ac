# SPDX-License-Identifier: BSD-3-Clause
"""check_markdown.py: the Markdown of README.md and docs/*.md renders as
written. Run by test_docs with Debian's /usr/bin/python3:
    check_markdown.py FILE...
Checks, per file, what breaks rendering silently:
  - every code fence (``` or ~~~, three or more) is closed;
  - a closing fence's line holds nothing but the fence (text after it
    turns the rest of the page into code);
  - a table (a header row and a |---| row) is not broken by a blank line
    between rows (the rows after it render as a paragraph of pipes).
Prints each problem as FILE:LINE: message, then "markdown: OK" or exits 1.
"""
import re
import sys

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


problems = [p for f in sys.argv[1:] for p in check(f)]
for p in problems:
    print(p)
if problems:
    sys.exit(1)
print("markdown: OK")
