# mcp-frontend/compat/helpers/schema_check.py — validate_json_data for the secure-sandbox endpoint
# (mcp-frontend/compat/compat_validators.c): a JSON Schema draft 7 validator, with that server's
# predefined schemas `config`, `user` and `dataset`.
#
# It runs on the farm as an ordinary job in python.basic, never in the front-end: schemas and
# data come from the network, and a hostile `pattern` (catastrophic backtracking), a `$ref` that
# loops, or data nested a thousand deep cost one sandboxed job its time limit and nothing else.
# Standard library only (json, math, re). Input: one JSON line on stdin, {"data": ...,
# "schema": name or schema, "predefined": {name: schema}} (the predefined schemas are
# helpers/schemas.json, which the front-end also serves as the resource sandbox://schemas).
# Output: one JSON object on stdout, {"valid", "schema", "error_count", "errors": [{"path",
# "keyword", "message"}]}, or {"error": why} when the schema itself is unusable. `format` is an
# annotation, as draft 7 makes it by default (and as the common Python validator treats it);
# unknown keywords are ignored, as the draft says.
import json
import math
import re

MAX_ERRORS = 100


class SchemaError(Exception):
    """The schema cannot be used (a bad $ref, a pattern that does not compile)."""


# ---- JSON's own notions: types and equality (true is not 1; 1.0 is 1)

def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_type(x, t):
    if t == "null":
        return x is None
    if t == "boolean":
        return isinstance(x, bool)
    if t == "object":
        return isinstance(x, dict)
    if t == "array":
        return isinstance(x, list)
    if t == "string":
        return isinstance(x, str)
    if t == "number":
        return _is_number(x)
    if t == "integer":
        return _is_number(x) and (isinstance(x, int) or (math.isfinite(x) and x == int(x)))
    raise SchemaError("unknown type %r" % (t,))


def _canon(x):
    """A hashable form in which JSON-equal values are equal."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return (type(x).__name__, x)
    if _is_number(x):
        return ("number", x)
    if isinstance(x, list):
        return ("array", tuple(_canon(v) for v in x))
    return ("object", tuple(sorted((k, _canon(v)) for k, v in x.items())))


def _equal(a, b):
    return _canon(a) == _canon(b)


def _show(x):
    text = json.dumps(x, ensure_ascii=False, allow_nan=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _pointer(path):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


# ---- $ref: JSON pointers into the root schema (no network, so no remote references)

def _resolve(root, ref):
    if not ref.startswith("#"):
        raise SchemaError("cannot resolve $ref %r: only references into this schema (#...) "
                          "are available here" % ref)
    node = root
    fragment = ref[1:]
    if fragment and not fragment.startswith("/"):
        raise SchemaError("cannot resolve $ref %r: only JSON pointers are supported" % ref)
    for part in fragment.split("/")[1:]:
        part = re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), part)
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise SchemaError("cannot resolve $ref %r" % ref)
    return node


class Validator:
    def __init__(self, root):
        self.root = root
        self.patterns = {}

    def _re(self, pattern):
        r = self.patterns.get(pattern)
        if r is None:
            try:
                r = self.patterns[pattern] = re.compile(pattern)
            except (re.error, TypeError) as e:
                raise SchemaError("pattern %s does not compile: %s" % (_show(pattern), e))
        return r

    def errors(self, x, schema, path=()):
        """Every (path, keyword, message) by which x fails schema, as a generator."""
        if schema is True or schema == {}:
            return
        if schema is False:
            yield path, "false", "no value is allowed here"
            return
        if not isinstance(schema, dict):
            raise SchemaError("a schema must be an object or a boolean, not %s" % _show(schema))
        if "$ref" in schema:  # draft 7: a $ref's siblings are ignored
            yield from self.errors(x, _resolve(self.root, schema["$ref"]), path)
            return
        for keyword, value in schema.items():
            check = _KEYWORDS.get(keyword)
            if check is not None:
                yield from check(self, x, value, schema, path)

    def valid(self, x, schema):
        for _ in self.errors(x, schema):
            return False
        return True


# ---- the keywords, each a generator of errors

def _type(v, x, types, schema, path):
    names = types if isinstance(types, list) else [types]
    if not any(_is_type(x, t) for t in names):
        yield path, "type", "%s is not of type %s" % (_show(x), " or ".join(repr(t) for t in names))


def _enum(v, x, values, schema, path):
    if not any(_equal(x, e) for e in values):
        yield path, "enum", "%s is not one of %s" % (_show(x), _show(values))


def _const(v, x, value, schema, path):
    if not _equal(x, value):
        yield path, "const", "%s was expected" % _show(value)


def _multiple_of(v, x, m, schema, path):
    if not _is_number(m) or m <= 0:
        raise SchemaError("multipleOf must be a number greater than 0, not %s" % _show(m))
    if not _is_number(x):
        return
    if isinstance(x, int) and isinstance(m, int):
        bad = x % m != 0
    else:
        try:
            q = x / m
            bad = not math.isfinite(q) or int(q) != q
        except (OverflowError, ZeroDivisionError):
            bad = True
    if bad:
        yield path, "multipleOf", "%s is not a multiple of %s" % (_show(x), _show(m))


def _bound(keyword, test, words):
    def check(v, x, limit, schema, path):
        if _is_number(x) and not test(x, limit):
            yield path, keyword, "%s is %s %s" % (_show(x), words, _show(limit))
    return check


def _length(keyword, test, words):
    def check(v, x, limit, schema, path):
        if isinstance(x, str) and not test(len(x), limit):
            yield path, keyword, "%s is %s" % (_show(x), words % limit)
    return check


def _pattern(v, x, pattern, schema, path):
    if isinstance(x, str) and not v._re(pattern).search(x):
        yield path, "pattern", "%s does not match %s" % (_show(x), _show(pattern))


def _items(v, x, items, schema, path):
    if not isinstance(x, list):
        return
    if isinstance(items, list):
        for i, (item, sub) in enumerate(zip(x, items)):
            yield from v.errors(item, sub, path + (i,))
        extra = schema.get("additionalItems", True)
        for i in range(len(items), len(x)):
            yield from v.errors(x[i], extra, path + (i,))
    else:
        for i, item in enumerate(x):
            yield from v.errors(item, items, path + (i,))


def _count(keyword, kind, test, words):
    def check(v, x, limit, schema, path):
        if isinstance(x, kind) and not test(len(x), limit):
            yield path, keyword, "%s %s" % (_show(x), words % limit)
    return check


def _unique(v, x, unique, schema, path):
    if unique and isinstance(x, list):
        seen = set()
        for item in x:
            c = _canon(item)
            if c in seen:
                yield path, "uniqueItems", "%s has non-unique elements" % _show(x)
                return
            seen.add(c)


def _contains(v, x, sub, schema, path):
    if isinstance(x, list) and not any(v.valid(item, sub) for item in x):
        yield path, "contains", "%s does not contain an item that matches the schema" % _show(x)


def _required(v, x, names, schema, path):
    if isinstance(x, dict):
        for name in names:
            if name not in x:
                yield path, "required", "%s is a required property" % _show(name)


def _properties(v, x, props, schema, path):
    if isinstance(x, dict):
        for name, sub in props.items():
            if name in x:
                yield from v.errors(x[name], sub, path + (name,))


def _pattern_properties(v, x, props, schema, path):
    if isinstance(x, dict):
        for pattern, sub in props.items():
            r = v._re(pattern)
            for name in x:
                if r.search(name):
                    yield from v.errors(x[name], sub, path + (name,))


def _additional_properties(v, x, sub, schema, path):
    if not isinstance(x, dict):
        return
    props = schema.get("properties", {})
    patterns = [v._re(p) for p in schema.get("patternProperties", {})]
    extra = [n for n in x if n not in props and not any(r.search(n) for r in patterns)]
    if sub is False and extra:
        yield path, "additionalProperties", \
            "additional properties are not allowed (%s unexpected)" % ", ".join(map(_show, extra))
        return
    for name in extra:
        yield from v.errors(x[name], sub, path + (name,))


def _dependencies(v, x, deps, schema, path):
    if not isinstance(x, dict):
        return
    for name, dep in deps.items():
        if name not in x:
            continue
        if isinstance(dep, list):
            for other in dep:
                if other not in x:
                    yield path, "dependencies", "%s is a dependency of %s" % (_show(other), _show(name))
        else:
            yield from v.errors(x, dep, path)


def _property_names(v, x, sub, schema, path):
    if isinstance(x, dict):
        for name in x:
            yield from v.errors(name, sub, path + (name,))


def _if(v, x, cond, schema, path):
    branch = "then" if v.valid(x, cond) else "else"
    if branch in schema:
        yield from v.errors(x, schema[branch], path)


def _all_of(v, x, subs, schema, path):
    for sub in subs:
        yield from v.errors(x, sub, path)


def _any_of(v, x, subs, schema, path):
    if not any(v.valid(x, sub) for sub in subs):
        yield path, "anyOf", "%s is not valid under any of the given schemas" % _show(x)


def _one_of(v, x, subs, schema, path):
    n = sum(1 for sub in subs if v.valid(x, sub))
    if n != 1:
        yield path, "oneOf", "%s is valid under %d of the given schemas, not exactly one" % (_show(x), n)


def _not(v, x, sub, schema, path):
    if v.valid(x, sub):
        yield path, "not", "%s should not be valid under %s" % (_show(x), _show(sub))


_KEYWORDS = {
    "type": _type, "enum": _enum, "const": _const, "multipleOf": _multiple_of,
    "maximum": _bound("maximum", lambda x, m: x <= m, "greater than the maximum of"),
    "exclusiveMaximum": _bound("exclusiveMaximum", lambda x, m: x < m,
                               "greater than or equal to the exclusive maximum of"),
    "minimum": _bound("minimum", lambda x, m: x >= m, "less than the minimum of"),
    "exclusiveMinimum": _bound("exclusiveMinimum", lambda x, m: x > m,
                               "less than or equal to the exclusive minimum of"),
    "maxLength": _length("maxLength", lambda n, m: n <= m, "longer than %s characters"),
    "minLength": _length("minLength", lambda n, m: n >= m, "shorter than %s characters"),
    "pattern": _pattern, "items": _items, "contains": _contains, "uniqueItems": _unique,
    "maxItems": _count("maxItems", list, lambda n, m: n <= m, "has more than %s items"),
    "minItems": _count("minItems", list, lambda n, m: n >= m, "has fewer than %s items"),
    "maxProperties": _count("maxProperties", dict, lambda n, m: n <= m, "has more than %s properties"),
    "minProperties": _count("minProperties", dict, lambda n, m: n >= m, "has fewer than %s properties"),
    "required": _required, "properties": _properties, "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties, "dependencies": _dependencies,
    "propertyNames": _property_names, "if": _if, "allOf": _all_of, "anyOf": _any_of,
    "oneOf": _one_of, "not": _not,
}


def check(data, schema, predefined):
    """The answer for one call: what validate_json_data returns."""
    name = "custom"
    if isinstance(schema, str):
        if schema not in predefined:
            return {"error": "unknown schema %s: the predefined schemas are %s, or pass a JSON "
                             "Schema object" % (_show(schema), ", ".join(sorted(predefined)))}
        name, schema = schema, predefined[schema]
    errors, count = [], 0
    try:
        for path, keyword, message in Validator(schema).errors(data, schema):
            count += 1
            if len(errors) < MAX_ERRORS:
                errors.append({"path": _pointer(path), "keyword": keyword, "message": message})
    except SchemaError as e:
        return {"error": "the schema cannot be used: %s" % e}
    except (TypeError, AttributeError, ValueError, ArithmeticError) as e:  # "required": 5
        return {"error": "the schema cannot be used: a keyword has a value of the wrong kind "
                         "(%s)" % e}
    except RecursionError:
        return {"error": "the schema or the data is nested too deeply (or a $ref loops)"}
    answer = {"valid": count == 0, "schema": name, "error_count": count, "errors": errors}
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(declared, str) and "draft-07" not in declared:
        answer["note"] = "the schema declares %s; it was read as draft 7" % _show(declared)
    return answer


def main():
    payload = json.loads(input())
    print(json.dumps(check(payload["data"], payload["schema"], payload["predefined"]),
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
