"""`toolgate serve`, driven by the official Python MCP SDK's client (`mcp`, pinned in
tests/sdk/requirements.txt), over stdio and over streamable HTTP on loopback, on each
protocol revision the SDK speaks: the session revision (`mode="legacy"`: the
`initialize` handshake) and 2026-07-28 (`mode="auto"`: `server/discover`, then
stateless requests carrying their version and capabilities in `_meta`).

Run by scripts/mcp-interop:  python python_client.py --toolgate PATH --spec FILE
Prints one line per check and `N passed, N failed` last; exits 1 on any failure.
A check listed in PENDING fails as expected (with its reason); one that passes is
a failure, so the list is kept to what is still missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback

from mcp import Client
from mcp.client.stdio import StdioServerParameters

RESULTS: list[tuple[str, bool, str]] = []

# The revisions checked: a label, the SDK's `mode`, and the version it must settle on.
REVISIONS = [("2025-11-25", "legacy", "2025-11-25"), ("2026-07-28", "auto", "2026-07-28")]

# Checks that fail until toolgate has what they need: `revision: transport: check` -> why.
PENDING: dict[str, str] = {}


def check(name: str, ok: bool, detail: str = "") -> None:
    why = PENDING.get(name)
    if why is not None:
        if ok:
            ok, detail = False, "passes; remove it from PENDING in tests/mcp/python_client.py"
        else:
            ok, name = True, f"{name} fails as expected ({why})"
    RESULTS.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}", flush=True)


def text_of(result) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)


async def exercise(client: Client, transport: str, version: str) -> None:
    check(
        f"{transport}: the client settles on protocol version {version}",
        client.protocol_version == version,
        client.protocol_version,
    )
    listed = await client.list_tools()
    names = sorted(tool.name for tool in listed.tools)
    check(
        f"{transport}: tools/list shows what the conversation's flow offers first",
        names == ["escalate_to_human", "search_kb", "verify_customer"],
        str(names),
    )
    verify = next((t for t in listed.tools if t.name == "verify_customer"), None)
    check(
        f"{transport}: annotations come from the effect",
        verify is not None and verify.annotations is not None and verify.annotations.read_only_hint is True,
        repr(verify and verify.annotations),
    )

    result = await client.call_tool("verify_customer", {"email": "ada@example.com", "last4": "4242"})
    check(f"{transport}: a call runs through the gate", not result.is_error, text_of(result)[:200])

    names = sorted(tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools)
    check(
        f"{transport}: the flow opens more tools, and the policy still hides denied ones",
        "lookup_order" in names and "cancel_order" not in names,
        str(names),
    )

    result = await client.call_tool("lookup_order", {"order_id": "ORD-10422"})
    structured = result.structured_content or {}
    check(
        f"{transport}: a read call runs and returns structured content",
        not result.is_error and structured.get("order_id") == "ORD-10422",
        text_of(result)[:200],
    )

    result = await client.call_tool("lookup_order", {})
    check(
        f"{transport}: invalid arguments are an error result naming the field",
        bool(result.is_error) and "order_id" in text_of(result),
        text_of(result)[:200],
    )

    result = await client.call_tool(
        "escalate_to_human", {"ticket_id": "TCK-1", "reason": "the customer asks for a person", "urgency": "normal"}
    )
    check(
        f"{transport}: a call needing approval says how to approve it",
        bool(result.is_error) and re.search(r"toolgate approvals approve ap-[0-9a-f]{8}", text_of(result)) is not None,
        text_of(result)[:200],
    )


async def over_stdio(toolgate: str, spec: str, state: str, mode: str, version: str, label: str) -> None:
    params = StdioServerParameters(
        command=toolgate,
        args=["serve", "--stdio", "-f", spec, "--state-dir", state],
    )
    async with Client(params, mode=mode) as client:
        await exercise(client, f"{label}: stdio", version)


async def over_http(toolgate: str, spec: str, state: str, mode: str, version: str, label: str) -> None:
    server = subprocess.Popen(
        [toolgate, "serve", "--http", "127.0.0.1:0", "-f", spec, "--state-dir", state],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stderr.readline()
        match = re.search(r"http://\S+", line)
        if not match:
            check(f"{label}: http: the server starts", False, line)
            return
        async with Client(match.group(0), mode=mode) as client:
            await exercise(client, f"{label}: http", version)
    finally:
        server.terminate()
        try:
            rest = server.communicate(timeout=20)[1]
            check(f"{label}: http: SIGTERM stops the server cleanly", server.returncode == 0, rest)
        except subprocess.TimeoutExpired:
            server.kill()
            check(f"{label}: http: SIGTERM stops the server cleanly", False, "still running after 20s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--spec", required=True)
    args = parser.parse_args()
    toolgate, spec = os.path.abspath(args.toolgate), os.path.abspath(args.spec)
    for label, mode, version in REVISIONS:
        for name, run in [("stdio", over_stdio), ("http", over_http)]:
            # A fresh state directory: each run starts its conversation from the flow's start.
            with tempfile.TemporaryDirectory() as state:
                try:
                    asyncio.run(run(toolgate, spec, state, mode, version, label))
                except Exception:  # noqa: BLE001 - every failure is reported, not raised
                    check(f"{label}: {name}: the session runs", False, traceback.format_exc())
    passed = sum(1 for _, ok, _ in RESULTS if ok)
    failed = len(RESULTS) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
