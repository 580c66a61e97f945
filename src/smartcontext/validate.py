"""The one argument check of every tool call: JSON Schema (Draft 2020-12), after the
lenient conversions that loosely typed callers need.

Models and the command line often send ``"10"``, ``"true"`` or a single ``"tag"`` where a
schema wants a number, a boolean or a list; those are converted first. Whatever still
does not fit is refused with a message that names the argument, in the same words for a
call from a model, from the CLI or from Python.
"""

from __future__ import annotations

import json
from typing import Any, cast

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from .errors import SmartContextError, did_you_mean

# jsonschema quotes the offending value in its messages; a huge string must not echo back.
MAX_MESSAGE_CHARS = 300


# Words for the numeric and list bounds of a schema.
_BOUNDS = {
    "minimum": "{where} must be at least {expected}, not {value}",
    "maximum": "{where} must be at most {expected}, not {value}",
    "minItems": "{where} needs at least {expected} item(s)",
    "maxItems": "{where} takes at most {expected} items, got {count}",
}


class ToolError(SmartContextError):
    """A tool was called wrongly (unknown name, arguments that do not fit its schema), or
    a tool answered a failure; the message is what the caller sees."""


def compile_schema(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator for a tool's argument schema; raises if the schema itself is invalid."""
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def check_arguments(tool: str, validator: Draft202012Validator, arguments: Any) -> dict[str, Any]:
    """The arguments of a call to ``tool``, ready for its handler, or ToolError.

    ``arguments`` may be a dict, the JSON text of one, or None. Nulls are dropped (the
    handler's default applies; a required argument given as null is missing); plainly
    spelled numbers and booleans become numbers and booleans, a single string becomes a
    one-element list where a list of strings is expected, and 3.0 becomes 3 where an
    integer is expected.
    """
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError(f"{tool}: arguments are not valid JSON ({exc.msg})") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"{tool}: arguments must be a JSON object, not {json_type(arguments)}")
    if any(not isinstance(key, str) for key in arguments):
        raise ToolError(f"{tool}: argument names must be strings")
    # compile_schema built the validator from a dict (jsonschema also allows a bool schema)
    props = cast(dict[str, Any], validator.schema).get("properties", {})
    clean = {key: coerce(value, props.get(key, {})) for key, value in arguments.items() if value is not None}
    errors = list(validator.iter_errors(clean))
    if errors:
        raise ToolError(f"{tool}: {explain(_first(errors), props)}")
    return clean


def scalar_from_text(value: str, allowed: list[str]) -> int | float | bool | None:
    """``"10"``, ``"2.5"``, ``"true"`` as the integer, number or boolean a schema allows
    (loosely typed clients send strings); None when the text is none of those."""
    text = value.strip()
    if "integer" in allowed and text.lstrip("+-").isdigit():
        return int(text)
    if "number" in allowed:
        try:
            return float(text)
        except ValueError:
            pass
    if "boolean" in allowed and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return None


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` converted to what ``schema`` allows where the conversion is unambiguous;
    otherwise unchanged (the schema check then reports it)."""
    allowed = _types(schema)
    if isinstance(value, str) and allowed and "string" not in allowed:
        parsed = scalar_from_text(value, allowed)
        if parsed is not None:
            return parsed
        if "array" in allowed and _types(schema.get("items", {})) == ["string"]:
            return [value]
    if isinstance(value, float) and "integer" in allowed and "number" not in allowed and value.is_integer():
        return int(value)
    return value


def _types(schema: dict[str, Any]) -> list[str]:
    types = schema.get("type")
    return [types] if isinstance(types, str) else list(types or [])


def _first(errors: list[ValidationError]) -> ValidationError:
    # Wrong names first, then missing ones, then the value jsonschema finds most relevant:
    # the order a person fixes a call in.
    for kind in ("additionalProperties", "required"):
        for error in errors:
            if error.validator == kind and not error.absolute_path:
                return error
    return best_match(errors)


def explain(error: ValidationError, props: dict[str, Any]) -> str:
    """One schema violation in words that name the argument (``moves[0].source``)."""
    where = _where(error.absolute_path)
    expected: Any  # jsonschema types it "Any | Unset"; Unset is only for errors built by hand
    kind, expected, value = error.validator, error.validator_value, error.instance
    if kind == "additionalProperties" and isinstance(value, dict):
        known = props if not where else cast(dict[str, Any], error.schema).get("properties", {})
        unknown = [str(k) for k in value if k not in known]
        extra = ", ".join(unknown)
        # Argument names are short: at difflib's usual 0.6, "colour" would suggest "loud".
        hint = did_you_mean(unknown[0], known, cutoff=0.75) if len(unknown) == 1 else ""
        if not where:
            return f"unknown argument(s) {extra}{hint} (expected: {', '.join(props) or 'no arguments'})"
        return f"{where} has unknown field(s) {extra}{hint}"
    if kind == "required" and isinstance(value, dict):
        missing = ", ".join(r for r in expected if r not in value)
        return f"missing required argument(s) {missing}" if not where else f"{where} is missing {missing}"
    if kind == "type":
        wanted = " or ".join([expected] if isinstance(expected, str) else expected)
        article = "an" if wanted[0] in "aeiou" else "a"
        return f"{where} must be {article} {wanted}, not {json_type(value)}"
    if kind == "enum":
        return f"{where} must be one of {', '.join(map(str, expected))}, not {_short(repr(value))}"
    if kind in _BOUNDS and not isinstance(value, str):
        count = len(value) if isinstance(value, (list, dict)) else None
        return _BOUNDS[kind].format(where=where, expected=expected, value=value, count=count)
    if kind == "minLength":
        return f"{where} must not be empty" if expected == 1 else f"{where} needs at least {expected} characters"
    if kind == "maxLength" and isinstance(value, str):
        return f"{where} has {len(value):,} characters; at most {expected:,} are accepted"
    message = _short(error.message)
    return f"{where}: {message}" if where else message


def _where(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "…"


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, as error messages say it."""
    for name, kind in (("boolean", bool), ("integer", int), ("number", float), ("string", str),
                       ("array", (list, tuple)), ("object", dict)):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__
