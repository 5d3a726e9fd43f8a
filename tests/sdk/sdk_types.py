"""Eager, strict validation against the SDKs' request types.

The SDKs' request params are TypedDicts: pydantic accepts unknown keys in them and
validates `Iterable[...]` fields lazily, so a check built naively passes bad JSON.
Here a TypedDict is subclassed with `extra="forbid"`, lazy iterables are consumed at
once, and adapters are kept alive (consuming a lazy iterable after its TypeAdapter
was garbage-collected panics in pydantic-core).
"""

from __future__ import annotations

import json
import typing
import warnings
from collections.abc import Iterator
from typing import Any

import jsonschema
import typing_extensions
from pydantic import ConfigDict, TypeAdapter, ValidationError

# Adapters stay alive for the whole run (see the module's doc).
_ADAPTERS: dict[Any, TypeAdapter] = {}


def _strict_typeddict(td: Any) -> Any:
    """A subclass of a TypedDict that refuses unknown keys (also in nested TypedDicts)."""
    strict = type(td.__name__ + "Strict", (td,), {"__total__": td.__total__})
    strict.__pydantic_config__ = ConfigDict(extra="forbid")
    return strict


def type_adapter(tp: Any, forbid_extra: bool) -> TypeAdapter:
    key = (tp, forbid_extra)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = TypeAdapter(_strict_typeddict(tp) if forbid_extra and isinstance(tp, type) else tp)
    return _ADAPTERS[key]


def _materialize(value: Any) -> Any:
    """Consumes pydantic's lazy `Iterable[...]` validators so their errors surface now."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_materialize(v) for v in value]
    if isinstance(value, Iterator):
        return [_materialize(v) for v in value]
    return value


def pydantic_errors(e: ValidationError, limit: int = 3) -> str:
    parts = []
    for err in e.errors()[:limit]:
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    more = e.error_count() - limit
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def validate_param(tp: Any, value: Any) -> str | None:
    """Validates `value` against a request TypedDict, eagerly and refusing unknown keys."""
    try:
        _materialize(type_adapter(tp, True).validate_python(value))
        return None
    except ValidationError as e:
        return f"{getattr(tp, '__name__', tp)}: {pydantic_errors(e)}"


def _union_members(tp: Any) -> list[Any]:
    out: list[Any] = []
    for arg in typing.get_args(tp):
        origin = typing.get_origin(arg)
        if origin is typing.Union:
            out += _union_members(arg)
        elif origin in (typing.Annotated, typing_extensions.Annotated):
            out += _union_members(typing.get_args(arg)[0])
        else:
            out.append(arg)
    return out


def _literal_values(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (typing.Literal, typing_extensions.Literal):
        return list(typing.get_args(annotation))
    return [v for arg in typing.get_args(annotation) for v in _literal_values(arg)]


def discriminated(union: Any) -> dict[Any, Any]:
    """The members of a union of TypedDicts, keyed by the values their `type` admits
    (`None` for a member whose `type` may be left out)."""
    table: dict[Any, Any] = {}
    for member in _union_members(union):
        if not isinstance(member, type):
            continue
        hints = typing_extensions.get_type_hints(member, include_extras=True)
        if "type" not in hints:
            continue
        values = _literal_values(hints["type"])
        optional = "type" not in getattr(member, "__required_keys__", frozenset())
        for v in values:
            table.setdefault(v, member)
        if optional:
            table.setdefault(None, member)
    return table


def validate_union_member(union: Any, table: dict[Any, Any], value: Any) -> str | None:
    """Validates against the union member `value["type"]` selects, strictly."""
    if not isinstance(value, dict):
        return f"not an object: {json.dumps(value)[:80]}"
    member = table.get(value.get("type"))
    if member is None:
        return f"type {value.get('type')!r} is not one of the SDK's tool types"
    return validate_param(member, value)


def validate_model(model: Any, value: Any) -> str | None:
    """Validates against a pydantic model; a warning the SDK raises on the way (google-genai
    only warns about an unknown `type`) counts as a failure too."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.model_validate(value)
        except ValidationError as e:
            return f"{model.__name__}: {pydantic_errors(e)}"
    if caught:
        return f"{model.__name__}: the SDK warns: " + "; ".join(sorted({str(w.message) for w in caught}))
    return None


_META_SCHEMA = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
_SCHEMA_VERDICTS: dict[str, str | None] = {}


def json_schema_problem(schema: Any, field: str) -> str | None:
    """Whether `schema` is valid JSON Schema 2020-12 (the SDKs type it as a plain dict)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _SCHEMA_VERDICTS:
        verdict = None
        if not _META_SCHEMA.is_valid(schema):
            err = jsonschema.exceptions.best_match(_META_SCHEMA.iter_errors(schema))
            verdict = f"not valid JSON Schema at {err.json_path}: {err.message}"
        _SCHEMA_VERDICTS[key] = verdict
    verdict = _SCHEMA_VERDICTS[key]
    return f"{field}: {verdict}" if verdict else None


def model_aliases(model: Any) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()} | set(model.model_fields)
