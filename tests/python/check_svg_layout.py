# SPDX-License-Identifier: BSD-3-Clause
"""check_svg_layout.py: the text of a `lactl plot` SVG fits in its picture.
Run by test_lactl with /usr/bin/python3:
    check_svg_layout.py FILE.svg [--need-note]
Estimates each <text>'s extent as lactl does (0.6 em per character, the
font size its own or inherited, the anchor; rotate(-90 ...) turns it
upright) and checks:
  - every text element lies inside the viewBox;
  - the legend (<g class="legend">: its lines, marks and labels) does not
    intersect the note on clipped values (<text class="note">);
  - with --need-note, the picture has such a note (else there is nothing
    to check it against).
Prints each problem, then "svg layout: OK" or exits 1.
"""
import re
import sys
import xml.dom.minidom as M

doc = M.parse(sys.argv[1])
root = doc.documentElement
vb = [float(v) for v in root.getAttribute("viewBox").split()] or [
    0, 0, float(root.getAttribute("width")), float(root.getAttribute("height"))]
problems = []


def font(el):
    while el is not None and el.nodeType == el.ELEMENT_NODE:
        if el.getAttribute("font-size"):
            return float(el.getAttribute("font-size"))
        el = el.parentNode
    return 16.0


def text_box(t):
    s = "".join(n.data for n in t.childNodes if n.nodeType == n.TEXT_NODE)
    fs = font(t)
    w = 0.6 * fs * len(s)
    x, y = float(t.getAttribute("x")), float(t.getAttribute("y"))
    a = t.getAttribute("text-anchor") or "start"
    x0 = x - w / 2 if a == "middle" else x - w if a == "end" else x
    box = (x0, y - 0.8 * fs, x0 + w, y + 0.2 * fs)
    m = re.search(r"rotate\(\s*(-?90)[ ,]+([-\d.]+)[ ,]+([-\d.]+)",
                  t.getAttribute("transform"))
    if m:  # a quarter turn about (cx, cy): x offsets become y offsets
        cx, cy = float(m.group(2)), float(m.group(3))
        sign = -1 if m.group(1) == "-90" else 1
        xs = [cx - sign * (b - cy) for b in (box[1], box[3])]
        ys = [cy + sign * (b - cx) for b in (box[0], box[2])]
        box = (min(xs), min(ys), max(xs), max(ys))
    return s, box


def inside(b):
    return (b[0] >= vb[0] and b[1] >= vb[1] and b[2] <= vb[0] + vb[2]
            and b[3] <= vb[1] + vb[3])


def union(a, b):
    return b if a is None else (min(a[0], b[0]), min(a[1], b[1]),
                                max(a[2], b[2]), max(a[3], b[3]))


for t in doc.getElementsByTagName("text"):
    s, b = text_box(t)
    if not inside(b):
        problems.append("text %r (estimated %s) leaves the viewBox %s"
                        % (s, tuple(round(v, 1) for v in b), vb))

legend = None
for g in doc.getElementsByTagName("g"):
    if g.getAttribute("class") != "legend":
        continue
    for el in g.getElementsByTagName("*"):
        if el.tagName == "text":
            legend = union(legend, text_box(el)[1])
        elif el.tagName == "line":
            xs = [float(el.getAttribute(k)) for k in ("x1", "x2")]
            ys = [float(el.getAttribute(k)) for k in ("y1", "y2")]
            legend = union(legend, (min(xs), min(ys) - 1, max(xs), max(ys) + 1))
        elif el.tagName == "circle":
            cx, cy, r = (float(el.getAttribute(k)) for k in ("cx", "cy", "r"))
            legend = union(legend, (cx - r, cy - r, cx + r, cy + r))
        elif el.tagName == "path":
            m = re.match(r"M\s*([-\d.]+)[ ,]+([-\d.]+)", el.getAttribute("d"))
            x, y = float(m.group(1)), float(m.group(2))
            legend = union(legend, (x - 4, y - 7, x + 4, y + 1))
notes = [t for t in doc.getElementsByTagName("text")
         if t.getAttribute("class") == "note"]
if "--need-note" in sys.argv[2:] and not notes:
    problems.append("no note on clipped values (class=\"note\")")
if legend is None:
    problems.append("no legend (<g class=\"legend\">)")
for t in notes:
    s, b = text_box(t)
    if legend and b[0] < legend[2] and legend[0] < b[2] and \
            b[1] < legend[3] and legend[1] < b[3]:
        problems.append("the note %r %s intersects the legend %s"
                        % (s, tuple(round(v, 1) for v in b),
                           tuple(round(v, 1) for v in legend)))
for p in problems:
    print(p)
if problems:
    sys.exit(1)
print("svg layout: OK")
