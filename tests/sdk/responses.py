"""Model responses built with the SDKs' own response models, whole and streamed, as
each API sends them, for `toolgate parse` to read back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anthropic.types as anthropic_types
import mcp.types as mcp_types
from google.genai import types as genai_types
from openai.types import responses as oai_responses
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat import chat_completion as chat_completion_mod
from openai.types.chat import chat_completion_chunk as chunk_mod
from openai.types.chat.chat_completion_message_function_tool_call import Function as ChatFunction
from openai.types.completion_usage import CompletionUsage

from sdk_types import type_adapter

# A string that exercises escapes and multi-byte characters when split into fragments.
SAMPLE_TEXT = 'Zürich "Nord" \\ 東京'


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
    adapter = type_adapter(oai_responses.ResponseStreamEvent, False)
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
    adapter = type_adapter(anthropic_types.RawMessageStreamEvent, False)
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
