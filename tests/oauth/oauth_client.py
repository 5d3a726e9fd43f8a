"""`toolgate serve --http` as an OAuth resource server in front of a real
authorization server (oidc-provider, tests/oauth/provider.mjs), driven by the
official Python MCP SDK's client (`mcp`, pinned in tests/sdk/requirements.txt)
with its own client-credentials OAuth flow: it meets the 401, finds the protected
resource metadata from the challenge, the authorization server's metadata from
that, asks for a token for the server's URL, and retries.

Run by scripts/oauth-interop:  python oauth_client.py --url URL --issuer ISSUER
Prints one line per check and `N passed, N failed` last; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import traceback

import httpx2
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

RESULTS: list[tuple[str, bool]] = []

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def check(name: str, ok: bool, detail: str = "") -> None:
    RESULTS.append((name, ok))
    print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}", flush=True)


class Tokens:
    """Keeps what the SDK's OAuth flow gets, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Caller:
    """One OAuth client of the authorization server, as the SDK's client: its
    tokens, and the MCP session ids the server gave it."""

    def __init__(self, url: str, issuer: str, client_id: str, scope: str) -> None:
        self.storage = Tokens()
        self.sessions: list[str] = []
        auth = ClientCredentialsOAuthProvider(
            server_url=url,
            storage=self.storage,
            client_id=client_id,
            client_secret=f"{client_id}-secret",
            scope=scope,
            issuer=issuer,
        )
        self.http = create_mcp_http_client(auth=auth)
        self.http.event_hooks["response"].append(self._note_session)
        self.url = url

    async def _note_session(self, response: httpx2.Response) -> None:
        session = response.headers.get("mcp-session-id")
        if session and session not in self.sessions:
            self.sessions.append(session)

    def client(self, mode: str) -> Client:
        return Client(streamable_http_client(self.url, http_client=self.http, terminate_on_close=False), mode=mode)

    @property
    def token(self) -> str:
        return self.storage.tokens.access_token if self.storage.tokens else ""


def text_of(result) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)


async def discovery(url: str, issuer: str) -> str | None:
    """Checks the way from a 401 to the authorization server; its token endpoint."""
    async with httpx2.AsyncClient() as http:
        refused = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
        challenge = refused.headers.get("www-authenticate", "")
        check("a request without a token gets 401", refused.status_code == 401, str(refused.status_code))
        found = re.search(r'resource_metadata="([^"]+)"', challenge)
        check("the 401 challenge names the protected resource metadata", found is not None, challenge)
        if not found:
            return None
        metadata = (await http.get(found.group(1))).json()
        check(
            "the resource metadata names this server and the authorization server",
            metadata.get("resource") == url and metadata.get("authorization_servers") == [issuer],
            str(metadata),
        )
        server = metadata["authorization_servers"][0]
        answer = await http.get(f"{server}/.well-known/oauth-authorization-server")
        document = answer.json() if answer.status_code == 200 else {}
        check(
            "the authorization server's metadata is found from the resource metadata",
            document.get("issuer") == issuer and "token_endpoint" in document and "jwks_uri" in document,
            f"{answer.status_code} {str(document)[:200]}",
        )
        return document.get("token_endpoint")


async def token_for(token_endpoint: str, url: str, client_id: str, scope: str) -> str:
    """An access token for `url` asked for by hand (the SDK's flow asks for the
    scopes the server's challenge names, so a narrower ask goes around it)."""
    async with httpx2.AsyncClient() as http:
        answer = await http.post(
            token_endpoint,
            data={"grant_type": "client_credentials", "scope": scope, "resource": url},
            auth=(client_id, f"{client_id}-secret"),
        )
        return answer.json().get("access_token", "")


async def names(client: Client) -> list[str]:
    return sorted(tool.name for tool in (await client.list_tools()).tools)


async def run(url: str, issuer: str) -> None:
    token_endpoint = await discovery(url, issuer)

    widget = Caller(url, issuer, "helpdesk-widget", "tools")
    ops = Caller(url, issuer, "ops-console", "tools")

    async with widget.client("legacy") as client:
        listed = await names(client)
        check("the SDK's client gets a token from the 401 and connects", bool(widget.token), "no token")
        check("the widget (groups: support) sees its own tools/list", listed == ["lookup"], str(listed))
        result = await client.call_tool("lookup", {})
        check("the widget's allowed call succeeds", not result.is_error, text_of(result)[:200])
        try:
            refused = await client.call_tool("update", {})
            ok, detail = refused.is_error, text_of(refused)[:200]
        except Exception as error:  # an MCP error answer is a refusal too
            ok, detail = True, str(error)
        check("the widget cannot call a tool outside its principal", ok, detail)

    async with ops.client("legacy") as client:
        listed = await names(client)
        check("the ops console (groups: ops) sees its own tools/list", listed == ["lookup", "update"], str(listed))
        result = await client.call_tool("update", {})
        check("the ops console's write call succeeds", not result.is_error, text_of(result)[:200])

    if token_endpoint:
        token = await token_for(token_endpoint, url, "ops-console", "tools toolgate:lookup")
        http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            listed = await names(client)
        check("a token asking only for toolgate:lookup narrows the ops console to it", listed == ["lookup"], str(listed))

    for caller, expected, who in [(widget, ["lookup"], "widget"), (ops, ["lookup", "update"], "ops console")]:
        async with caller.client("auto") as client:
            listed = await names(client)
            check(f"stateless (2026-07-28): the {who} sees its own tools/list", listed == expected, str(listed))

    # The widget's session id, presented with the ops console's token.
    if not widget.sessions:
        check("the other client's session id is refused", False, "the widget got no session id")
        return
    async with httpx2.AsyncClient() as http:
        answer = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
            headers={
                **MCP_HEADERS,
                "authorization": f"Bearer {ops.token}",
                "mcp-session-id": widget.sessions[0],
                "mcp-protocol-version": "2025-11-25",
            },
        )
        body = answer.text
        check(
            "the other client's session id is refused",
            "opened with another credential" in body and '"tools"' not in body,
            f"{answer.status_code} {body[:200]}",
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--issuer", required=True)
    args = parser.parse_args()
    try:
        asyncio.run(asyncio.wait_for(run(args.url, args.issuer), timeout=60))
    except Exception:
        traceback.print_exc()
        check("the checks finish", False, "see the traceback above")
    failed = sum(1 for _, ok in RESULTS if not ok)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
