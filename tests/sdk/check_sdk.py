"""Checks toolgate's wire formats against the official Python SDKs.

The SDKs (`openai`, `anthropic`, `google-genai`, `mcp`, pinned in requirements.txt)
are the nearest thing to the real APIs that runs offline. This check:

1. imports the BFCL corpus with `toolgate import --from bfcl` and renders it with
   `toolgate render` for every target, with and without `--strict` (and with
   `--json-schema` for Gemini and Vertex, and `--defer` for the APIs with their own
   deferred loading: OpenAI Responses and Anthropic), then validates every rendered tool against
   the SDK's request types, eagerly and with unknown keys refused, plus the API rules
   the SDKs do not enforce (name patterns, strict-mode schema rules, request limits);
2. renders small specs with provider-hosted tools and validates those too, and
   renders code mode (`--code-mode`: `run_code`, whose description carries the
   stubs, `resume_code`, plus the tools marked `always_loaded`) for the corpus, the helpdesk
   example and a spec of namespaced tools, for every target, and validates it the
   same way;
3. builds responses with the SDKs' own response models (whole and streamed), feeds
   them to `toolgate parse` under the wire names the render chose, and checks that
   every call comes back with its id, canonical name and arguments, and that broken
   calls (truncated JSON, an unknown tool, a cut-off stream) come back marked invalid
   instead of crashing;
4. with `--github FILE`, imports GitHub's REST description (1,185 operations, some
   with names longer than several APIs take) with `toolgate import --from openapi`,
   renders it for every target and validates it the same way, and checks that every
   Anthropic name fits `^[a-zA-Z0-9_-]{1,64}$` and that the shortened ones read back
   to their canonical names through `toolgate parse`. Its import and renders run in
   the background from the start, on a core the rest leaves idle.

It prints one line per check group and closes with `N passed, N failed`; the exit
status is 1 when anything failed. Run it through `scripts/sdk-check`, which builds the
virtual environment and the CLI first:

    python check_sdk.py --toolgate target/debug/toolgate [--corpus FILE] [--github FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

sys.dont_write_bytecode = True  # keep tests/sdk free of __pycache__

# The modules beside this file (the script's directory is on sys.path).
from responses import (
    Call,
    anthropic_stream,
    anthropic_whole,
    chat_stream,
    chat_whole,
    gemini_stream,
    gemini_whole,
    mcp_message,
    mcp_stream,
    pick_samples,
    responses_stream,
    responses_whole,
    sample_arguments,
)
from rules import NAME_RULES, Declared, TargetCheck, names_problems
from sdk_types import pydantic_errors

REPO = Path(__file__).resolve().parents[2]
TARGETS = ["openai-chat", "openai-responses", "qwen", "anthropic", "gemini", "vertex", "mcp"]


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
        self._pending: dict[tuple[str, ...], Future[Run]] = {}
        # One background worker: the checks themselves keep the other core busy.
        self._background = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) - 1))

    def render(self, *args: str) -> Run:
        """`toolgate render ...`, run once per argument list (rendering is deterministic)."""
        if args not in self._renders:
            pending = self._pending.pop(args, None)
            self._renders[args] = pending.result() if pending else self.run("render", *args)
        return self._renders[args]

    def in_background(self, *args: str) -> Future[Run]:
        """`toolgate ARGS...` on the background worker, in the order asked."""
        return self._background.submit(self.run, *args)

    def prefetch(self, *args: str) -> None:
        """Starts `toolgate render ...` in the background for a later `render`."""
        if args not in self._renders and args not in self._pending:
            self._pending[args] = self.in_background("render", *args)

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


# ---------------------------------------------------------------- rendering the corpus


def check_render(
    report: Report, tg: Toolgate, spec: Path, target: str, options: list[str], canonical: list[str], label: str = ""
) -> list[Declared] | None:
    """Renders the corpus for one target and variant and validates everything; returns
    the declarations (for wire names) when the render is usable."""
    title = f"render {label + ' ' if label else ''}{target}" + "".join(f" {o}" for o in options)
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


def run_parse(
    tg: Toolgate, work: Path, spec: Path, target: str, payload: str | dict, stream: bool, extra: tuple[str, ...] = ()
) -> tuple[list | None, str]:
    path = work / f"input-{target}{'-stream' if stream else ''}.txt"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False))
    args = ["parse", "--for", target, str(path), "-f", str(spec), *extra] + (["--stream"] if stream else [])
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


def expect_invalid(got: list | None, err: str, name: str, call_id: str | None, arguments: dict) -> list[str]:
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
    if call.get("arguments") != arguments:
        problems.append(f"arguments {call.get('arguments')!r}, expected {arguments!r}")
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
        """Unreadable arguments come back as {}; a call to an unknown tool keeps what it sent."""
        arguments = unknown.arguments if name == unknown.wire else {}
        got, err = run_parse(tg, work, spec, target, payload, stream)
        report.group(
            f"parse {target}{' --stream' if stream else ''} {label} is an invalid call",
            expect_invalid(got, err, name, call_id, arguments),
        )

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


def check_strict_nulls(
    report: Report, tg: Toolgate, work: Path, spec: Path, target: str, tools: list[dict], strict_decls: list[Declared]
) -> None:
    """Strict mode makes optional parameters required-but-nullable; a `null` the model
    sends for one must read as absent, so strictness never changes what a call means."""
    title = f"parse {target} --strict: null for an optional parameter reads as absent"
    if "--strict" not in tg.run("parse", "--help").stdout:
        print(f"note  {title}: not checked, `toolgate parse` has no --strict", flush=True)
        return
    for i, decl in enumerate(strict_decls):
        schema = tools[i].get("parameters") or {}
        optional = [k for k in (schema.get("properties") or {}) if k not in (schema.get("required") or [])]
        if decl.body.get("strict") is True and optional:
            break
    else:
        report.group(title, ["no strict tool with an optional parameter in the render"])
        return
    expected = sample_arguments(tools[i], False)
    call = Call(tools[i]["name"], decl.wire or "", call_ids(target, 0), {**expected, optional[0]: None})
    payload = {"openai-chat": chat_whole, "anthropic": anthropic_whole}.get(target, responses_whole)([call])
    got, err = run_parse(tg, work, spec, target, payload, False, ("--strict",))
    problems = [err] if got is None else compare_calls(got, [Call(call.canonical, call.wire, call.id, expected)])
    report.group(title, problems, f"{call.canonical}.{optional[0]}")


# ---------------------------------------------------------------- code mode


# Built-in tools a code-mode render offers before the spec's `always_loaded` tools.
CODE_MODE_TOOLS = ["run_code", "resume_code"]


def code_mode_spec() -> dict:
    """Namespaced tools (as an upstream MCP server's prefix gives them), two of them
    loaded up front beside `run_code`."""
    params = {"type": "object", "properties": {"repo": {"type": "string"}}, "required": ["repo"]}
    return {
        "tools": [
            {"name": "github.create_issue", "description": "Open an issue.", "effect": "write", "parameters": params},
            {"name": "github.list-issues", "description": "List open issues.", "effect": "read", "parameters": params, "always_loaded": True},
            {"name": "ping", "description": "Check the gateway answers.", "effect": "read", "always_loaded": True,
             "parameters": {"type": "object", "properties": {}}},
        ]
    }


def always_loaded(spec: Path) -> list[str]:
    loaded = yaml.load(spec.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    return [t["name"] for t in loaded.get("tools") or [] if t.get("always_loaded") is True]


def check_code_mode(report: Report, tg: Toolgate, specs: dict[str, Path]) -> None:
    """`render --code-mode` for every target: valid against the SDK types like any
    render, exactly `run_code`, `resume_code` and the `always_loaded` tools, and `run_code` takes
    `code` and carries a stub for each tool."""
    for label, spec in specs.items():
        canonical = CODE_MODE_TOOLS + always_loaded(spec)
        for target in TARGETS:
            for options in ([], ["--strict"]):
                decls = check_render(report, tg, spec, target, ["--code-mode", *options], canonical)
                title = f"code mode {label} for {target}" + "".join(f" {o}" for o in options)
                if decls is None:
                    report.group(title, ["skipped: no usable render"])
                    continue
                run_code = next((d.body for d in decls if d.wire == "run_code"), None)
                problems = []
                if run_code is None:
                    problems.append("no declaration is named run_code")
                else:
                    text = json.dumps(run_code)
                    if "def " not in (run_code.get("description") or ""):
                        problems.append("run_code's description carries no stubs")
                    if '"code"' not in text:
                        problems.append("run_code's parameters have no `code`")
                report.group(title, problems, f"run_code, resume_code and {len(canonical) - 2} always-loaded tools")


# ---------------------------------------------------------------- GitHub's REST description


# Anthropic's rule for tool names, as its tool-use guide states it.
ANTHROPIC_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def start_github(tg: Toolgate, description: Path, spec: Path) -> Future[Run]:
    """Queues the import of GitHub's description and its render for every target on
    the background worker, so they run while the corpus is checked."""
    imported = tg.in_background("import", "--from", "openapi", str(description), "-o", str(spec))
    for target in TARGETS:
        tg.prefetch("--for", target, "-f", str(spec))
    return imported


def check_github(report: Report, tg: Toolgate, work: Path, description: Path, spec: Path, imported: Future[Run]) -> None:
    """Every target's render of the imported description against the SDK types and
    name rules; Anthropic's names within 64 characters, the shortened ones read back."""
    run = imported.result()
    tools: list[dict] = []
    problems: list[str] = []
    if run.code != 0 or run.crashed() or not spec.exists():
        problems.append(f"toolgate import --from openapi failed: {brief(run)}")
    else:
        loaded = yaml.load(spec.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        tools = list(loaded.get("tools") or [])
        if not tools:
            problems.append("the import wrote no tools")
    if not report.group(f"import --from openapi {description.name}", problems, f"{len(tools)} tools"):
        return
    canonical = [t["name"] for t in tools]
    decls: dict[str, list[Declared] | None] = {}
    for target in TARGETS:
        decls[target] = check_render(report, tg, spec, target, [], canonical, label=spec.stem)

    title = f"{spec.stem} for anthropic: every name matches {ANTHROPIC_NAME.pattern}, the shortened ones read back"
    anthropic = decls["anthropic"]
    if anthropic is None:
        report.group(title, ["skipped: no usable render"])
        return
    problems = [
        f"{d.where}: {d.wire!r} (for {name}) breaks {ANTHROPIC_NAME.pattern}"
        for name, d in zip(canonical, anthropic)
        if not isinstance(d.wire, str) or not ANTHROPIC_NAME.match(d.wire)
    ]
    long = [i for i, name in enumerate(canonical) if len(name) > 64]
    calls = [
        Call(canonical[i], str(anthropic[i].wire), call_ids("anthropic", n), sample_arguments(tools[i], False))
        for n, i in enumerate(long)
    ]
    if calls and not problems:
        try:
            got, err = run_parse(tg, work, spec, "anthropic", anthropic_whole(calls), False)
            problems += [err] if got is None else compare_calls(got, calls)
        except ValidationError as e:  # a bug in this check: the SDK refused what it built
            problems.append(f"building the SDK response: {pydantic_errors(e)}")
    report.group(title, problems, f"{len(canonical)} names, {len(long)} over 64 characters shortened and read back")


# ---------------------------------------------------------------- main


def corpus_names(corpus: Path) -> list[str]:
    return [json.loads(line)["name"] for line in corpus.read_text().splitlines() if line.strip()]


def default_corpus() -> Path:
    repo_copy = REPO / "tests" / "data" / "bfcl" / "functions.jsonl"
    shared = REPO.parent / "shared" / "data" / "bfcl" / "functions.jsonl"
    return repo_copy if repo_copy.exists() or not shared.exists() else shared


def check_specs(tg: Toolgate, specs: list[Path]) -> int:
    """Renders each spec file (an imported OpenAPI description, say) for every
    target and validates every declaration against the SDK types."""
    report = Report()
    for spec in specs:
        loaded = yaml.load(spec.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        canonical = [t["name"] for t in loaded.get("tools") or []]
        for target in TARGETS:
            print(f"note  {spec.name}:", end=" ", flush=True)
            check_render(report, tg, spec, target, [], canonical)
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", type=Path, default=REPO / "target" / "debug" / "toolgate")
    parser.add_argument("--corpus", type=Path, default=None, help="BFCL functions.jsonl")
    parser.add_argument("--keep", type=Path, default=None, help="write the spec and inputs here and keep them")
    parser.add_argument("--github", type=Path, default=None, help="GitHub's REST description (api.github.com.json)")
    parser.add_argument(
        "--spec", type=Path, action="append", default=[],
        help="only render this spec file for every target and validate it (repeatable)",
    )
    args = parser.parse_args()
    if args.spec:
        return check_specs(Toolgate(args.toolgate.resolve()), args.spec)

    corpus = args.corpus or default_corpus()
    tg = Toolgate(args.toolgate.resolve())
    report = Report()
    with tempfile.TemporaryDirectory(prefix="sdk-check-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        spec = work / "bfcl.yaml"
        github_spec = work / "github.yaml"
        github = start_github(tg, args.github, github_spec) if args.github else None

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
        strict_decls: dict[str, list[Declared] | None] = {}
        if ok:
            for target in TARGETS:
                variants = [[], ["--strict"]] + ([["--json-schema"]] if target in ("gemini", "vertex") else [])
                # The APIs' own deferred loading: tools marked for it plus the API's tool search.
                variants += [["--defer"]] if target in ("openai-responses", "anthropic") else []
                for options in variants:
                    decls = check_render(report, tg, spec, target, options, canonical)
                    if not options:
                        wire_decls[target] = decls
                    if options == ["--strict"]:
                        strict_decls[target] = decls
            for target in ("gemini", "vertex", "mcp"):
                check_strict_is_noop(report, tg, spec, target)
        check_hosted(report, tg, work)
        code_spec = work / "code-mode.yaml"
        code_spec.write_text(json.dumps(code_mode_spec()))
        code_specs = {"helpdesk": REPO / "examples" / "helpdesk" / "toolgate.yaml", "namespaced": code_spec}
        if ok:
            code_specs = {"bfcl": spec, **code_specs}
        check_code_mode(report, tg, code_specs)

        # 3. Parse responses built with the SDKs' models.
        for target in TARGETS:
            decls = wire_decls.get(target)
            if not decls:
                report.group(f"parse {target}", ["skipped: no usable render to take wire names from"])
                continue
            check_parse(report, tg, work, spec, target, tools, decls)
        # Anthropic's strict mode keeps optional parameters optional, so only OpenAI's
        # required-but-nullable transform has nulls to read back as absent.
        for target in ("openai-chat", "openai-responses"):
            if strict_decls.get(target):
                check_strict_nulls(report, tg, work, spec, target, tools, strict_decls[target])

        # 4. GitHub's REST description, imported and rendered in the background meanwhile.
        if github is not None:
            check_github(report, tg, work, args.github, github_spec, github)

    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
