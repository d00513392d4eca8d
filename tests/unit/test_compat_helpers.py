"""tests/unit/test_compat_helpers.py — the secure-sandbox endpoint's validators
(mcp-frontend/compat/helpers/schema_check.py, csv_check.py) as plain Python: every draft 7 keyword,
the predefined schemas with the documented fields, CSV headers and types, what makes a schema
unusable, and random inputs that must always give an answer of the promised shape. In the farm
they run as sandboxed jobs; tests/integration/test_compat.py drives them that way."""
import io
import json
import os
import random
import sys

import pytest

HELPERS = os.path.join(os.path.dirname(__file__), "..", "..", "mcp-frontend", "compat", "helpers")
sys.path.insert(0, HELPERS)
import csv_check  # noqa: E402
import schema_check  # noqa: E402

with open(os.path.join(HELPERS, "schemas.json")) as f:
    PREDEFINED = json.load(f)  # what the front-end sends with every call


def check(data, schema):
    return schema_check.check(data, schema, PREDEFINED)


def errors(data, schema):
    r = check(data, schema)
    assert "error" not in r, r
    assert r["valid"] == (r["error_count"] == 0)
    return [(e["path"], e["keyword"]) for e in r["errors"]]


# ---- the predefined schemas

def test_predefined_config_accepts_a_named_versioned_config():
    assert errors({"name": "app", "version": "1.2.3", "debug": False, "settings": {}}, "config") == []


def test_predefined_config_requires_name_and_a_dotted_version():
    assert errors({"version": "one"}, "config") == [("", "required"), ("/version", "pattern")]


def test_predefined_user_checks_id_email_age_and_unique_roles():
    good = {"id": 7, "name": "Ann", "email": "ann@example.com", "age": 31, "roles": ["admin"]}
    assert errors(good, "user") == []
    bad = {"id": 0, "name": "", "email": "nope", "age": 200, "roles": ["a", "a"]}
    assert sorted(errors(bad, "user")) == [("/age", "maximum"), ("/email", "pattern"),
                                          ("/id", "minimum"), ("/name", "minLength"),
                                          ("/roles", "uniqueItems")]


def test_predefined_dataset_needs_columns_and_rows():
    assert errors({"name": "t", "columns": ["a", "b"], "rows": [[1, 2], [3, 4]]}, "dataset") == []
    assert errors({"name": "t", "columns": [], "rows": [1]}, "dataset") == [
        ("/columns", "minItems"), ("/rows/0", "type")]


def test_an_unknown_schema_name_is_an_error_naming_the_predefined_ones():
    r = check({}, "nope")
    assert "config, dataset, user" in r["error"]


# ---- draft 7, keyword by keyword

@pytest.mark.parametrize("schema,good,bad", [
    ({"type": "integer"}, 1.0, True),            # 1.0 is an integer, true is no number
    ({"type": ["string", "null"]}, None, 1),
    ({"enum": [1, "a"]}, 1.0, True),             # true is not 1 in JSON
    ({"const": {"a": [1]}}, {"a": [1.0]}, {"a": [1, 2]}),
    ({"multipleOf": 0.5}, 2.5, 2.4),
    ({"maximum": 3, "exclusiveMinimum": 1}, 3, 1),
    ({"exclusiveMaximum": 3, "minimum": 1}, 1, 3),
    ({"maxLength": 2, "minLength": 1}, "\U0001F40D", ""),  # code points, not bytes
    ({"pattern": "^a+$"}, "aaa", "ab"),
    ({"pattern": "b"}, "abc", "ac"),              # patterns are not anchored
    ({"items": {"type": "string"}}, ["a"], ["a", 1]),
    ({"items": [{"type": "string"}], "additionalItems": False}, ["a"], ["a", "b"]),
    ({"contains": {"const": 2}}, [1, 2], [1, 3]),
    ({"minItems": 1, "maxItems": 2}, [1], [1, 2, 3]),
    ({"uniqueItems": True}, [1, True], [1, 1.0]),
    ({"required": ["a"], "minProperties": 1, "maxProperties": 1}, {"a": 1}, {"a": 1, "b": 2}),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"a": "x"}, {"b": 1}),
    ({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
     {"x-a": 1, "b": "s"}, {"x-a": "s"}),
    ({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}, {"a": 1, "b": 2}, {"c": 1}),
    ({"propertyNames": {"maxLength": 2}}, {"ab": 1}, {"abc": 1}),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, "s", -1),
    ({"allOf": [{"minimum": 0}, {"maximum": 1}]}, 0, 2),
    ({"anyOf": [{"type": "string"}, {"minimum": 5}]}, 6, 1),
    ({"oneOf": [{"minimum": 0}, {"maximum": 10}]}, 20, 5),
    ({"not": {"type": "string"}}, 1, "s"),
    (True, {"anything": 1}, None),
    ({"$ref": "#/definitions/pos", "definitions": {"pos": {"minimum": 0}}}, 1, -1),
    ({"$ref": "#/definitions/pos", "minimum": 100, "definitions": {"pos": {"minimum": 0}}}, 1, -1),
    ({"format": "email"}, "not an email", None),  # an annotation, as draft 7 makes it by default
])
def test_each_keyword_accepts_and_refuses(schema, good, bad):
    assert errors(good, schema) == []
    if bad is not None:
        assert errors(bad, schema) != []


def test_false_schema_refuses_everything():
    assert errors(1, False) == [("", "false")]


def test_errors_carry_json_pointers_and_are_capped():
    r = check({"a/b": [0] * 150}, {"properties": {"a/b": {"items": {"const": 1}}}})
    assert r["error_count"] == 150 and len(r["errors"]) == schema_check.MAX_ERRORS
    assert r["errors"][0]["path"] == "/a~1b/0"


@pytest.mark.parametrize("schema,why", [
    ({"pattern": "("}, "does not compile"),
    ({"$ref": "https://example.com/s.json"}, "only references into this schema"),
    ({"$ref": "#/definitions/missing"}, "cannot resolve"),
    ({"type": "integr"}, "unknown type"),
    ({"required": 5}, "wrong kind"),
    (5, "must be an object or a boolean"),
    ({"$ref": "#"}, "nested too deeply"),
])
def test_an_unusable_schema_is_an_error_not_a_crash(schema, why):
    r = check("x" if isinstance(schema, dict) and "pattern" in schema else {"a": 1},
                           schema)
    assert why in r["error"], r


def test_a_schema_of_another_draft_is_read_as_draft_7_and_says_so():
    r = check(1, {"$schema": "https://json-schema.org/draft/2020-12/schema"})
    assert r["valid"] and "draft 7" in r["note"]


def test_main_reads_one_line_and_prints_one_object(monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda: json.dumps({"data": {"id": 1}, "schema": "user",
                                                                 "predefined": PREDEFINED}))
    schema_check.main()
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is False and out["schema"] == "user"


# ---- CSV

def test_csv_with_required_headers_and_types_is_valid():
    content = "name,age,score,member,joined,seen\nann,31,9.5,yes,2024-01-02,2024-01-02T10:00:00Z\n"
    r = csv_check.check(content, ["name", "age"], {"age": "int", "score": "float", "member": "bool",
                                                  "joined": "date", "seen": "datetime", "name": "str"})
    assert r == {"valid": True, "errors": [], "error_count": 0, "row_count": 1, "column_count": 6,
                 "headers": ["name", "age", "score", "member", "joined", "seen"], "missing_headers": []}


def test_csv_errors_name_the_row_and_column():
    r = csv_check.check("name,age\nann,3\nbob,x\n\ncy\n", ["name", "email"], {"age": "integer"})
    assert r["errors"] == ['missing required header "email"',
                           'row 3, column "age": "x" is not int',
                           "row 5 has 1 fields; the header has 2"]
    assert r["missing_headers"] == ["email"] and r["row_count"] == 3


def test_quoted_fields_may_hold_commas_and_newlines():
    r = csv_check.check('a,b\n"x, y","line1\nline2"\n', ["a", "b"], {"a": "str"})
    assert r["valid"] and r["row_count"] == 1


def test_empty_cells_are_strings_only():
    r = csv_check.check("a,b\n,\n", None, {"a": "str", "b": "float"})
    assert r["errors"] == ['row 2, column "b": "" is not float']


def test_constraints_on_missing_columns_and_duplicate_headers_are_reported():
    r = csv_check.check("a,a\n1,2\n", None, {"z": "int"})
    assert 'header "a" appears more than once' in r["errors"]
    assert any('column "z"' in e for e in r["errors"])


def test_unknown_types_and_empty_csv():
    assert "unknown type" in csv_check.check("a\n1\n", None, {"a": "decimal"})["error"]
    assert csv_check.check("", ["a"], None)["errors"] == ["the CSV is empty: no header row"]


def test_csv_main_reads_one_line(monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda: json.dumps({"csv_content": "a\n1\n", "type_constraints": {"a": "int"}}))
    csv_check.main()
    assert json.loads(capsys.readouterr().out)["valid"] is True


# ---- random inputs: always an answer of the promised shape, never an exception

def _random_json(rng, depth=0):
    kinds = [lambda: None, lambda: True, lambda: rng.randint(-5, 5), lambda: rng.random() * 10 - 5,
             lambda: rng.choice(["", "a", "ab", "x-1", "2024-01-01"]),
             lambda: [_random_json(rng, depth + 1) for _ in range(rng.randrange(3))],
             lambda: {rng.choice("abcx"): _random_json(rng, depth + 1) for _ in range(rng.randrange(3))}]
    return kinds[rng.randrange(7 if depth < 4 else 5)]()


def _random_schema(rng, depth=0):
    if depth > 3 or rng.random() < 0.2:
        return rng.choice([True, False, {}])
    keywords = list(schema_check._KEYWORDS) + ["$ref", "definitions"]
    values = [lambda: _random_json(rng, 3), lambda: _random_schema(rng, depth + 1),
              lambda: [_random_schema(rng, depth + 1)], lambda: {"a": _random_schema(rng, depth + 1)},
              lambda: "#", lambda: "#/definitions/a", lambda: rng.randint(0, 3), lambda: "^a"]
    return {k: rng.choice(values)() for k in rng.sample(keywords, rng.randrange(1, 4))}


def test_random_schemas_and_data_always_get_an_answer():
    rng = random.Random(723)
    for _ in range(10000):
        r = check(_random_json(rng), _random_schema(rng))
        assert set(r) in ({"error"}, {"valid", "schema", "error_count", "errors"})


def test_random_csv_always_gets_an_answer():
    rng = random.Random(4180)
    alphabet = 'ab1,"\n\r x.-'
    for _ in range(2000):
        content = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        r = csv_check.check(content, rng.choice([None, ["a"], ["b", "x"]]),
                            rng.choice([None, {"a": "int"}, {"b": "bool", "x": "date"}]))
        assert "valid" in r and isinstance(r["errors"], list)
