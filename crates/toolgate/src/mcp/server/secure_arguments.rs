//! Secure arguments (SEP-3221, a draft): values an MCP host sends beside a
//! `tools/call`'s `arguments`, in `params.secureArguments`, for the parameters
//! a tool lists under `secureInputSchema` — the parameters its spec fills with
//! `inject: {PARAM: "{host}"}`. The model never sees or chooses them. (A served
//! tool lists that schema in its `_meta`, under `toolgate/secureInputSchema`:
//! the SDK's tool type has no top-level field for it.)
//!
//! The SDK's request type has no such field and drops it, so on the HTTP
//! transport a request that carries one has it moved, before the SDK reads the
//! body, into `params._meta` under [`SECURE_META`], where the call handler
//! reads it. (A host may also put it there itself.) The stdio transport reads
//! only `_meta`.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

/// The `_meta` key a call's secure arguments are read from.
pub(crate) const SECURE_META: &str = "toolgate/secure_arguments";

/// The field SEP-3221 puts beside `arguments`.
const FIELD: &[u8] = b"secureArguments";

/// Moves each `tools/call`'s `params.secureArguments` into its `_meta`; a body
/// that names none passes as it came. A body past `limit` is left to the
/// transport, which refuses it.
pub(crate) async fn carry(limit: usize, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            )
                .into_response();
        }
    };
    let bytes = if bytes.windows(FIELD.len()).any(|w| w == FIELD) {
        moved(&bytes).map_or(bytes, Into::into)
    } else {
        bytes
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The body with every `tools/call`'s secure arguments under `_meta`, or
/// `None` when it is not JSON or has none to move.
fn moved(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut body: Value = serde_json::from_slice(bytes).ok()?;
    let mut changed = false;
    match &mut body {
        Value::Array(messages) => messages.iter_mut().for_each(|m| changed |= move_in(m)),
        message => changed = move_in(message),
    }
    changed.then(|| serde_json::to_vec(&body).ok()).flatten()
}

fn move_in(message: &mut Value) -> bool {
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return false;
    }
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return false;
    };
    let Some(secure) = params.remove("secureArguments") else {
        return false;
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(SECURE_META.to_owned(), secure);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_calls_secure_arguments_move_under_its_meta_and_nothing_else_changes() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "query", "arguments": {"sql": "select 1"}, "secureArguments": {"instance": "db-04"}
        }});
        let out: Value =
            serde_json::from_slice(&moved(&serde_json::to_vec(&body).unwrap()).unwrap()).unwrap();
        assert_eq!(
            out["params"]["_meta"][SECURE_META],
            json!({"instance": "db-04"})
        );
        assert!(out["params"].get("secureArguments").is_none());
        let listed = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"secureArguments": 1}});
        assert_eq!(moved(&serde_json::to_vec(&listed).unwrap()), None);
        assert_eq!(moved(b"not json secureArguments"), None);
    }
}
