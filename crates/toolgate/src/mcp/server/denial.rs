//! Structured authorization denials: the draft MCP extension SEP-2643
//! (`io.modelcontextprotocol/structured-authorization-denials`, as the pull
//! request stood on 2026-08-21), on a refused call's result.
//!
//! A refused `tools/call` answers with an `isError` result whose
//! `_meta["io.modelcontextprotocol/authorization"]` says why, so a client can
//! act on it without reading the text: `reason: "insufficient_authorization"`
//! and `remediation`:
//!
//! - `unavailable`: nothing the caller can do makes this call pass (the policy
//!   denies it, a person denied it);
//! - `undisclosed`: a remedy exists that this client cannot drive itself (a
//!   person can approve the call out of band), with `authorizationContextId`
//!   naming the approval, which the client echoes on its retry.
//!
//! The text for clients that read none of it stays as it was. The envelope is
//! put only on results where nothing ran. It is a draft that may change, so
//! `ServeOptions::authorization_denials` turns it off.

use rmcp::model::{CallToolResult, MetaObject};
use serde_json::{Value, json};

use crate::Outcome;

/// The `_meta` key of the envelope.
pub(crate) const AUTHORIZATION_META: &str = "io.modelcontextprotocol/authorization";

/// The draft this module follows: SEP-2643 as of this date.
pub const AUTHORIZATION_DENIALS_DRAFT: &str = "SEP-2643 (2026-08-21)";

/// `result` with the envelope `outcome` calls for, if it is a refusal of
/// authorization.
pub(crate) fn with_denial(result: CallToolResult, outcome: &Outcome) -> CallToolResult {
    match outcome {
        Outcome::Denied { .. } => with_envelope(result, unavailable()),
        Outcome::PendingApproval { approval_id, .. } => awaiting(result, approval_id),
        _ => result,
    }
}

/// `result` (a call waiting for a person) with the envelope saying a remedy
/// exists out of band, naming the approval.
pub(crate) fn awaiting(result: CallToolResult, approval_id: &str) -> CallToolResult {
    let envelope = json!({
        "reason": "insufficient_authorization",
        "remediation": "undisclosed",
        "authorizationContextId": approval_id,
    });
    with_envelope(result, envelope)
}

fn unavailable() -> Value {
    json!({"reason": "insufficient_authorization", "remediation": "unavailable"})
}

fn with_envelope(mut result: CallToolResult, envelope: Value) -> CallToolResult {
    let meta = result
        .meta
        .get_or_insert_with(|| MetaObject(Default::default()));
    meta.0.insert(AUTHORIZATION_META.to_owned(), envelope);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::server::result::error_result;

    fn envelope(result: &CallToolResult) -> Option<&Value> {
        result.meta.as_ref()?.0.get(AUTHORIZATION_META)
    }

    #[test]
    fn a_denial_is_unavailable_and_a_pending_approval_undisclosed_with_its_id() {
        let denied = Outcome::Denied {
            reason: "no".into(),
        };
        let result = with_denial(error_result("no"), &denied);
        assert_eq!(envelope(&result).unwrap()["remediation"], "unavailable");
        assert_eq!(result.is_error, Some(true));

        let pending = Outcome::PendingApproval {
            approval_id: "ap-00000001".into(),
            reason: "ask".into(),
        };
        let result = with_denial(error_result("wait"), &pending);
        let envelope = envelope(&result).unwrap();
        assert_eq!(envelope["remediation"], "undisclosed");
        assert_eq!(envelope["authorizationContextId"], "ap-00000001");
        assert!(envelope.get("remediationHints").is_none());
    }

    #[test]
    fn an_error_or_a_success_carries_no_envelope() {
        let failed = Outcome::error("it broke", true);
        assert!(envelope(&with_denial(error_result("it broke"), &failed)).is_none());
    }
}
