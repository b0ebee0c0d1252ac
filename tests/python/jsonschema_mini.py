# SPDX-License-Identifier: BSD-3-Clause
"""jsonschema_mini.py: a JSON Schema validator for the subset of draft
2020-12 that docs/schema/*.json use, for tests on machines without the
jsonschema package (Debian's python3-jsonschema is not a dependency).

Keywords: type, properties, required, additionalProperties, items, enum,
const, minimum, oneOf, anyOf, $ref (to "#/..." in the same document);
$schema, title, description and $defs are annotations. Any other keyword
is an error, so a schema cannot silently rely on an unchecked keyword.
"""

_ANNOT = {"$schema", "title", "description", "$defs", "$id", "$comment"}
_KNOWN = _ANNOT | {"type", "properties", "required", "additionalProperties",
                   "items", "enum", "const", "minimum", "oneOf", "anyOf",
                   "$ref", "minItems", "maxItems"}


def _is(t, v):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    raise ValueError("unknown type %r" % t)


def _same(a, b):
    """JSON equality (true is not 1)."""
    return type(a) is type(b) and a == b or (
        _is("number", a) and _is("number", b) and a == b)


def _resolve(root, ref):
    if not ref.startswith("#/"):
        raise ValueError("only local $ref: %r" % ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def errors(v, schema, root=None, path="$"):
    """The list of violations of schema by v (empty when valid)."""
    root = schema if root is None else root
    bad = set(schema) - _KNOWN
    if bad:
        raise ValueError("%s: unsupported keywords %s" % (path, sorted(bad)))
    out = []
    if "$ref" in schema:
        out += errors(v, _resolve(root, schema["$ref"]), root, path)
    if "type" in schema:
        ts = schema["type"] if isinstance(schema["type"], list) \
            else [schema["type"]]
        if not any(_is(t, v) for t in ts):
            return out + ["%s: %r is not %s" % (path, _short(v), "/".join(ts))]
    if "const" in schema and not _same(v, schema["const"]):
        out.append("%s: %r is not %r" % (path, _short(v), schema["const"]))
    if "enum" in schema and not any(_same(v, e) for e in schema["enum"]):
        out.append("%s: %r not in %r" % (path, _short(v), schema["enum"]))
    if "minimum" in schema and _is("number", v) and v < schema["minimum"]:
        out.append("%s: %r < %r" % (path, v, schema["minimum"]))
    if isinstance(v, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in v:
                out.append("%s: %r missing" % (path, k))
        for k, x in v.items():
            if k in props:
                out += errors(x, props[k], root, "%s.%s" % (path, k))
            elif schema.get("additionalProperties") is False:
                out.append("%s: unexpected %r" % (path, k))
            elif isinstance(schema.get("additionalProperties"), dict):
                out += errors(x, schema["additionalProperties"], root,
                              "%s.%s" % (path, k))
    if isinstance(v, list) and len(v) < schema.get("minItems", 0):
        out.append("%s: %d items, fewer than %d" % (path, len(v),
                                                    schema["minItems"]))
    if isinstance(v, list) and "maxItems" in schema \
            and len(v) > schema["maxItems"]:
        out.append("%s: %d items, more than %d" % (path, len(v),
                                                   schema["maxItems"]))
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            out += errors(x, schema["items"], root, "%s[%d]" % (path, i))
    for key in ("oneOf", "anyOf"):
        if key in schema:
            res = [errors(v, s, root, path) for s in schema[key]]
            ok = sum(1 for e in res if not e)
            if not ok or (key == "oneOf" and ok > 1):
                out.append("%s: %d of the %s alternatives match (%s)" %
                           (path, ok, key, "; ".join(e[0] for e in res if e)))
    return out


def _short(v):
    s = repr(v)
    return s if len(s) < 60 else s[:57] + "..."
