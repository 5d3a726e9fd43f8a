"""The API rules a rendered tool must keep, per target: the SDK types (through
`sdk_types`) and what the SDKs document without checking (name patterns, strict-mode
schema subsets, request limits).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic.types as anthropic_types
import mcp.types as mcp_types
from google.genai import models as genai_models
from google.genai import types as genai_types
from openai.types import responses as oai_responses
from openai.types.chat import ChatCompletionFunctionToolParam

from sdk_types import discriminated, json_schema_problem, model_aliases, validate_model, validate_param, validate_union_member

# Name rules of the APIs (the SDKs document them but do not check them).
NAME_RULES = {
    "openai-chat": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "openai-responses": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "qwen": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "anthropic": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "gemini": re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"),
    "vertex": re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"),
    "mcp": re.compile(r"^[A-Za-z0-9_.-]{1,128}$"),
}
GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
GEMINI_PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
VERTEX_MAX_DECLARATIONS = 128
GEMINI_MAX_DECLARATIONS = 512  # google-genai's `Tool.function_declarations` docstring
ANTHROPIC_MAX_STRICT_TOOLS = 20
ANTHROPIC_MAX_OPTIONAL_PARAMS = 24
ANTHROPIC_MAX_UNION_PARAMS = 16
OPENAI_STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
ANTHROPIC_STRICT_FORMATS = OPENAI_STRICT_FORMATS | {"uri"}
JSON_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
QWEN_HOSTED = {"web_search", "web_extractor", "code_interpreter", "web_search_image", "image_search", "file_search", "mcp"}


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
                    where = path or "/"
                    if kind is not None and (not isinstance(kind, str) or kind.upper() not in GEMINI_TYPES):
                        problems.append(f"{at}: type {kind!r} at {where} is not one of {sorted(GEMINI_TYPES)}")
                    is_object = isinstance(kind, str) and kind.upper() == "OBJECT"
                    if "properties" in node and not is_object:
                        problems.append(f"{at}: properties at {where} are only allowed for OBJECT type")
                    missing = [r for r in node.get("required") or [] if r not in (node.get("properties") or {})]
                    if missing:
                        problems.append(f"{at}: required names undeclared properties at {where}: {missing}")
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
        if self.target == "gemini" and len(decls) > GEMINI_MAX_DECLARATIONS:
            out.append(f"{len(decls)} function declarations; the Gemini API takes at most {GEMINI_MAX_DECLARATIONS}")
        if self.target in ("gemini", "vertex"):
            # The API answers 400 "properties: should be non-empty for OBJECT type".
            empty = [
                f"{d.wire}{path or '/'}"
                for d in decls
                for node, path, _ in walk_schema(d.body.get("parameters"))
                if str(node.get("type", "")).upper() == "OBJECT" and not node.get("properties")
            ]
            if empty:
                out.append(f"{len(empty)} OBJECT schemas without properties in `parameters`, e.g. {', '.join(empty[:3])}")
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
