"""How a wrong value is shown in a case file's one-line error: what was expected, what was
found, and the fix when it is obvious (161002.0 -> 161002, y -> true)."""
from __future__ import annotations

import json

from ..core.text import clipped

_EXPECTED = {"integer": "an integer", "number": "a number", "string": "text", "boolean": "true or false",
             "array": "a list", "object": "a mapping", "null": "null"}
# booleans in the YAML 1.1 spec's list that PyYAML and YAML 1.2 both read as text (readings.py
# refuses the others, yes/no/on/off, before they get here)
_YAML11_BOOLS = {"y": True, "Y": True, "n": False, "N": False}


def shown(value, limit: int = 60) -> str:
    """The value as YAML writes it (true, null, 2.0, "text"), cut to `limit` characters."""
    return clipped(json.dumps(value, ensure_ascii=False, default=str), limit)


def kind_of(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "a mapping"


def hint(value, expected: set[str]) -> str:
    """The obvious fix, if there is one, for `value` where one of the JSON types `expected` is meant."""
    if isinstance(value, float) and value.is_integer() and "integer" in expected:
        return f" (write {int(value)})"
    if isinstance(value, str) and value in _YAML11_BOOLS and "boolean" in expected:
        truth = "true" if _YAML11_BOOLS[value] else "false"
        return f" (YAML 1.1 reads {value!r} as {truth}, PyYAML and YAML 1.2 as text: write true or false)"
    return ""


def wrong_type(value, expected: list[str]) -> str:
    """'expected an integer or a mapping, got a float: 161002.0 (write 161002)'."""
    wanted = " or ".join(dict.fromkeys(_EXPECTED.get(t, t) for t in expected))
    return f"expected {wanted}, got {kind_of(value)}: {shown(value)}{hint(value, set(expected))}"


def _alternative_types(schema) -> list[str] | None:
    types = [alt.get("type") for alt in schema.get("oneOf", ())]
    return types if types and all(isinstance(t, str) for t in types) else None


def innermost(err):
    """For a oneOf whose value has the type of an alternative but a wrong part (a status mapping
    with a bad entry, a rank list with a float or a repeat), that alternative's deepest error,
    which names the part. An alternative whose type the value lacks was not what was meant."""
    while err.validator == "oneOf" and err.context:
        meant = [e for e in err.context if not (e.validator == "type" and not e.relative_path)]
        if not meant:                          # the value has none of the alternatives' types
            break
        err = max(meant, key=lambda e: len(e.relative_path))
    return err


def schema_message(err) -> str:
    """The message of a jsonschema ValidationError, said for a case-file author."""
    if err.validator == "oneOf" and "matrix" in str(err.schema):
        return "a group needs exactly one of 'matrix' or 'invalid'"
    if err.validator == "type":
        expected = err.validator_value
        return wrong_type(err.instance, [expected] if isinstance(expected, str) else list(expected))
    if err.validator == "oneOf":
        types = _alternative_types(err.schema)
        if types and not any(_fits(err.instance, t) for t in types):   # no alternative has its type
            return wrong_type(err.instance, types)
    return err.message


def _fits(value, json_type: str) -> bool:
    """Does `value` have the JSON type (as this loader's validator counts integers: no 2.0)?"""
    if json_type in ("integer", "number"):
        number = isinstance(value, int) or (json_type == "number" and isinstance(value, float))
        return number and not isinstance(value, bool)
    python = {"string": str, "boolean": bool, "array": list, "object": dict, "null": type(None)}.get(json_type)
    return python is not None and isinstance(value, python)
