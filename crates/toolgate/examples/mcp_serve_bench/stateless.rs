//! The stateless lifecycle of the 2026-07-28 revision, driven as plain HTTP: no
//! `initialize`, no session; every request is one JSON-RPC POST carrying the
//! client's protocol version and capabilities in `_meta` and the revision's
//! headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).
//!
//! Plain HTTP rather than rmcp's client in `ClientLifecycleMode::Discover`: on the
//! two cores the bench shares with the servers, every cycle the client spends is
//! one the server under test does not get, and rmcp's client routes each call
//! through its peer, a transport worker and an SSE decoder. One small body, the
//! keep-alive connections of one HTTP client per simulated client, and a scan of
//! the answer for its `data:` line leave the server's work as the bulk of what is
//! measured (the bench reports the client's CPU per call beside the server's).

use serde_json::{Value, json};

/// The revision whose lifecycle this is.
const PROTOCOL: &str = "2026-07-28";

/// One simulated stateless client: its own connection and its own toolgate
/// conversation (`_meta["toolgate/conversation"]`), which a bare server ignores.
pub struct Client {
    http: reqwest::Client,
    url: String,
    conversation: String,
}

impl Client {
    /// A client named `conversation` that has discovered the server at `url`, as a
    /// stateless client does once before it calls.
    /// `token`, when given, is sent as `Authorization: Bearer` with every request.
    pub async fn discover(
        url: &str,
        conversation: String,
        token: Option<&str>,
    ) -> Result<Self, String> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = token {
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|e| format!("the token is not a header value: {e}"))?;
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .map_err(|e| format!("the HTTP client builds: {e}"))?;
        let client = Client {
            http,
            url: url.to_owned(),
            conversation,
        };
        let result = client
            .request(0, "server/discover", None, json!({}))
            .await?;
        let versions = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                format!("server/discover answered without supportedVersions: {result}")
            })?;
        if !versions.iter().any(|v| v == PROTOCOL) {
            return Err(format!("the server does not speak {PROTOCOL}: {result}"));
        }
        Ok(client)
    }

    /// Calls the bench's tool, by the name `tool` it is served under, with
    /// `order_id`; an error result, or one that is not complete
    /// (`input_required`), is an error.
    pub async fn call_tool(&self, id: u64, tool: &str, order_id: &str) -> Result<(), String> {
        let params = json!({"name": tool, "arguments": {"order_id": order_id}});
        let result = self.request(id, "tools/call", Some(tool), params).await?;
        let complete = result
            .get("resultType")
            .is_none_or(|kind| kind == "complete");
        if result.get("isError") == Some(&Value::Bool(true)) || !complete {
            return Err(format!("the call did not succeed: {result}"));
        }
        Ok(())
    }

    /// Posts one request and returns its result: the JSON-RPC error, a non-2xx
    /// status or an answer without a result is an error.
    async fn request(
        &self,
        id: u64,
        method: &str,
        name: Option<&str>,
        mut params: Value,
    ) -> Result<Value, String> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "mcp_serve_bench", "version": "1.0.0"},
            "toolgate/conversation": self.conversation,
        });
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut post = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .header("mcp-method", method);
        if let Some(name) = name {
            post = post.header("mcp-name", name);
        }
        let response = post
            .body(serde_json::to_vec(&body).map_err(|e| e.to_string())?)
            .send()
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        let status = response.status();
        let mut message = answer(response)
            .await
            .map_err(|e| format!("{method}: {status}: {e}"))?;
        if let Some(error) = message.get("error") {
            return Err(format!("{method}: {status}: {error}"));
        }
        message
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| format!("{method}: {status}: no result in {message}"))
    }
}

/// The JSON-RPC answer of a response: its body (`application/json`), or the
/// first event of its stream that holds one, read as soon as that event is in.
///
/// The rest of a stream is read by a task of its own, as a streaming client does:
/// a server that writes the stream's end as a segment of its own without
/// `TCP_NODELAY` has it wait for the client's delayed ACK (40 ms on Linux), and
/// the connection goes back to the pool only then.
async fn answer(mut response: reqwest::Response) -> Result<Value, String> {
    let stream = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !stream {
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        return serde_json::from_slice(&body)
            .map_err(|e| format!("{e} in {}", String::from_utf8_lossy(&body)));
    }
    let mut buffer = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|e| e.to_string())?;
        let Some(chunk) = chunk else {
            let body = String::from_utf8_lossy(&buffer);
            return Err(format!(
                "the event stream ended without an answer: {body:?}"
            ));
        };
        buffer.extend_from_slice(&chunk);
        if let Some(message) = event_answer(&buffer) {
            tokio::spawn(async move { while let Ok(Some(_)) = response.chunk().await {} });
            return Ok(message);
        }
    }
}

/// The first JSON-RPC message in the complete events (ended by a blank line) of
/// an event stream's start.
fn event_answer(stream: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(stream).ok()?;
    let complete = &text[..text.rfind("\n\n")?];
    complete
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .find_map(|data| serde_json::from_str(data).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_read_from_the_first_complete_event_that_holds_one() {
        let answer = r#"data: {"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert_eq!(event_answer(b"id: 0\nretry: 3000\ndata:\n\n"), None);
        assert_eq!(event_answer(answer.as_bytes()), None, "not complete yet");
        let stream = format!("data:\n\n{answer}\n\n");
        assert_eq!(
            event_answer(stream.as_bytes()),
            Some(json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
        );
    }
}
