#!/usr/bin/env python3
"""Reference verdicts for staticlm's JSON Schema matcher (src/text/json_matcher.h), from Python's
`jsonschema` (Debian's python3-jsonschema, Draft 2020-12 with its format checker).

Random schemas over the keywords the matcher enforces (types, enum, const, properties, required,
additionalProperties, patternProperties, propertyNames (lists of names, patterns), dependentRequired, objects of 74
properties, min/maxProperties, items, prefixItems, uniqueItems, min/maxItems, min/maxLength,
pattern, the date, uuid, email, ipv4, ipv6 and uri formats, number bounds, integer multipleOf, anyOf, oneOf
(with keywords beside them), allOf (with an anyOf part),
$ref by pointer and by $id), each with random values, written with jsonschema's verdict to tests/fixtures/json_schema/cases.jsonl:
{"schema": S, "value": "<JSON text>", "valid": true|false}. (time and date-time are left out:
without rfc3339-validator, jsonschema checks them with Python's fromisoformat, which refuses
the offsets RFC 3339 requires.)

Run:       python3 tools/json_schema_reference.py            (rewrites cases.jsonl)
Check:     python3 tools/json_schema_reference.py --check    (exit 1 if jsonschema now differs)
Validate:  python3 tools/json_schema_reference.py --validate FILE
           (FILE: lines {"schema": S, "value": "<JSON text>"}; prints 1 or 0 per line)
"""
import json
import random
import sys
from pathlib import Path

import jsonschema

OUT = Path(__file__).resolve().parent.parent / "tests/fixtures/json_schema/cases.jsonl"
SCHEMAS = 500
VALUES_PER_SCHEMA = 6


# Keywords drawn beside an anyOf / oneOf (the "at least one of" objects among them).
BESIDE_CHOICE = [{"type": "object"}, {"type": ["string", "null"]}, {"maxLength": 2}, {"minimum": 0}, {"required": ["a"]},
                 {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
                 {"type": "integer", "maximum": 5}]


def schema(r, depth=0):
    k = r.randrange(16 if depth < 3 else 6)
    if k == 0:
        return {"type": "integer", **r.choice([{}, {"minimum": r.randrange(-5, 5)}, {"maximum": r.randrange(-5, 50)},
                                               {"exclusiveMinimum": r.randrange(-5, 5), "exclusiveMaximum": r.randrange(6, 100)},
                                               {"minimum": -3, "maximum": 3}, {"multipleOf": 3},
                                               {"multipleOf": 5, "minimum": 0, "maximum": 20}])}
    if k == 1:
        return {"type": "number", **r.choice([{}, {"minimum": r.choice([-1.5, 0, 0.25])}, {"maximum": r.choice([1, 2.5, 1e3])},
                                              {"exclusiveMinimum": 0, "maximum": 1}, {"minimum": -0.5, "exclusiveMaximum": 0.5}])}
    if k == 2:
        return {"type": "string", **r.choice([{}, {"minLength": r.randrange(0, 4)}, {"maxLength": r.randrange(0, 6)},
                                              {"pattern": r.choice(["^[a-c]+$", "^x", "b", "^\\d{2,3}$", "^(ab|c)*$"])},
                                              {"pattern": "^[a-z]*$", "minLength": 1, "maxLength": 3},
                                              {"pattern": "^(xy)+$", "minLength": 3, "maxLength": 5},
                                              {"format": r.choice(["date", "uuid", "email", "ipv4", "ipv6", "uri"])}])}
    if k == 3:
        return {"type": r.choice(["boolean", "null"])}
    if k == 4:
        return {"enum": r.sample([1, 2.5, "a", "b", None, True, False, [1], {"k": 1}, 0, -1, ""], r.randrange(1, 4))}
    if k == 5:
        return {"const": r.choice([1, "x", None, [1, 2], {"a": 1}, 2.0, True])}
    if k in (6, 7):
        props = {n: schema(r, depth + 1) for n in r.sample(["a", "b", "c", "d"], r.randrange(0, 4))}
        s = {"type": "object", "properties": props}
        if props and r.random() < 0.6:
            s["required"] = r.sample(list(props), r.randrange(1, len(props) + 1))
        x = r.random()
        if x < 0.3:
            s["additionalProperties"] = False
        elif x < 0.45:
            s["additionalProperties"] = schema(r, depth + 1)
        if r.random() < 0.2:
            s["minProperties"] = r.randrange(0, 3)
        if r.random() < 0.2:
            s["maxProperties"] = r.randrange(1, 4)
        if r.random() < 0.1:  # more properties than a 64-bit set holds; a required one past it
            s["properties"].update({"f%02d" % i: {"type": "boolean"} for i in range(70)})
            if r.random() < 0.5:
                s["required"] = s.get("required", []) + ["f68"]
        if r.random() < 0.2:
            s["dependentRequired"] = r.choice([{"a": ["b"]}, {"b": ["c", "d"]}, {"c": ["a"], "a": ["c"]}, {"a": ["b"], "b": ["e"]}])
        if r.random() < 0.2:  # pydantic's Dict[Literal[...], X]; false and non-string types: no key
            s["propertyNames"] = r.choice([{"enum": ["a", "b", "e"]}, {"const": "c"}, False, {"type": "integer"},
                                           {"type": "string"}, {"enum": ["a", 1, "d"]}, {"enum": ["a", "bb"], "maxLength": 1},
                                           {"pattern": "^[a-c][a-z]*$"}, {"pattern": "b"}])
        elif r.random() < 0.2:  # one pattern's keys, with or without other keys beside them
            s["patternProperties"] = {r.choice(["^[a-c]", "^x", "^[b-e][a-z]*$", "d"]): schema(r, depth + 1)}
        return s
    if k == 8:
        s = {"type": "array", "items": schema(r, depth + 1)}
        if r.random() < 0.3:
            s["minItems"] = r.randrange(0, 3)
        if r.random() < 0.3:
            s["maxItems"] = r.randrange(1, 4)
        if r.random() < 0.2:
            s = {"type": "array", "prefixItems": [schema(r, depth + 1), schema(r, depth + 1)],
                 **r.choice([{}, {"items": False}, {"items": schema(r, depth + 1)}])}
        return s
    if k == 9:  # sometimes with a branch that allows no value (zod's z.undefined())
        s = {"anyOf": [schema(r, depth + 1) for _ in range(r.randrange(1, 4))] + ([{"not": {}}] if r.random() < 0.2 else [])}
        if r.random() < 0.3:  # keywords beside it hold in every branch
            s.update(BESIDE_CHOICE[r.randrange(len(BESIDE_CHOICE))])
        return s
    if k == 10:
        s = {"oneOf": [schema(r, depth + 1) for _ in range(r.randrange(1, 3))]}
        if r.random() < 0.3:
            s.update(BESIDE_CHOICE[r.randrange(len(BESIDE_CHOICE))])
        return s
    if k == 11:
        s = {"allOf": [schema(r, depth + 1) for _ in range(r.randrange(1, 3))]}
        if r.random() < 0.3:  # an anyOf part, whose branches may overlap, next to the others
            s["allOf"].append({"anyOf": [schema(r, depth + 1), schema(r, depth + 1)]})
        return s
    if k == 12:
        return {"type": r.sample(["string", "integer", "null", "boolean", "number", "array", "object"], r.randrange(1, 4))}
    if k == 13:  # enum / const with keywords beside it that hold too
        s = {"enum": r.sample([1, 2.5, 30, "a", "abc", None, True, {"a": 1}, {"b": 2}, [1]], r.randrange(1, 5))}
        if r.random() < 0.3:
            s = {"const": s["enum"][0]}
        s.update(r.choice([{"type": "string"}, {"type": "integer"}, {"maxLength": 2}, {"maximum": 10}, {"required": ["b"]},
                           {"type": ["string", "null"], "minLength": 2}, {"enum": ["a", 1, None]}]))
        return s
    if k == 14 and r.random() < 0.5:  # uniqueItems over items of one spelling per value
        s = {"type": "array", "uniqueItems": True,
             "items": r.choice([{"type": "integer"}, {"type": "integer", "minimum": 0, "maximum": 3}, {"type": "boolean"},
                                {"type": "integer", "multipleOf": 4, "minimum": -8, "maximum": 8},
                                {"type": ["boolean", "null"]}, {"enum": ["a", "b", 1, 12]}, {"type": "string"},
                                {"type": "string", "minLength": 1}])}
        if r.random() < 0.3:
            s["minItems"] = r.randrange(0, 3)
        return s
    if k == 14:  # false under properties / prefixItems: that key or item is not there
        return r.choice([{"type": "object", "properties": {"a": schema(r, depth + 1), "b": False}},
                         {"type": "array", "prefixItems": [schema(r, depth + 1), False]}])
    if depth > 0:  # "#" is the root: only the root holds $defs
        return {"type": "integer"}
    if r.random() < 0.5:  # a branch that refers back to the root (a tree)
        return {"type": "object", "properties": {"a": {"anyOf": [schema(r, depth + 1), {"$ref": "#"}]}, "b": schema(r, depth + 1)}}
    if r.random() < 0.5:  # a reference by "$id": absolute, relative to the root's, or to the root's with a pointer
        inner = schema(r, depth + 1)
        return r.choice([{"$id": "https://example.com/s/root.json", "$defs": {"D": {"$id": "d.json", "allOf": [inner]}}, "$ref": "d.json"},
                         {"$id": "https://example.com/s/root.json", "$defs": {"D": inner}, "$ref": "root.json#/$defs/D"},
                         {"$defs": {"D": {"$id": "urn:example:d", "allOf": [inner]}}, "$ref": "urn:example:d"}])
    return {"$defs": {"D": schema(r, depth + 1)}, "$ref": "#/$defs/D"}


def value(r, depth=0):
    k = r.randrange(10 if depth < 3 else 7)
    if k == 0:
        return r.randrange(-10, 60)
    if k == 1:
        return r.choice([0.5, -1.5, 2.5, 1e3, 0.0, 1.0, -0.25, 3.0, 1e-3])
    if k == 2:
        return r.choice(["", "a", "ab", "abc", "x1", "12", "123", "cab", "2024-02-29", "2023-02-29", "xyxy", "xy",
                         "123e4567-e89b-12d3-a456-426614174000", "b", "xyz", "é", "abab", "c", "10.0.0.1", "256.0.0.1",
                         "::1", "1:2", "a@b.co", "a@b", "http://x.org/p?q#f", "x:y"])
    if k == 3:
        return r.choice([True, False])
    if k == 4:
        return None
    if k in (5, 6):
        return r.choice([1, "x", [1, 2], {"a": 1}, 2.0])
    if k in (7, 8):
        return {n: value(r, depth + 1) for n in r.sample(["a", "b", "c", "d", "e"], r.randrange(0, 4))}
    if r.random() < 0.3:  # arrays that repeat an item (uniqueItems)
        return r.choice([[1, 1], [1, 12, 1], ["a", "a"], ["a", "b"], [True, False, True], [None, True], [0, 1, 2, 3], ["", "x"]])
    return [value(r, depth + 1) for _ in range(r.randrange(0, 4))]


def valid(s, v):
    return jsonschema.Draft202012Validator(s, format_checker=jsonschema.FormatChecker()).is_valid(v)


def cases():
    r = random.Random(20261204)
    lines = []
    for _ in range(SCHEMAS):
        s = schema(r)
        for _ in range(VALUES_PER_SCHEMA):
            v = value(r)
            lines.append(json.dumps({"schema": s, "value": json.dumps(v), "valid": valid(s, v)}))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--validate":
        # "\n" only: a value may hold U+2028 or U+0085, which splitlines() would also split at.
        for line in Path(sys.argv[2]).read_text(encoding="utf-8").split("\n"):
            if not line:
                continue
            c = json.loads(line)
            print(1 if valid(c["schema"], json.loads(c["value"])) else 0)
        return 0
    text = cases()
    if len(sys.argv) == 2 and sys.argv[1] == "--check":
        if OUT.read_text() != text:
            print("cases.jsonl differs from what jsonschema gives now", file=sys.stderr)
            return 1
        print("cases.jsonl matches jsonschema")
        return 0
    if len(sys.argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    OUT.write_text(text)
    print("wrote %d cases to %s" % (text.count("\n"), OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
