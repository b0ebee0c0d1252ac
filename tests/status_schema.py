#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""status_schema.py: validates JSON documents against a JSON Schema, with
Debian's python3-jsonschema (tests/python/la_schema.py).

usage: status_schema.py SCHEMA FILE...   (each FILE one JSON document)
Exit 0 when every document is valid, 1 with the reasons otherwise, 2 on
usage errors. Run by tests/unit/test_metrics.c with /usr/bin/python3 on
docs/schema/status.schema.json.
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "python"))
import la_schema  # noqa: E402


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    bad = 0
    for name in argv[2:]:
        with open(name) as f:
            try:
                doc = json.load(f)
            except ValueError as e:
                print("%s: not JSON: %s" % (name, e))
                bad = 1
                continue
        for e in la_schema.errors(doc, schema):
            print("%s: %s" % (name, e))
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
