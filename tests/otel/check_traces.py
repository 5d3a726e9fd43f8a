"""Checks the spans `toolgate serve` exports over OTLP (HTTP/protobuf, or gRPC
with `--protocol grpc`) for calls through an HTTP binding and an upstream MCP
server.

A receiver on loopback decodes each export with the official protobuf
definitions (PyPI `opentelemetry-proto`, and `grpcio` for gRPC); an HTTP server on loopback plays the
API the binding calls and keeps the `traceparent` each request carries. Two
stateless calls go through `toolgate serve --http`: one with its trace context
in `_meta` (SEP-414), one in the HTTP `traceparent` header. The check asserts
the spans' names, kinds, attributes and parent/child links, and that the API
saw the binding's span as the parent of its request.

Prints `N passed, N failed` last; exits non-zero on any failure.
"""

import argparse
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from concurrent import futures

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

SECRET = "tg-" + secrets.token_hex(12)
spans = []
resources = []
traceparents = []
lock = threading.Lock()


def record(request):
    with lock:
        for rs in request.resource_spans:
            resources.append({kv.key: value(kv.value) for kv in rs.resource.attributes})
            for ss in rs.scope_spans:
                spans.extend(ss.spans)


class GrpcReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        record(request)
        return ExportTraceServiceResponse()


def grpc_receiver():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(GrpcReceiver(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        record(request)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


class Api(BaseHTTPRequestHandler):
    def do_GET(self):
        with lock:
            traceparents.append(self.headers.get("traceparent"))
        order = self.path.rsplit("/", 1)[-1]
        body = json.dumps({"order_id": order, "status": "shipped"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attrs(span):
    return {kv.key: value(kv.value) for kv in span.attributes}


def serve(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def post(url, payload, headers):
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            **headers,
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    if text.startswith("{"):
        return json.loads(text)
    for line in text.splitlines():
        if line.startswith("data:") and '"jsonrpc"' in line:
            return json.loads(line[5:])
    raise AssertionError(f"no JSON-RPC answer in {text!r}")


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "check_traces", "version": "1"},
}


def call(url, tool, arguments, meta=None, headers=None):
    params = {"name": tool, "arguments": arguments, "_meta": {**META, **(meta or {})}}
    answer = post(
        url,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        {"mcp-method": "tools/call", "mcp-name": tool, **(headers or {})},
    )
    assert "result" in answer, answer
    return answer["result"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--protocol", choices=["http/protobuf", "grpc"], default="http/protobuf")
    parser.add_argument("--spans", choices=["calls", "all"], default="calls")
    args = parser.parse_args()
    args.fixture = os.path.abspath(args.fixture)

    if args.protocol == "grpc":
        _grpc_server, port = grpc_receiver()
    else:
        port = serve(Receiver).server_port
    api = serve(Api)
    work = tempfile.mkdtemp(prefix="otel-check-")
    spec = os.path.join(work, "toolgate.yaml")
    with open(spec, "w") as f:
        f.write(
            f"""network: {{allow: ["127.0.0.1"]}}
policy:
  effects: {{write: allow, execute: allow, destructive: allow, external: allow}}
mcp_servers:
  fx:
    command: {args.fixture}
telemetry:
  span_arguments:
    get_order: [id, api_token, note]
tools:
  - name: get_order
    description: Get an order by its id.
    effect: read
    parameters:
      type: object
      properties:
        id: {{type: string}}
        api_token: {{type: string}}
        pin: {{type: string, writeOnly: true}}
        note: {{type: string}}
        other: {{type: string}}
      required: [id]
    http:
      url: "http://127.0.0.1:{api.server_port}/orders/{{args.id}}"
"""
        )
    env = {
        **os.environ,
        "TOOLGATE_STATE_DIR": os.path.join(work, "state"),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": args.protocol,
        "OTEL_SERVICE_NAME": "toolgate-trace-check",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "TOOLGATE_OTEL_SPANS": args.spans,
    }
    server = subprocess.Popen(
        [args.toolgate, "serve", "-f", spec, "--http", "127.0.0.1:0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = None
    for line in server.stderr:
        found = re.search(r"(http://\S+/mcp)", line)
        if "serving" in line and found:
            url = found.group(1)
            break
    if url is None:
        print("check_traces: toolgate serve did not start", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()

    by_meta = (secrets.token_hex(16), secrets.token_hex(8))
    by_header = (secrets.token_hex(16), secrets.token_hex(8))
    try:
        order = call(
            url,
            "get_order",
            {"id": "A-1", "api_token": SECRET, "pin": SECRET, "note": "n" * 2000, "other": "left-out"},
            meta={"traceparent": f"00-{by_meta[0]}-{by_meta[1]}-01"},
        )
        echo = call(
            url,
            "fx.echo",
            {"text": "hi"},
            headers={"traceparent": f"00-{by_header[0]}-{by_header[1]}-01"},
        )
        deadline = time.time() + 15
        while time.time() < deadline:
            with lock:
                names = {s.name for s in spans}
            if {"execute_tool get_order", "execute_tool fx.echo", "GET"} <= names:
                break
            time.sleep(0.2)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    time.sleep(0.5)

    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"ok   [{args.protocol}] {name}")
        else:
            failed += 1
            print(f"FAIL [{args.protocol}] {name} {detail}")

    check("the HTTP-bound call ran", not order.get("isError"), order)
    check("the upstream call ran", not echo.get("isError"), echo)
    with lock:
        got = list(spans)
    listing = "\n".join(
        f"  {s.name} kind={s.kind} trace={s.trace_id.hex()} span={s.span_id.hex()} parent={s.parent_span_id.hex()}"
        for s in got
    )
    check("the receiver got spans", bool(got), "")
    check(
        "the resource names the service from OTEL_SERVICE_NAME",
        any(r.get("service.name") == "toolgate-trace-check" for r in resources),
        resources,
    )

    def one(name, trace):
        found = [s for s in got if s.name == name and s.trace_id.hex() == trace]
        check(f"one `{name}` span in its trace", len(found) == 1, f"{len(found)} of\n{listing}")
        return found[0] if found else None

    def child(parent, span, what):
        if parent is None or span is None:
            check(what, False, "(a span is missing)")
            return
        check(what, span.parent_span_id == parent.span_id, f"\n{listing}")

    for (trace, remote), tool in [(by_meta, "get_order"), (by_header, "fx.echo")]:
        gate = one(f"execute_tool {tool}", trace)
        if gate is not None:
            check(
                f"`execute_tool {tool}` is a server span whose parent is the caller's",
                gate.kind == Span.SPAN_KIND_SERVER and gate.parent_span_id.hex() == remote,
                f"kind {gate.kind}, parent {gate.parent_span_id.hex()}",
            )
        served = [s.name for s in got if s.name == f"tools/call {tool}" and s.trace_id.hex() == trace]
        check(
            f"the call to {tool} is one span: no `tools/call {tool}` beside `execute_tool {tool}`",
            not served,
            f"\n{listing}",
        )
        if gate is not None:
            a = attrs(gate)
            want = {
                "mcp.method.name": "tools/call",
                "jsonrpc.request.id": "1",
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": "mcp-1",
                "toolgate.decision": "allow",
                "toolgate.outcome": "ok",
                "toolgate.principal": "operator",
                "toolgate.attempts": 1,
            }
            wrong = {k: (v, a.get(k)) for k, v in want.items() if a.get(k) != v}
            check(f"`execute_tool {tool}` has the MCP, GenAI and toolgate attributes", not wrong, wrong)
            check(
                f"`execute_tool {tool}` has a session and effect",
                "toolgate.session" in a and a.get("toolgate.effect") in ("read", "external", "idempotent"),
                a,
            )
            if tool == "fx.echo":
                check(
                    f"`execute_tool {tool}` (not opted in) holds neither arguments nor results",
                    not any(k.startswith("gen_ai.tool.call.") and k != "gen_ai.tool.call.id" for k in a)
                    and "hi" not in [str(v) for v in a.values()],
                    a,
                )
            else:
                recorded = json.loads(a.get("gen_ai.tool.call.arguments") or "{}")
                check(
                    "`execute_tool get_order` records the arguments the spec names, the secret redacted",
                    recorded.get("id") == "A-1"
                    and recorded.get("api_token") == "[redacted]"
                    and "other" not in recorded
                    and "pin" not in recorded,
                    a,
                )
                check(
                    "a long argument in the span is cut",
                    recorded.get("note", "").startswith("nnn") and len(recorded.get("note", "")) < 400,
                    len(recorded.get("note", "")),
                )
                check(
                    "no secret in any span's attributes",
                    not any(SECRET in str(value(kv.value)) for s in got for kv in s.attributes),
                    "",
                )
        detail = ("toolgate.execute", "toolgate.attempt", "toolgate.store.commit")
        if args.spans == "all":
            execute = one("toolgate.execute", trace)
            child(gate, execute, f"`toolgate.execute` of {tool} is the child of its gate span")
            attempt = one("toolgate.attempt", trace)
            child(execute, attempt, f"`toolgate.attempt` of {tool} is the child of its execution")
            commits = [s for s in got if s.name == "toolgate.store.commit" and s.trace_id.hex() == trace]
            check(f"the call to {tool} has a `toolgate.store.commit` span", bool(commits), f"\n{listing}")
        else:
            # Without TOOLGATE_OTEL_SPANS=all, the detail spans are not exported,
            # and what the tool calls is the gate span's child.
            extra = [s.name for s in got if s.name in detail and s.trace_id.hex() == trace]
            check(f"the call to {tool} exports no detail spans by default", not extra, extra)
            attempt = gate
        if tool == "get_order":
            http = one("GET", trace)
            child(attempt, http, f"the binding's `GET` span is the child of the {'attempt' if args.spans == 'all' else 'gate span'}")
            if http is not None:
                a = attrs(http)
                check(
                    "`GET` is a client span with the HTTP attributes",
                    http.kind == Span.SPAN_KIND_CLIENT
                    and a.get("http.request.method") == "GET"
                    and a.get("http.response.status_code") == 200
                    and a.get("url.path") == "/orders/A-1",
                    a,
                )
                sent = [t for t in traceparents if t]
                check(
                    "the API got the binding's span in `traceparent`",
                    sent == [f"00-{trace}-{http.span_id.hex()}-01"],
                    f"{traceparents} vs {http.span_id.hex()}",
                )
        else:
            upstream = one("tools/call echo", trace)
            child(attempt, upstream, f"the upstream `tools/call echo` span is the child of the {'attempt' if args.spans == 'all' else 'gate span'}")
            if upstream is not None:
                check(
                    "`tools/call echo` is a client span",
                    upstream.kind == Span.SPAN_KIND_CLIENT,
                    upstream.kind,
                )
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
