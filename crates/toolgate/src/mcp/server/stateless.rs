//! What a request of the stateless revision (2026-07-28) carries in place of a
//! session: the toolgate conversation it belongs to, and what its client can do.
//!
//! A client of that revision has no session, so it names its conversation in
//! every request: `_meta["toolgate/conversation"]` (or, for a client that can
//! only set headers, `Toolgate-Conversation`). Requests naming the same id share
//! state, call history and flow position; a request naming none is in the
//! server's default conversation, so a flow's `once` and `never_until` hold for a
//! client that names nothing as for one that always names the same id.

// The per-request log level of 2026-07-28 is deprecated with MCP logging.
#![allow(deprecated)]

use rmcp::model::LoggingLevel;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;

/// The `_meta` key naming a stateless request's conversation.
pub const CONVERSATION_META: &str = "toolgate/conversation";

/// The HTTP header naming it, for clients that cannot set `_meta`.
pub const CONVERSATION_HEADER: &str = "toolgate-conversation";

/// The conversation of a stateless request that names none.
pub const DEFAULT_CONVERSATION: &str = "default";

/// The longest conversation id taken.
const MAX_ID_LEN: usize = 128;

/// Whether the request is of a revision without sessions.
pub(crate) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// The conversation id a stateless request names, checked; `None` when it names
/// none.
pub(crate) fn named_conversation(
    context: &RequestContext<RoleServer>,
) -> Result<Option<String>, McpError> {
    let from_meta = match context.meta.get(CONVERSATION_META) {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.as_str()),
        Some(_) => return Err(bad_id(&format!("`_meta.{CONVERSATION_META}`"))),
    };
    let from_header = || {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get(CONVERSATION_HEADER))
            .map(|value| value.to_str().ok())
    };
    let (id, source) = match from_meta {
        Some(id) => (Some(id), format!("`_meta.{CONVERSATION_META}`")),
        None => match from_header() {
            Some(id) => (id, format!("the `{CONVERSATION_HEADER}` header")),
            None => return Ok(None),
        },
    };
    match id {
        Some(id) if valid_id(id) => Ok(Some(id.to_owned())),
        _ => Err(bad_id(&source)),
    }
}

/// Whether this request's client can show its user a form (MCP elicitation): as
/// it says in the request's `_meta` on the stateless revision, as it said at
/// `initialize` otherwise.
pub(crate) fn can_elicit_form(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The log level a stateless request asked for; `None` means it wants no logs.
pub(crate) fn log_level(context: &RequestContext<RoleServer>) -> Option<LoggingLevel> {
    context.meta.log_level()
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

fn bad_id(source: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "{source} must name the conversation in 1 to {MAX_ID_LEN} letters, digits, `.`, `_`, `:` or `-` \
             (e.g. a UUID); leave it out to use the server's default conversation"
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_id_is_short_and_plain() {
        assert!(valid_id("c7f3a0e2-1b4d-4c8e-9f6a-2d5b7e9c1a3f"));
        assert!(valid_id("team.alpha:run_7"));
        assert!(!valid_id(""));
        assert!(!valid_id("has space"));
        assert!(!valid_id("new\nline"));
        assert!(!valid_id("ünïcode"));
        assert!(!valid_id(&"x".repeat(MAX_ID_LEN + 1)));
    }
}
