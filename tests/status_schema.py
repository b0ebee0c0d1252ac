#!/usr/bin/python3
"""status_schema.py: validates JSON documents against a JSON Schema, for
the subset docs/schema/status.schema.json uses: type, enum, const,
properties, required, additionalProperties (false or a schema), items,
minimum, oneOf and local $ref (#/$defs/NAME). A keyword outside the subset
is an error, so a schema cannot silently ask for more than is checked.

usage: status_schema.py SCHEMA FILE...   (each FILE one JSON document)
Exit 0 when every document is valid, 1 with the reasons otherwise, 2 on
usage errors. Run by tests/unit/test_metrics.c with /usr/bin/python3.
"""
import json
import sys

KNOWN = {"$schema", "$id", "$defs", "title", "description", "type", "enum",
         "const", "properties", "required", "additionalProperties", "items",
         "minimum", "oneOf", "$ref"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check(schema, root, v, path, errs):
    """Appends to errs every way v (at path) violates schema."""
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError("schema keyword(s) outside the subset: %s" %
                         ", ".join(sorted(unknown)))
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError("only local #/$defs/ references: " + ref)
        check(root["$defs"][ref[len("#/$defs/"):]], root, v, path, errs)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](v) for t in types):
            errs.append("%s: %r is not of type %s" % (path, v, "|".join(types)))
            return
    if "const" in schema and v != schema["const"]:
        errs.append("%s: %r is not %r" % (path, v, schema["const"]))
    if "enum" in schema and v not in schema["enum"]:
        errs.append("%s: %r is not one of %r" % (path, v, schema["enum"]))
    if "minimum" in schema and TYPES["number"](v) and v < schema["minimum"]:
        errs.append("%s: %r is below %r" % (path, v, schema["minimum"]))
    if isinstance(v, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in v:
                errs.append("%s: required property %r missing" % (path, k))
        extra = schema.get("additionalProperties", True)
        for k, x in v.items():
            if k in props:
                check(props[k], root, x, path + "/" + k, errs)
            elif extra is False:
                errs.append("%s: property %r not allowed" % (path, k))
            elif isinstance(extra, dict):
                check(extra, root, x, path + "/" + k, errs)
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            check(schema["items"], root, x, "%s/%d" % (path, i), errs)
    if "oneOf" in schema:
        results = []
        for sub in schema["oneOf"]:
            e = []
            check(sub, root, v, path, e)
            results.append(e)
        ok = sum(1 for e in results if not e)
        if ok != 1:
            errs.append("%s: matches %d of the oneOf alternatives, not 1 (%s)"
                        % (path, ok, "; ".join(e[0] for e in results if e)))


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
        errs = []
        check(schema, schema, doc, "", errs)
        for e in errs:
            print("%s: %s" % (name, e or "/"))
        bad |= bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
