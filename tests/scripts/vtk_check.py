#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""vtk_check.py: reads a VTK file written by `lactl export --format vtk`
with VTK's own reader (Debian's python3-vtk9) and checks it against what a
test expects; run by tests/unit/test_vtk.c.

Usage: vtk_check.py FILE.vtk EXPECTED

EXPECTED holds lines:
  grid NX NY NZ        image data of NX x NY x NZ cells
  cells N              unstructured data of N cells
  arrays NAME...       the cell arrays, exactly these (any order)
  v NAME INDEX VALUE   cell INDEX of array NAME is VALUE ("nan": not a number)
Prints "vtk_check: OK" and exits 0, or prints what differs and exits 1.
"""
import math
import sys

import vtk


def fail(msg):
    print("vtk_check: " + msg)
    sys.exit(1)


def main():
    path, spec = sys.argv[1], sys.argv[2]
    reader = vtk.vtkDataSetReader()
    reader.SetFileName(path)
    reader.ReadAllScalarsOn()
    reader.Update()
    data = reader.GetOutput()
    if data is None:
        fail("no dataset in " + path)
    cd = data.GetCellData()
    names = sorted(cd.GetArrayName(i) for i in range(cd.GetNumberOfArrays()))
    checked = 0
    for line in open(spec):
        w = line.split()
        if not w:
            continue
        if w[0] == "grid":
            if not data.IsA("vtkImageData"):
                fail("not image data: " + data.GetClassName())
            want = [int(x) + 1 for x in w[1:4]]
            if list(data.GetDimensions()) != want:
                fail("dimensions %s, expected %s" % (data.GetDimensions(), want))
        elif w[0] == "cells":
            if data.GetNumberOfCells() != int(w[1]):
                fail("%d cells, expected %s" % (data.GetNumberOfCells(), w[1]))
        elif w[0] == "arrays":
            if names != sorted(w[1:]):
                fail("arrays %s, expected %s" % (names, sorted(w[1:])))
        elif w[0] == "v":
            a = cd.GetArray(w[1])
            if a is None:
                fail("no array " + w[1])
            got = a.GetValue(int(w[2]))
            want = float(w[3])
            same = (math.isnan(got) and math.isnan(want)) or got == want
            if not same:
                fail("%s[%s] = %r, expected %r" % (w[1], w[2], got, want))
            checked += 1
    print("vtk_check: OK (%d values)" % checked)


if __name__ == "__main__":
    main()
