# mcp-frontend/compat/helpers/csv_check.py — validate_csv_data for the secure-sandbox endpoint
# (mcp-frontend/compat/compat_validators.c): the CSV's header must hold every required header, and
# each column named in type_constraints must hold values of its type in every row.
#
# Runs on the farm as an ordinary job in python.basic (csv, datetime, io, json, re), like
# schema_check.py and for the same reason: the content comes from the network. Input: one JSON
# line on stdin, {"csv_content", "required_headers", "type_constraints"}. Output: one JSON
# object, {"valid", "errors", "error_count", "row_count", "column_count", "headers",
# "missing_headers"}, or {"error": why} when the constraints themselves are unusable.
#
# Types: int (integer), float (number), str (string), bool (boolean: true/false/yes/no/1/0),
# date (YYYY-MM-DD) and datetime (ISO 8601). An empty cell is a str; for any other type it is
# an error, as it is not a value of that type.
import collections
import csv
import datetime
import io
import json
import re

MAX_ERRORS = 100
_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_BOOL = {"true", "false", "yes", "no", "1", "0", "t", "f", "y", "n"}


def _is_date(v):
    try:
        datetime.date.fromisoformat(v)
        return True
    except ValueError:
        return False


def _is_datetime(v):
    try:
        datetime.datetime.fromisoformat(v[:-1] + "+00:00" if v.endswith("Z") else v)
        return True
    except ValueError:
        return False


TYPES = {
    "int": lambda v: bool(_INT.match(v)),
    "float": lambda v: bool(_FLOAT.match(v)),
    "str": lambda v: True,
    "bool": lambda v: v.lower() in _BOOL,
    "date": _is_date,
    "datetime": _is_datetime,
}
ALIASES = {"integer": "int", "number": "float", "string": "str", "boolean": "bool"}


def _type_name(t):
    if not isinstance(t, str):
        return None
    t = t.strip().lower()
    t = ALIASES.get(t, t)
    return t if t in TYPES else None


def check(content, required, constraints):
    """The answer for one call: what validate_csv_data returns."""
    required = required or []
    constraints = constraints or {}
    if not isinstance(required, list) or not all(isinstance(h, str) for h in required):
        return {"error": "required_headers must be a list of column names"}
    if not isinstance(constraints, dict):
        return {"error": "type_constraints must map column names to types"}
    types = {}
    for column, t in constraints.items():
        name = _type_name(t)
        if name is None:
            return {"error": "type_constraints[%s]: unknown type %s (known: %s)"
                    % (json.dumps(column), json.dumps(t), ", ".join(sorted(TYPES)))}
        types[column] = name
    errors, count = [], 0

    def error(message):
        nonlocal count
        count += 1
        if len(errors) < MAX_ERRORS:
            errors.append(message)

    try:
        rows = list(csv.reader(io.StringIO(content, newline="")))
    except csv.Error as e:
        return {"valid": False, "errors": ["the CSV cannot be read: %s" % e], "error_count": 1,
                "row_count": 0, "column_count": 0, "headers": [], "missing_headers": required}
    if not rows:
        return {"valid": False, "errors": ["the CSV is empty: no header row"], "error_count": 1,
                "row_count": 0, "column_count": 0, "headers": [], "missing_headers": required}
    headers = [h.strip() for h in rows[0]]
    missing = [h for h in required if h not in headers]
    for h in missing:
        error("missing required header %s" % json.dumps(h))
    for h in sorted(h for h, k in collections.Counter(headers).items() if k > 1):
        error("header %s appears more than once" % json.dumps(h))
    for column in types:
        if column not in headers:
            error("type_constraints names column %s, which the header does not have" % json.dumps(column))
    where = {c: headers.index(c) for c in types if c in headers}
    data = 0
    for n, row in enumerate(rows[1:], start=2):  # n: the record's number, the header's is 1
        if not row:
            continue  # a blank line is no record
        data += 1
        if len(row) != len(headers):
            error("row %d has %d fields; the header has %d" % (n, len(row), len(headers)))
        for column, i in where.items():
            if i >= len(row):
                continue
            value = row[i].strip()
            if types[column] != "str" and (not value or not TYPES[types[column]](value)):
                error("row %d, column %s: %s is not %s" % (n, json.dumps(column), json.dumps(value),
                                                          types[column]))
    return {"valid": count == 0, "errors": errors, "error_count": count, "row_count": data,
            "column_count": len(headers), "headers": headers, "missing_headers": missing}


def main():
    p = json.loads(input())
    print(json.dumps(check(p["csv_content"], p.get("required_headers"), p.get("type_constraints")),
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
