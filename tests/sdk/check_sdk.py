"""Checks toolgate's wire formats against the official Python SDKs.

The SDKs (`openai`, `anthropic`, `google-genai`, `mcp`, pinned in requirements.txt)
are the nearest thing to the real APIs that runs offline. This check:

1. imports the BFCL corpus with `toolgate import --from bfcl` and renders it with
   `toolgate render` for every target, with and without `--strict` (and with
   `--json-schema` for Gemini and Vertex), then validates every rendered tool against
   the SDK's request types, eagerly and with unknown keys refused, plus the API rules
   the SDKs do not enforce (name patterns, strict-mode schema rules, request limits);
2. renders small specs with provider-hosted tools and validates those too;
3. builds responses with the SDKs' own response models (whole and streamed), feeds
   them to `toolgate parse` under the wire names the render chose, and checks that
   every call comes back with its id, canonical name and arguments, and that broken
   calls (truncated JSON, an unknown tool, a cut-off stream) come back marked invalid
   instead of crashing.

It prints one line per check group and closes with `N passed, N failed`; the exit
status is 1 when anything failed. Run it through `scripts/sdk-check`, which builds the
virtual environment and the CLI first:

    python check_sdk.py --toolgate target/debug/toolgate [--corpus FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
import tempfile
import typing
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jsonschema
import typing_extensions
import yaml
from pydantic import ConfigDict, TypeAdapter, ValidationError

import anthropic.types as anthropic_types
import mcp.types as mcp_types
from google.genai import models as genai_models
from google.genai import types as genai_types
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat import chat_completion as chat_completion_mod
from openai.types.chat import chat_completion_chunk as chunk_mod
from openai.types.chat.chat_completion_message_function_tool_call import Function as ChatFunction
from openai.types.completion_usage import CompletionUsage
from openai.types import responses as oai_responses

REPO = Path(__file__).resolve().parents[2]
TARGETS = ["openai-chat", "openai-responses", "qwen", "anthropic", "gemini", "vertex", "mcp"]

# Name rules of the APIs (the SDKs document them but do not check them).
NAME_RULES = {
    "openai-chat": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "openai-responses": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "qwen": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "anthropic": re.compile(r"^[a-zA-Z0-9_-]{1,128}$"),
    "gemini": re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"),
    "vertex": re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"),
    "mcp": re.compile(r"^[A-Za-z0-9_.-]{1,128}$"),
}
GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
GEMINI_PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
VERTEX_MAX_DECLARATIONS = 128
ANTHROPIC_MAX_STRICT_TOOLS = 20
ANTHROPIC_MAX_OPTIONAL_PARAMS = 24
ANTHROPIC_MAX_UNION_PARAMS = 16
OPENAI_STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
ANTHROPIC_STRICT_FORMATS = OPENAI_STRICT_FORMATS | {"uri"}
JSON_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
QWEN_HOSTED = {"web_search", "web_extractor", "code_interpreter", "web_search_image", "image_search", "file_search", "mcp"}

# A string that exercises escapes and multi-byte characters when split into fragments.
SAMPLE_TEXT = 'Zürich "Nord" \\ 東京'


# ---------------------------------------------------------------- reporting


class Report:
    """One line per check group; the details of a failure indented below it."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def group(self, title: str, problems: list[str], summary: str = "") -> bool:
        if problems:
            self.failed += 1
            print(f"FAIL  {title}: {len(problems)} problem(s)", flush=True)
            for line in problems[:8]:
                print(f"        {line}", flush=True)
            if len(problems) > 8:
                print(f"        ... and {len(problems) - 8} more", flush=True)
            return False
        self.passed += 1
        print(f"ok    {title}{': ' + summary if summary else ''}", flush=True)
        return True


# ---------------------------------------------------------------- the CLI


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def errors(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def crashed(self) -> bool:
        return self.code not in (0, 1) or "panicked" in self.stderr


class Toolgate:
    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self._renders: dict[tuple[str, ...], Run] = {}

    def render(self, *args: str) -> Run:
        """`toolgate render ...`, run once per argument list (rendering is deterministic)."""
        if args not in self._renders:
            self._renders[args] = self.run("render", *args)
        return self._renders[args]

    def run(self, *args: str) -> Run:
        try:
            done = subprocess.run(
                [str(self.binary), *args], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            return Run(-1, "", f"timed out: toolgate {' '.join(args)}")
        except OSError as e:
            return Run(-1, "", f"cannot run {self.binary}: {e}")
        return Run(done.returncode, done.stdout, done.stderr)


def brief(run: Run, limit: int = 3) -> str:
    lines = run.errors()[:limit]
    return f"exit {run.code}" + (": " + " | ".join(lines) if lines else "")


# ---------------------------------------------------------------- eager, strict SDK validation

# Adapters stay alive for the whole run: consuming a lazily validated Iterable after its
# TypeAdapter was garbage-collected panics in pydantic-core.
_ADAPTERS: dict[Any, TypeAdapter] = {}


def _strict_typeddict(td: Any) -> Any:
    """A subclass of a TypedDict that refuses unknown keys (also in nested TypedDicts)."""
    strict = type(td.__name__ + "Strict", (td,), {"__total__": td.__total__})
    strict.__pydantic_config__ = ConfigDict(extra="forbid")
    return strict


def _adapter(tp: Any, forbid_extra: bool) -> TypeAdapter:
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
        _materialize(_adapter(tp, True).validate_python(value))
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


# ---------------------------------------------------------------- schema rules


def _pointer(path: str, key: str) -> str:
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def walk_schema(schema: Any, path: str = "", depth: int = 0) -> Iterator[tuple[dict, str, int]]:
    """Every subschema with its JSON pointer and its object/array nesting depth."""
    if not isinstance(schema, dict):
        return
    yield schema, path, depth
    for key in ("properties", "patternProperties", "$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            inner = depth + 1 if key in ("properties", "patternProperties") else depth
            for name, sub in schema[key].items():
                yield from walk_schema(sub, _pointer(_pointer(path, key), name), inner)
    for key in ("items", "additionalProperties", "not", "contains", "if", "then", "else"):
        if isinstance(schema.get(key), dict):
            yield from walk_schema(schema[key], _pointer(path, key), depth + 1 if key == "items" else depth)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems", "items"):
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield from walk_schema(sub, f"{_pointer(path, key)}/{i}", depth)


def is_object_schema(node: dict) -> bool:
    t = node.get("type")
    return t == "object" or (isinstance(t, list) and "object" in t) or ("properties" in node and t is None)


def openai_strict_problems(parameters: Any) -> list[str]:
    """OpenAI Structured Outputs rules for a tool sent with `strict: true`."""
    if not isinstance(parameters, dict):
        return ["parameters: a strict tool needs an object schema"]
    problems = []
    if parameters.get("type") != "object":
        problems.append("root: type must be object")
    if "anyOf" in parameters:
        problems.append("root: anyOf is not allowed at the root")
    total_properties = 0
    enum_values = 0
    for node, path, depth in walk_schema(parameters):
        where = path or "/"
        if is_object_schema(node):
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: every object needs additionalProperties: false")
            props = list((node.get("properties") or {}).keys())
            total_properties += len(props)
            if set(node.get("required") or []) != set(props):
                problems.append(f"{where}: every property must be required")
        for key in ("allOf", "not", "oneOf", "if", "then", "else", "dependentRequired", "dependentSchemas"):
            if key in node:
                problems.append(f"{where}: `{key}` is not supported in strict mode")
        if "format" in node and node["format"] not in OPENAI_STRICT_FORMATS:
            problems.append(f"{where}: format {node['format']!r} is not supported in strict mode")
        if "$ref" in node and len(set(node) - {"$ref"}) > 0:
            problems.append(f"{where}: $ref cannot have sibling keywords")
        if not any(k in node for k in ("type", "anyOf", "$ref", "enum", "const")):
            problems.append(f"{where}: every schema needs a type")
        types = node.get("type")
        for t in types if isinstance(types, list) else [types] if types is not None else []:
            if t not in JSON_TYPES:
                problems.append(f"{where}: type {t!r} is not a JSON Schema type")
        if isinstance(node.get("enum"), list):
            enum_values += len(node["enum"])
        if depth > 10:
            problems.append(f"{where}: nested deeper than 10 levels")
    if total_properties > 5000:
        problems.append(f"{total_properties} properties; strict mode allows 5000")
    if enum_values > 1000:
        problems.append(f"{enum_values} enum values; strict mode allows 1000")
    return problems


ANTHROPIC_STRICT_KEYWORDS = {
    "$defs", "definitions", "$ref", "type", "anyOf", "allOf", "enum", "const", "description", "title",
    "properties", "additionalProperties", "required", "format", "items", "minItems", "default",
}


def anthropic_strict_problems(schema: Any) -> list[str]:
    """Anthropic strict tool rules (the SDK's `transform_schema` keeps exactly these)."""
    if not isinstance(schema, dict):
        return ["input_schema: not an object"]
    problems = []
    for node, path, _ in walk_schema(schema):
        where = path or "/"
        if is_object_schema(node) and node.get("additionalProperties") is not False:
            problems.append(f"{where}: every object needs additionalProperties: false")
        for key in sorted(set(node) - ANTHROPIC_STRICT_KEYWORDS):
            problems.append(f"{where}: `{key}` is not supported in strict mode")
        if "format" in node and node["format"] not in ANTHROPIC_STRICT_FORMATS:
            problems.append(f"{where}: format {node['format']!r} is not supported in strict mode")
        if "minItems" in node and node["minItems"] not in (0, 1):
            problems.append(f"{where}: minItems may only be 0 or 1 in strict mode")
    return problems


def anthropic_strict_counts(schema: Any) -> tuple[int, int]:
    """Optional parameters and union-typed parameters in one strict schema."""
    optional = unions = 0
    for node, _, _ in walk_schema(schema):
        if is_object_schema(node):
            optional += len(set((node.get("properties") or {}).keys()) - set(node.get("required") or []))
        if "anyOf" in node or (isinstance(node.get("type"), list) and len(node["type"]) > 1):
            unions += 1
    return optional, unions


# ---------------------------------------------------------------- validating renders


@dataclass
class Declared:
    """One function declaration found in a render: its wire name and where it sits."""

    wire: str | None
    where: str
    body: dict


class TargetCheck:
    """Per target: how to find the function declarations in `tools` and how to validate
    each entry of `tools`."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.responses_tools = discriminated(oai_responses.ToolParam)
        self.anthropic_tools = discriminated(anthropic_types.ToolUnionParam)
        self.mcp_keys = model_aliases(mcp_types.Tool)

    def declarations(self, tools: list) -> list[Declared]:
        out = []
        for i, entry in enumerate(tools):
            if not isinstance(entry, dict):
                continue
            if self.target == "openai-chat":
                if entry.get("type") == "function":
                    fn = entry.get("function") or {}
                    out.append(Declared(fn.get("name"), f"tools[{i}]", fn))
            elif self.target in ("openai-responses", "qwen"):
                if entry.get("type") == "function":
                    out.append(Declared(entry.get("name"), f"tools[{i}]", entry))
            elif self.target == "anthropic":
                if entry.get("type") in (None, "custom"):
                    out.append(Declared(entry.get("name"), f"tools[{i}]", entry))
            elif self.target in ("gemini", "vertex"):
                for j, decl in enumerate(entry.get("functionDeclarations") or []):
                    if isinstance(decl, dict):
                        out.append(Declared(decl.get("name"), f"tools[{i}].functionDeclarations[{j}]", decl))
            elif self.target == "mcp":
                out.append(Declared(entry.get("name"), f"tools[{i}]", entry))
        return out

    def entry_problems(self, entry: Any, i: int, options: set[str]) -> list[str]:
        """SDK-type problems of one entry of `tools` and the per-tool API rules."""
        where = f"tools[{i}]"
        name = entry.get("name") if isinstance(entry, dict) else None
        t = self.target
        problems: list[str] = []
        if not isinstance(entry, dict):
            return [f"{where}: not an object"]
        if t == "openai-chat":
            if entry.get("type") != "function":
                return [f"{where}: Chat Completions only carries function tools here, got type {entry.get('type')!r}"]
            fn = entry.get("function") if isinstance(entry.get("function"), dict) else {}
            name = fn.get("name")
            err = validate_param(ChatCompletionFunctionToolParam, entry)
            if err:
                problems.append(err)
            problems += self._openai_function_rules(fn, options, strict_required=False)
        elif t in ("openai-responses", "qwen"):
            if entry.get("type") == "function":
                err = validate_param(oai_responses.FunctionToolParam, entry)
                if err:
                    problems.append(err)
                problems += self._openai_function_rules(entry, options, strict_required=True)
            elif t == "openai-responses":
                err = validate_union_member(oai_responses.ToolParam, self.responses_tools, entry)
                if err:
                    problems.append(err)
            else:
                problems += qwen_hosted_problems(entry)
        elif t == "anthropic":
            err = validate_union_member(anthropic_types.ToolUnionParam, self.anthropic_tools, entry)
            if err:
                problems.append(err)
            if entry.get("type") in (None, "custom"):
                schema = entry.get("input_schema")
                if not isinstance(schema, dict) or schema.get("type") != "object":
                    problems.append("input_schema.type must be object")
                problems += [p for p in [json_schema_problem(schema, "input_schema")] if p]
                if entry.get("strict") is True:
                    problems += [f"strict: {p}" for p in anthropic_strict_problems(schema)]
        elif t in ("gemini", "vertex"):
            problems += self._gemini_tool_problems(entry, options)
            name = None
        elif t == "mcp":
            err = validate_model(mcp_types.Tool, entry)
            if err:
                problems.append(err)
            unknown = sorted(set(entry) - self.mcp_keys)
            if unknown:
                problems.append(f"keys the MCP Tool type does not know (the SDK drops them silently): {unknown}")
            schema = entry.get("inputSchema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                problems.append("inputSchema.type must be object")
            for key in ("inputSchema", "outputSchema"):
                if key in entry:
                    problems += [p for p in [json_schema_problem(entry[key], key)] if p]
        label = f"{where} {name}" if name else where
        return [f"{label}: {p}" for p in problems]

    def _openai_function_rules(self, fn: dict, options: set[str], strict_required: bool) -> list[str]:
        problems = []
        params = fn.get("parameters")
        if params is not None and (not isinstance(params, dict) or params.get("type") != "object"):
            problems.append("parameters must be an object schema (type: object)")
        if params is not None:
            problems += [p for p in [json_schema_problem(params, "parameters")] if p]
        strict = fn.get("strict")
        if "--strict" not in options and strict_required and strict is not False:
            problems.append(
                f"strict is {json.dumps(strict) if 'strict' in fn else 'absent'}: without --strict the tool must say "
                "strict: false, or the API normalizes its schema to strict mode"
            )
        if "--strict" in options and not isinstance(strict, bool):
            problems.append("with --strict every function tool must say strict: true (or false, falling back)")
        if strict is True:
            problems += [f"strict: {p}" for p in openai_strict_problems(params)]
        return problems

    def _gemini_tool_problems(self, entry: dict, options: set[str]) -> list[str]:
        problems = []
        err = validate_model(genai_types.Tool, entry)
        if err:
            problems.append(err)
        # google-genai's own request converter raises for what the backend does not take.
        convert = getattr(genai_models, "_Tool_to_vertex" if self.target == "vertex" else "_Tool_to_mldev", None)
        if convert is not None and not err:
            tool = genai_types.Tool.model_validate(entry)
            try:
                convert(tool)
            except ValueError as e:
                problems.append(f"google-genai's {self.target} request converter refuses it: {e}")
        declarations = entry.get("functionDeclarations")
        for j, decl in enumerate(declarations if isinstance(declarations, list) else []):
            if not isinstance(decl, dict):
                continue
            at = f"functionDeclarations[{j}] {decl.get('name') or ''}".rstrip()
            if not decl.get("name"):
                problems.append(f"{at}: a declaration needs a name")
            has_params = "parameters" in decl
            has_json = "parametersJsonSchema" in decl
            if has_params and has_json:
                problems.append(f"{at}: parameters and parametersJsonSchema are mutually exclusive")
            if "--json-schema" in options and has_params:
                problems.append(f"{at}: --json-schema asks for parametersJsonSchema, not parameters")
            if "--json-schema" not in options and has_json:
                problems.append(f"{at}: without --json-schema the declaration should use parameters (the OpenAPI subset)")
            if has_json and (not isinstance(decl["parametersJsonSchema"], dict) or decl["parametersJsonSchema"].get("type") != "object"):
                problems.append(f"{at}: parametersJsonSchema must describe an object")
            for key in ("parametersJsonSchema", "responseJsonSchema"):
                if key in decl:
                    problems += [f"{at}: {p}" for p in [json_schema_problem(decl[key], key)] if p]
            if has_params and isinstance(decl["parameters"], dict):
                schema = decl["parameters"]
                if str(schema.get("type", "")).upper() != "OBJECT":
                    problems.append(f"{at}: parameters must be an OBJECT schema")
                for node, path, _ in walk_schema(schema):
                    kind = node.get("type")
                    if kind is not None and (not isinstance(kind, str) or kind.upper() not in GEMINI_TYPES):
                        problems.append(f"{at}: type {kind!r} at {path or '/'} is not one of {sorted(GEMINI_TYPES)}")
                    for prop in (node.get("properties") or {}):
                        if not GEMINI_PARAMETER_NAME.match(prop):
                            problems.append(f"{at}: parameter name {prop!r} at {path or '/'} breaks the API's rule")
            if self.target == "vertex" and "behavior" in decl:
                problems.append(f"{at}: Vertex does not take behavior")
        return problems

    def request_violations(self, tools: list, decls: list[Declared]) -> list[str]:
        """Rules about the request as a whole that this render breaks: the CLI must report them."""
        out = []
        if self.target == "vertex" and len(decls) > VERTEX_MAX_DECLARATIONS:
            out.append(f"{len(decls)} function declarations; Vertex takes at most {VERTEX_MAX_DECLARATIONS}")
        if self.target == "anthropic":
            strict = [d.body for d in decls if d.body.get("strict") is True]
            optional = unions = 0
            for body in strict:
                o, u = anthropic_strict_counts(body.get("input_schema"))
                optional += o
                unions += u
            if len(strict) > ANTHROPIC_MAX_STRICT_TOOLS:
                out.append(f"{len(strict)} strict tools; Anthropic takes at most {ANTHROPIC_MAX_STRICT_TOOLS}")
            if optional > ANTHROPIC_MAX_OPTIONAL_PARAMS:
                out.append(f"{optional} optional parameters in strict tools; Anthropic takes at most {ANTHROPIC_MAX_OPTIONAL_PARAMS}")
            if unions > ANTHROPIC_MAX_UNION_PARAMS:
                out.append(f"{unions} union-typed parameters in strict tools; Anthropic takes at most {ANTHROPIC_MAX_UNION_PARAMS}")
        return out


def qwen_hosted_problems(entry: dict) -> list[str]:
    kind = entry.get("type")
    if kind not in QWEN_HOSTED:
        return [f"type {kind!r} is not a Qwen built-in tool"]
    problems = []
    if kind == "file_search":
        ids = entry.get("vector_store_ids")
        if not (isinstance(ids, list) and len(ids) == 1 and all(isinstance(x, str) for x in ids)):
            problems.append("file_search takes exactly one vector_store_ids entry")
    if kind == "mcp":
        for key in ("server_label", "server_url"):
            if not isinstance(entry.get(key), str):
                problems.append(f"mcp needs {key}")
        if entry.get("server_protocol") != "sse":
            problems.append("mcp needs server_protocol: sse (the only transport Qwen supports)")
    return problems


def names_problems(target: str, canonical: list[str], decls: list[Declared]) -> list[str]:
    """Wire names: one per tool in catalog order, fitting the API, unique, and
    unchanged when the canonical name already fits."""
    if len(decls) != len(canonical):
        return [f"{len(decls)} function declarations rendered for {len(canonical)} tools"]
    rule = NAME_RULES[target]
    problems = []
    seen: dict[str, str] = {}
    for name, decl in zip(canonical, decls):
        wire = decl.wire
        if not isinstance(wire, str) or not rule.match(wire):
            problems.append(f"{decl.where}: name {wire!r} (for {name}) breaks {rule.pattern}")
            continue
        if rule.match(name) and wire != name:
            problems.append(f"{decl.where}: {name} fits the API's rule but was renamed to {wire}")
        if wire in seen:
            problems.append(f"{decl.where}: {name} and {seen[wire]} share the wire name {wire}")
        seen[wire] = name
    return problems


def check_render(
    report: Report, tg: Toolgate, spec: Path, target: str, options: list[str], canonical: list[str]
) -> list[Declared] | None:
    """Renders the corpus for one target and variant and validates everything; returns
    the declarations (for wire names) when the render is usable."""
    title = f"render {target}" + "".join(f" {o}" for o in options)
    run = tg.render("--for", target, "-f", str(spec), *options)
    if run.crashed():
        report.group(title, [f"toolgate crashed: {brief(run)}"])
        return None
    try:
        body = json.loads(run.stdout)
    except json.JSONDecodeError as e:
        report.group(title, [f"stdout is not JSON ({e}); {brief(run)}"])
        return None
    if not isinstance(body, dict) or set(body) != {"tools"} or not isinstance(body["tools"], list):
        report.group(title, [f'stdout must be {{"tools": [...]}}, got keys {sorted(body) if isinstance(body, dict) else type(body).__name__}'])
        return None
    tools = body["tools"]
    check = TargetCheck(target)
    opts = set(options)
    problems: list[str] = []
    for i, entry in enumerate(tools):
        problems += check.entry_problems(entry, i, opts)
    decls = check.declarations(tools)
    violations = check.request_violations(tools, decls)
    if violations and run.code != 1:
        problems += [f"the render should have been refused (exit 1) for: {v}" for v in violations]
    if not violations and run.code != 0:
        problems.append(f"the render was refused but every rule checked here holds: {brief(run, 5)}")
    if run.code == 1 and not any(line.startswith("error:") for line in run.errors()):
        problems.append("exit 1 without an `error:` line")
    name_problems = names_problems(target, canonical, decls)
    problems += name_problems
    strict = sum(1 for d in decls if d.body.get("strict") is True)
    summary = f"{len(decls)} declarations valid"
    if "--strict" in opts and target in ("openai-chat", "openai-responses", "qwen", "anthropic"):
        summary += f", {strict} strict"
    if violations:
        summary += f"; refused as it should be ({'; '.join(violations)})"
    report.group(title, problems, summary)
    return decls if len(decls) == len(canonical) else None


def check_strict_is_noop(report: Report, tg: Toolgate, spec: Path, target: str) -> None:
    plain = tg.render("--for", target, "-f", str(spec))
    strict = tg.render("--for", target, "-f", str(spec), "--strict")
    problems = []
    if plain.stdout != strict.stdout or plain.code != strict.code:
        problems.append(f"{target} has no strict mode, yet --strict changed the output")
    report.group(f"render {target} --strict is a no-op", problems)


# ---------------------------------------------------------------- hosted tools


def hosted_spec(kind: str) -> dict:
    function = {
        "name": "lookup.order",
        "description": "Look up an order by id.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "effect": "read",
    }
    if kind == "qwen":
        hosted = [
            {"type": "web_search"},
            {"type": "web_extractor"},
            {"type": "code_interpreter"},
            {"type": "web_search_image"},
            {"type": "image_search"},
            {"type": "file_search", "vector_store_ids": ["kb_1"]},
            {
                "type": "mcp",
                "server_label": "docs",
                "server_url": "https://mcp.example.com/sse",
                "server_description": "Product docs",
                "server_protocol": "sse",
                "headers": {"Authorization": "Bearer t"},
            },
        ]
    else:
        hosted = [
            {"type": "web_search", "options": {"search_context_size": "low"}},
            {"type": "code_interpreter"},
            {"type": "file_search", "vector_store_ids": ["vs_1"], "max_num_results": 5},
            {
                "type": "mcp",
                "server_label": "deepwiki",
                "server_url": "https://mcp.deepwiki.com/mcp",
                "allowed_tools": ["ask_question"],
                "require_approval": "never",
            },
        ]
    return {"tools": [function], "hosted": hosted}


def check_hosted(report: Report, tg: Toolgate, work: Path) -> None:
    specs = {}
    for kind in ("openai", "qwen"):
        path = work / f"hosted-{kind}.yaml"
        path.write_text(yaml.safe_dump(hosted_spec(kind), sort_keys=False))
        specs[kind] = path
    for target in TARGETS:
        kind = "qwen" if target == "qwen" else "openai"
        title = f"render {target} with hosted tools"
        run = tg.render("--for", target, "-f", str(specs[kind]))
        if run.crashed():
            report.group(title, [f"toolgate crashed: {brief(run)}"])
            continue
        try:
            tools = json.loads(run.stdout)["tools"]
            assert isinstance(tools, list)
        except (json.JSONDecodeError, KeyError, TypeError, AssertionError) as e:
            report.group(title, [f"no tools list on stdout ({e!r}); {brief(run)}"])
            continue
        check = TargetCheck(target)
        problems = []
        for i, entry in enumerate(tools):
            problems += check.entry_problems(entry, i, set())
        problems += names_problems(target, ["lookup.order"], check.declarations(tools))
        carried = len(tools) - (0 if target in ("gemini", "vertex") else 1)
        if target in ("openai-responses", "qwen"):
            wanted = len(hosted_spec(kind)["hosted"])
            if run.code != 0:
                problems.append(f"{target} supports every hosted tool in this spec, yet: {brief(run, 5)}")
            if carried != wanted:
                problems.append(f"{carried} hosted tools rendered, expected {wanted}")
        elif run.code == 1 and not run.errors():
            problems.append("exit 1 without saying which hosted tools it cannot carry")
        report.group(title, problems, f"{len(tools)} entries valid" + ("" if run.code == 0 else f", {len(run.errors())} reported"))

    # Rules Qwen imposes on its built-ins must be refused at render time.
    for label, hosted in [
        ("web_extractor without web_search", [{"type": "web_extractor"}]),
        ("file_search with two vector stores", [{"type": "file_search", "vector_store_ids": ["kb_1", "kb_2"]}]),
    ]:
        path = work / f"qwen-rule-{len(label)}.yaml"
        spec = hosted_spec("qwen")
        spec["hosted"] = hosted
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        run = tg.render("--for", "qwen", "-f", str(path))
        problems = []
        if run.code != 1 or not any(line.startswith("error:") for line in run.errors()):
            problems.append(f"expected exit 1 with an `error:` line, got {brief(run)}")
        report.group(f"render qwen refuses {label}", problems)


# ---------------------------------------------------------------- building responses


@dataclass
class Call:
    canonical: str
    wire: str
    id: str
    arguments: dict

    @property
    def text(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


def sample_value(schema: Any, depth: int = 0) -> Any:
    """A plausible value for `schema` (parse does not validate values; they only
    need to survive the round trip)."""
    if not isinstance(schema, dict) or depth > 6:
        return SAMPLE_TEXT
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return sample_value(schema[key][0], depth + 1)
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        required = [k for k in schema.get("required") or [] if k in props]
        return {k: sample_value(props[k], depth + 1) for k in required}
    if kind == "array":
        return [sample_value(schema.get("items"), depth + 1)]
    return {"string": SAMPLE_TEXT, "integer": 7, "number": 2.5, "boolean": True, "null": None}.get(kind, SAMPLE_TEXT)


def sample_arguments(tool: dict, with_optional: bool) -> dict:
    schema = tool.get("parameters") or {"type": "object", "properties": {}}
    args = sample_value(schema)
    if not isinstance(args, dict):
        args = {}
    if with_optional:
        props = schema.get("properties") or {}
        optional = [k for k in props if k not in (schema.get("required") or [])]
        if optional:
            args[optional[0]] = sample_value(props[optional[0]], 1)
    return args


def pick_samples(tools: list[dict]) -> list[tuple[int, bool]]:
    """Every 50th tool, the first dotted name and the first tool with an optional
    parameter (sent with it): (index, send an optional parameter)."""
    picked: dict[int, bool] = {i: False for i in range(0, len(tools), 50)}
    dotted = next((i for i, t in enumerate(tools) if "." in t["name"]), None)
    if dotted is not None:
        picked.setdefault(dotted, False)
    for i, t in enumerate(tools):
        schema = t.get("parameters") or {}
        if set((schema.get("properties") or {}).keys()) - set(schema.get("required") or []):
            picked[i] = True
            break
    return sorted(picked.items())


def split3(text: str) -> list[str]:
    """Three fragments, cut at arbitrary points (mid-token, mid-string)."""
    a, b = len(text) // 3, 2 * len(text) // 3
    return [p for p in (text[:a], text[a:b], text[b:]) if p]


def dump(model: Any, **kw: Any) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True, **kw)


def sse(events: list[dict], named: bool = False, done: bool = False) -> str:
    out = []
    for ev in events:
        if named:
            out.append(f"event: {ev.get('type')}\n")
        out.append(f"data: {json.dumps(ev, ensure_ascii=False)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out)


# OpenAI Chat Completions


def chat_whole(calls: list[Call]) -> dict:
    message = ChatCompletionMessage(
        role="assistant",
        content=None,
        refusal=None,
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(id=c.id, type="function", function=ChatFunction(name=c.wire, arguments=c.text))
            for c in calls
        ],
    )
    completion = ChatCompletion(
        id="chatcmpl-1",
        object="chat.completion",
        created=1767225600,
        model="gpt-test",
        choices=[chat_completion_mod.Choice(index=0, finish_reason="tool_calls", message=message, logprobs=None)],
        usage=CompletionUsage(prompt_tokens=10, completion_tokens=20, total_tokens=30),
    )
    return dump(completion)


def _chunk(delta: chunk_mod.ChoiceDelta | None, finish: str | None = None, usage: bool = False) -> dict:
    choices = [] if delta is None else [chunk_mod.Choice(index=0, delta=delta, finish_reason=finish)]
    chunk = ChatCompletionChunk(
        id="chatcmpl-1",
        object="chat.completion.chunk",
        created=1767225600,
        model="gpt-test",
        choices=choices,
        **({"usage": CompletionUsage(prompt_tokens=10, completion_tokens=20, total_tokens=30)} if usage else {}),
    )
    return dump(chunk)


def chat_stream(calls: list[Call], cut: bool = False) -> str:
    """First chunk per call: index, id, type, name and empty arguments; then only
    index and an arguments fragment. `cut` stops mid-arguments, before finish_reason."""
    events = [_chunk(chunk_mod.ChoiceDelta(role="assistant", content=None))]
    for index, c in enumerate(calls):
        head = chunk_mod.ChoiceDeltaToolCall(
            index=index, id=c.id, type="function", function=chunk_mod.ChoiceDeltaToolCallFunction(name=c.wire, arguments="")
        )
        events.append(_chunk(chunk_mod.ChoiceDelta(tool_calls=[head])))
        fragments = split3(c.text)
        if cut:
            fragments = fragments[:1]
        for frag in fragments:
            part = chunk_mod.ChoiceDeltaToolCall(index=index, function=chunk_mod.ChoiceDeltaToolCallFunction(arguments=frag))
            events.append(_chunk(chunk_mod.ChoiceDelta(tool_calls=[part])))
    if not cut:
        events.append(_chunk(chunk_mod.ChoiceDelta(), finish="tool_calls"))
        events.append(_chunk(None, usage=True))
    for ev in events:  # every chunk is one the SDK accepts
        ChatCompletionChunk.model_validate(ev)
    return sse(events, done=not cut)


# OpenAI Responses (and Qwen)


def _function_item(c: Call, n: int, done: bool, arguments: str | None = None) -> oai_responses.ResponseFunctionToolCall:
    return oai_responses.ResponseFunctionToolCall(
        type="function_call",
        id=f"fc_{n:03d}",
        call_id=c.id,
        name=c.wire,
        arguments=c.text if arguments is None else arguments,
        status="completed" if done else "in_progress",
    )


def _preamble() -> oai_responses.ResponseOutputMessage:
    return oai_responses.ResponseOutputMessage(
        type="message",
        id="msg_001",
        role="assistant",
        status="completed",
        content=[oai_responses.ResponseOutputText(type="output_text", text="Let me look that up.", annotations=[])],
    )


def _response(output: list, status: str) -> oai_responses.Response:
    return oai_responses.Response(
        id="resp_001",
        object="response",
        created_at=1767225600,
        model="gpt-test",
        status=status,
        output=output,
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
    )


def responses_whole(calls: list[Call], arguments: str | None = None) -> dict:
    output = [_preamble()] + [_function_item(c, n, True, arguments) for n, c in enumerate(calls)]
    return dump(_response(output, "completed"))


def responses_stream(calls: list[Call], cut: bool = False) -> str:
    """response.created, then per call output_item.added, arguments.delta xN,
    arguments.done, output_item.done; then response.completed (which repeats the
    whole output: a parser must not count the calls twice)."""
    adapter = _adapter(oai_responses.ResponseStreamEvent, False)
    seq = iter(range(1_000_000))
    events: list[Any] = [
        oai_responses.ResponseCreatedEvent(type="response.created", sequence_number=next(seq), response=_response([], "in_progress"))
    ]
    for n, c in enumerate(calls):
        item = _function_item(c, n, False, "")
        out_index = n
        events.append(
            oai_responses.ResponseOutputItemAddedEvent(
                type="response.output_item.added", output_index=out_index, sequence_number=next(seq), item=item
            )
        )
        fragments = split3(c.text)
        if cut:
            fragments = fragments[:1]
        for frag in fragments:
            events.append(
                oai_responses.ResponseFunctionCallArgumentsDeltaEvent(
                    type="response.function_call_arguments.delta",
                    item_id=item.id,
                    output_index=out_index,
                    sequence_number=next(seq),
                    delta=frag,
                )
            )
        if cut:
            break
        events.append(
            oai_responses.ResponseFunctionCallArgumentsDoneEvent(
                type="response.function_call_arguments.done",
                item_id=item.id,
                output_index=out_index,
                sequence_number=next(seq),
                arguments=c.text,
            )
        )
        events.append(
            oai_responses.ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                output_index=out_index,
                sequence_number=next(seq),
                item=_function_item(c, n, True),
            )
        )
    if not cut:
        final = _response([_function_item(c, n, True) for n, c in enumerate(calls)], "completed")
        events.append(oai_responses.ResponseCompletedEvent(type="response.completed", sequence_number=next(seq), response=final))
    dumped = [dump(ev) for ev in events]
    for ev in dumped:
        adapter.validate_python(ev)
    return sse(dumped, named=True)


# Anthropic Messages

_ANTHROPIC_USAGE = {"input_tokens": 10, "output_tokens": 20}


def anthropic_whole(calls: list[Call]) -> dict:
    content = [anthropic_types.TextBlock(type="text", text="Let me check.")] + [
        anthropic_types.ToolUseBlock(type="tool_use", id=c.id, name=c.wire, input=c.arguments) for c in calls
    ]
    message = anthropic_types.Message(
        id="msg_01",
        type="message",
        role="assistant",
        model="claude-test",
        content=content,
        stop_reason="tool_use",
        stop_sequence=None,
        usage=anthropic_types.Usage(**_ANTHROPIC_USAGE),
    )
    return dump(message)


def anthropic_stream(calls: list[Call], cut: bool = False) -> str:
    adapter = _adapter(anthropic_types.RawMessageStreamEvent, False)
    start = anthropic_types.Message(
        id="msg_01", type="message", role="assistant", model="claude-test", content=[],
        stop_reason=None, stop_sequence=None, usage=anthropic_types.Usage(input_tokens=10, output_tokens=1),
    )
    events: list[Any] = [
        anthropic_types.RawMessageStartEvent(type="message_start", message=start),
        anthropic_types.RawContentBlockStartEvent(
            type="content_block_start", index=0, content_block=anthropic_types.TextBlock(type="text", text="")
        ),
        anthropic_types.RawContentBlockDeltaEvent(
            type="content_block_delta", index=0, delta=anthropic_types.TextDelta(type="text_delta", text="Let me check.")
        ),
        anthropic_types.RawContentBlockStopEvent(type="content_block_stop", index=0),
    ]
    for n, c in enumerate(calls, start=1):
        events.append(
            anthropic_types.RawContentBlockStartEvent(
                type="content_block_start",
                index=n,
                content_block=anthropic_types.ToolUseBlock(type="tool_use", id=c.id, name=c.wire, input={}),
            )
        )
        fragments = split3(c.text) if c.arguments else []
        if cut:
            fragments = fragments[:1]
        for frag in fragments:
            events.append(
                anthropic_types.RawContentBlockDeltaEvent(
                    type="content_block_delta",
                    index=n,
                    delta=anthropic_types.InputJSONDelta(type="input_json_delta", partial_json=frag),
                )
            )
        if cut:
            break
        events.append(anthropic_types.RawContentBlockStopEvent(type="content_block_stop", index=n))
    if not cut:
        events.append(
            anthropic_types.RawMessageDeltaEvent(
                type="message_delta",
                delta={"stop_reason": "tool_use", "stop_sequence": None},
                usage=anthropic_types.MessageDeltaUsage(output_tokens=20),
            )
        )
        events.append(anthropic_types.RawMessageStopEvent(type="message_stop"))
    dumped = [dump(ev) for ev in events]
    for ev in dumped:
        adapter.validate_python(ev)
    return sse(dumped, named=True)


# Gemini and Vertex


def _gemini_response(parts: list, last: bool, response_id: str = "r1") -> dict:
    candidate = genai_types.Candidate(
        content=genai_types.Content(role="model", parts=parts),
        index=0,
        finish_reason=genai_types.FinishReason.STOP if last else None,
    )
    response = genai_types.GenerateContentResponse(
        candidates=[candidate],
        model_version="gemini-test",
        response_id=response_id,
        usage_metadata=genai_types.GenerateContentResponseUsageMetadata(prompt_token_count=10, total_token_count=30) if last else None,
    )
    body = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    genai_types.GenerateContentResponse.model_validate(body)
    return body


def _gemini_part(c: Call, with_id: bool, signature: bool) -> genai_types.Part:
    call = genai_types.FunctionCall(id=c.id if with_id else None, name=c.wire, args=c.arguments)
    return genai_types.Part(function_call=call, thought_signature=b"opaque-signature" if signature else None)


def gemini_whole(calls: list[Call], with_id: bool = True) -> dict:
    parts = [genai_types.Part(text="Let me check.")] + [
        _gemini_part(c, with_id, n == 0) for n, c in enumerate(calls)
    ]
    return _gemini_response(parts, True)


def gemini_stream(calls: list[Call], as_array: bool) -> str:
    """Several responses: some text first, then one whole functionCall part per chunk."""
    chunks = [_gemini_response([genai_types.Part(text="Let me ")], False)]
    for n, c in enumerate(calls):
        chunks.append(_gemini_response([_gemini_part(c, True, n == 0)], n == len(calls) - 1))
    return json.dumps(chunks, ensure_ascii=False) if as_array else sse(chunks)


# MCP


def mcp_message(c: Call) -> dict:
    request = mcp_types.CallToolRequest(
        method="tools/call", params=mcp_types.CallToolRequestParams(name=c.wire, arguments=c.arguments)
    )
    message = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=c.id, **request.model_dump(by_alias=True, exclude_none=True))
    return message.model_dump(mode="json", by_alias=True, exclude_none=True)


def mcp_stream(calls: list[Call]) -> str:
    return "".join(json.dumps(mcp_message(c), ensure_ascii=False) + "\n" for c in calls)


# ---------------------------------------------------------------- parsing


def call_ids(target: str, n: int) -> str:
    prefix = {
        "openai-chat": "call_",
        "openai-responses": "call_",
        "qwen": "call_",
        "anthropic": "toolu_01",
        "gemini": "fc-",
        "vertex": "fc-",
        "mcp": "req-",
    }[target]
    return f"{prefix}{n:04d}"


def run_parse(tg: Toolgate, work: Path, spec: Path, target: str, payload: str | dict, stream: bool) -> tuple[list | None, str]:
    path = work / f"input-{target}{'-stream' if stream else ''}.txt"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False))
    args = ["parse", "--for", target, str(path), "-f", str(spec)] + (["--stream"] if stream else [])
    run = tg.run(*args)
    if run.crashed():
        return None, f"toolgate crashed: {brief(run)}"
    if run.code != 0:
        return None, brief(run)
    try:
        calls = json.loads(run.stdout)
    except json.JSONDecodeError as e:
        return None, f"stdout is not JSON: {e}"
    if not isinstance(calls, list):
        return None, "stdout is not a JSON array"
    return calls, ""


def compare_calls(got: list, expected: list[Call], check_ids: bool = True) -> list[str]:
    problems = []
    if len(got) != len(expected):
        problems.append(f"{len(got)} calls back, expected {len(expected)}: {[c.get('name') for c in got if isinstance(c, dict)][:6]}")
    for n, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(g, dict):
            problems.append(f"call {n}: not an object")
            continue
        if g.get("invalid"):
            problems.append(f"call {n} ({e.canonical}) came back invalid: {g['invalid']}")
        if g.get("name") != e.canonical:
            problems.append(f"call {n}: name {g.get('name')!r}, expected the canonical {e.canonical!r} (wire {e.wire!r})")
        if check_ids and g.get("id") != e.id:
            problems.append(f"call {n}: id {g.get('id')!r}, expected {e.id!r}")
        if not check_ids and not isinstance(g.get("id"), str):
            problems.append(f"call {n}: id must be a string, got {g.get('id')!r}")
        if g.get("arguments") != e.arguments:
            problems.append(f"call {n} ({e.canonical}): arguments {json.dumps(g.get('arguments'), ensure_ascii=False)[:120]}, expected {e.text[:120]}")
    return problems


def expect_invalid(got: list | None, err: str, name: str, call_id: str | None) -> list[str]:
    if got is None:
        return [f"parse failed instead of returning an invalid call: {err}"]
    if len(got) != 1 or not isinstance(got[0], dict):
        return [f"expected exactly one call back, got {json.dumps(got)[:200]}"]
    call = got[0]
    problems = []
    if not isinstance(call.get("invalid"), str) or not call["invalid"].strip():
        problems.append(f"the call is not marked invalid: {json.dumps(call, ensure_ascii=False)[:200]}")
    if call.get("name") != name:
        problems.append(f"name {call.get('name')!r}, expected {name!r}")
    if call_id is not None and call.get("id") != call_id:
        problems.append(f"id {call.get('id')!r}, expected {call_id!r}")
    if call.get("arguments") != {}:
        problems.append(f"arguments of an invalid call should be {{}}, got {call.get('arguments')!r}")
    return problems


def check_parse(report: Report, tg: Toolgate, work: Path, spec: Path, target: str, tools: list[dict], decls: list[Declared]) -> None:
    # Only tools whose wire name is sound and unique can be expected back by name.
    counts: dict[Any, int] = {}
    for d in decls:
        counts[d.wire] = counts.get(d.wire, 0) + 1
    rule = NAME_RULES[target]
    sound = [isinstance(d.wire, str) and bool(rule.match(d.wire)) and counts[d.wire] == 1 for d in decls]
    samples = [(i, optional) for i, optional in pick_samples(tools) if sound[i]]
    if not samples:
        report.group(f"parse {target}", ["skipped: no sampled tool has a sound wire name"])
        return
    calls = [
        Call(tools[i]["name"], decls[i].wire, call_ids(target, n), sample_arguments(tools[i], optional))
        for n, (i, optional) in enumerate(samples)
    ]
    first = next((c for c in calls if c.arguments), calls[0])
    unknown = Call("no_such_tool", "no_such_tool", call_ids(target, 9999), {"x": 1})
    truncated_text = first.text[: max(1, len(first.text) // 2)] if first.arguments else '{"a": '

    def whole(label: str, payload: dict, expected: list[Call], check_ids: bool = True) -> None:
        got, err = run_parse(tg, work, spec, target, payload, False)
        problems = [err] if got is None else compare_calls(got, expected, check_ids)
        report.group(f"parse {target} {label}", problems, f"{len(expected)} calls")

    def streamed(label: str, payload: str, expected: list[Call]) -> None:
        got, err = run_parse(tg, work, spec, target, payload, True)
        problems = [err] if got is None else compare_calls(got, expected)
        report.group(f"parse {target} --stream {label}", problems, f"{len(expected)} calls")

    def invalid(label: str, payload: str | dict, stream: bool, name: str, call_id: str | None) -> None:
        got, err = run_parse(tg, work, spec, target, payload, stream)
        report.group(f"parse {target}{' --stream' if stream else ''} {label} is an invalid call", expect_invalid(got, err, name, call_id))

    try:
        if target == "openai-chat":
            whole("ChatCompletion", chat_whole(calls), calls)
            streamed("ChatCompletionChunk SSE", chat_stream(calls), calls)
            body = chat_whole([first])
            body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = truncated_text
            invalid("truncated arguments", body, False, first.canonical, first.id)
            invalid("cut off mid-arguments", chat_stream([first], cut=True), True, first.canonical, first.id)
            invalid("unknown tool", chat_whole([unknown]), False, unknown.wire, unknown.id)
        elif target in ("openai-responses", "qwen"):
            whole("Response", responses_whole(calls), calls)
            streamed("ResponseStreamEvent SSE", responses_stream(calls), calls)
            invalid("truncated arguments", responses_whole([first], truncated_text), False, first.canonical, first.id)
            invalid("cut off mid-arguments", responses_stream([first], cut=True), True, first.canonical, first.id)
            invalid("unknown tool", responses_whole([unknown]), False, unknown.wire, unknown.id)
        elif target == "anthropic":
            whole("Message", anthropic_whole(calls), calls)
            streamed("RawMessageStreamEvent SSE", anthropic_stream(calls), calls)
            invalid("cut off mid-input_json_delta", anthropic_stream([first], cut=True), True, first.canonical, first.id)
            invalid("unknown tool", anthropic_whole([unknown]), False, unknown.wire, unknown.id)
        elif target in ("gemini", "vertex"):
            whole("GenerateContentResponse", gemini_whole(calls), calls)
            whole("GenerateContentResponse without call ids", gemini_whole(calls, with_id=False), calls, check_ids=False)
            label = "JSON array of GenerateContentResponse" if target == "vertex" else "GenerateContentResponse SSE"
            streamed(label, gemini_stream(calls, as_array=target == "vertex"), calls)
            invalid("unknown tool", gemini_whole([unknown]), False, unknown.wire, unknown.id)
        elif target == "mcp":
            for c in calls[:3]:
                whole(f"CallToolRequest {c.canonical}", mcp_message(c), [c])
            streamed("JSON Lines of CallToolRequest", mcp_stream(calls), calls)
            invalid("unknown tool", mcp_message(unknown), False, unknown.wire, unknown.id)
    except ValidationError as e:  # a bug in this check: the SDK refused what it built
        report.group(f"parse {target}: building the SDK response", [pydantic_errors(e)])


# ---------------------------------------------------------------- main


def corpus_names(corpus: Path) -> list[str]:
    return [json.loads(line)["name"] for line in corpus.read_text().splitlines() if line.strip()]


def default_corpus() -> Path:
    repo_copy = REPO / "tests" / "data" / "bfcl" / "functions.jsonl"
    shared = REPO.parent / "shared" / "data" / "bfcl" / "functions.jsonl"
    return repo_copy if repo_copy.exists() or not shared.exists() else shared


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", type=Path, default=REPO / "target" / "debug" / "toolgate")
    parser.add_argument("--corpus", type=Path, default=None, help="BFCL functions.jsonl")
    parser.add_argument("--keep", type=Path, default=None, help="write the spec and inputs here and keep them")
    args = parser.parse_args()

    corpus = args.corpus or default_corpus()
    tg = Toolgate(args.toolgate.resolve())
    report = Report()
    with tempfile.TemporaryDirectory(prefix="sdk-check-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        spec = work / "bfcl.yaml"

        # 1. Import.
        run = tg.run("import", "--from", "bfcl", str(corpus))
        tools: list[dict] = []
        problems: list[str] = []
        if run.code != 0 or run.crashed():
            problems.append(f"toolgate import failed: {brief(run)}")
        else:
            spec.write_text(run.stdout)
            try:
                loaded = yaml.load(run.stdout, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                tools = list((loaded or {}).get("tools") or [])
            except yaml.YAMLError as e:
                problems.append(f"the imported spec is not YAML: {e}")
            names = [t.get("name") for t in tools]
            distinct = set(corpus_names(corpus))
            if len(set(names)) != len(names):
                problems.append("the imported spec declares a name twice")
            missing = sorted(distinct - set(names))
            if missing:
                problems.append(f"{len(missing)} corpus names missing from the spec, e.g. {missing[:5]}")
        ok = report.group(f"import bfcl {corpus.name}", problems, f"{len(tools)} tools")
        if ok:
            check = tg.run("check", "-f", str(spec))
            report.group("the imported spec passes toolgate check", [] if check.code == 0 else [brief(check, 5)])

        # 2. Render every target and validate against the SDK types.
        canonical = [t["name"] for t in tools]
        wire_decls: dict[str, list[Declared] | None] = {}
        if ok:
            for target in TARGETS:
                variants = [[], ["--strict"]] + ([["--json-schema"]] if target in ("gemini", "vertex") else [])
                for options in variants:
                    decls = check_render(report, tg, spec, target, options, canonical)
                    if not options:
                        wire_decls[target] = decls
            for target in ("gemini", "vertex", "mcp"):
                check_strict_is_noop(report, tg, spec, target)
        check_hosted(report, tg, work)

        # 3. Parse responses built with the SDKs' models.
        for target in TARGETS:
            decls = wire_decls.get(target)
            if not decls:
                report.group(f"parse {target}", ["skipped: no usable render to take wire names from"])
                continue
            check_parse(report, tg, work, spec, target, tools, decls)

    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
