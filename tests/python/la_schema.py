# SPDX-License-Identifier: BSD-3-Clause
"""la_schema.py: a document's errors against one of docs/schema/*.json,
checked by Debian's python3-jsonschema (draft 2020-12, every keyword; the
schema itself is checked first, so a broken schema fails, not passes).
"""

import jsonschema


def errors(doc, schema):
    """The list of reasons doc does not match schema ([] when it does),
    each "PATH: MESSAGE" with PATH the JSON path of the offending value."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    out = []

    def add(errs, depth):
        for e in sorted(errs, key=lambda e: [str(p) for p in e.absolute_path]):
            path = "/".join(str(p) for p in e.absolute_path)
            out.append("%s%s: %s" % ("  " * depth, path or "(the document)",
                                     e.message))
            # oneOf, anyOf: why each alternative failed
            add(e.context or [], depth + 1)

    add(cls(schema).iter_errors(doc), 0)
    return out
