//! Asking the person at the MCP client to approve a call, through elicitation.
//!
//! When the policy says `ask`, the gate opens an approval and answers
//! `PendingApproval`. If the client can show a form, the server asks there (a
//! yes/no question naming the tool, its arguments as recorded — secrets redacted —
//! and the reason) and records the answer in the approvals store, so the re-run
//! call is decided the same way as one approved with `toolgate approvals approve`.
//! Without an answer the approval stays open for the operator.

use std::time::{Duration, SystemTime};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::store::ApprovalStore;
use crate::{Approval, Gate};

/// The form field that carries the answer.
const APPROVE_FIELD: &str = "approve";

/// The reason recorded when the person declines in the client.
const DECLINED: &str = "declined in the MCP client";

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    Approve,
    Deny,
    /// No decision: dismissed, timed out, or the client could not ask. Says which.
    None(String),
}

/// Asks the client's user to approve `approval_id`; gives up after `timeout` or
/// when `cancel` fires.
pub(crate) async fn ask(
    peer: &Peer<RoleServer>,
    gate: &Gate,
    approval_id: &str,
    reason: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Answer {
    let approval = ApprovalStore::get(gate.store().as_ref(), approval_id)
        .ok()
        .flatten();
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question(approval_id, reason, approval.as_ref()),
        requested_schema: schema(),
    };
    let asked = tokio::select! {
        asked = peer.create_elicitation_with_timeout(params, Some(timeout)) => asked,
        _ = cancel.cancelled() => return Answer::None("the server is shutting down".into()),
    };
    match asked {
        Ok(result) => answer_of(&result),
        Err(ServiceError::Timeout { .. }) => Answer::None(format!(
            "no answer within {}",
            humantime::format_duration(timeout)
        )),
        Err(e) => Answer::None(format!("the client could not ask ({e})")),
    }
}

/// What an elicitation's result says of the approval.
pub(super) fn answer_of(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => {
            let approve = result
                .content
                .as_ref()
                .and_then(|c| c.get(APPROVE_FIELD))
                .and_then(Value::as_bool)
                .unwrap_or(true);
            if approve {
                Answer::Approve
            } else {
                Answer::Deny
            }
        }
        ElicitationAction::Decline => Answer::Deny,
        ElicitationAction::Cancel => Answer::None("the person dismissed the question".into()),
        _ => Answer::None("the client answered in a way this server does not know".into()),
    }
}

/// Records the answer in the approvals store. An approval someone else decided
/// meanwhile is left as they decided it.
pub(crate) fn record(gate: &Gate, approval_id: &str, answer: &Answer) {
    let store = gate.store().as_ref();
    let recorded = match answer {
        Answer::Approve => store
            .approve(approval_id, None, SystemTime::now())
            .map(drop),
        Answer::Deny => store
            .deny(approval_id, Some(DECLINED), SystemTime::now())
            .map(drop),
        Answer::None(_) => Ok(()),
    };
    if let Err(e) = recorded {
        tracing::warn!(
            approval_id,
            "cannot record the answer from the MCP client: {e}"
        );
    }
}

/// What a call waiting for a person tells the model when nobody answered here.
pub(crate) fn pending_message(approval_id: &str, reason: &str, why: Option<&str>) -> String {
    let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
    format!(
        "this call is waiting for a human's approval: {reason}. Nobody approved it here{why}; \
         the approval id is {approval_id}. A person can approve it with \
         `toolgate approvals approve {approval_id}` (or refuse with `toolgate approvals deny {approval_id}`); \
         tell the user, and call the tool again with the same arguments once it is approved."
    )
}

pub(super) fn question(approval_id: &str, reason: &str, approval: Option<&Approval>) -> String {
    let mut text = match approval {
        Some(a) => format!(
            "Allow `{}` to run with these arguments?\n{}\n",
            a.tool,
            serde_json::to_string_pretty(&a.arguments).unwrap_or_default()
        ),
        None => "Allow this tool call to run?\n".to_owned(),
    };
    text.push_str(&format!(
        "You are asked because {reason}. (Approval {approval_id}; toolgate records your answer.)"
    ));
    text
}

pub(super) fn schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .optional_bool_with(APPROVE_FIELD, |b| {
            b.title("Approve this call")
                .description(
                    "Leave it checked and accept to let the call run once; decline to refuse it.",
                )
                .with_default(true)
        })
        .build_unchecked()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_form_is_one_checkbox_that_defaults_to_approve() {
        let schema = serde_json::to_value(schema()).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["approve"]["type"], "boolean");
        assert_eq!(schema["properties"]["approve"]["default"], true);
        assert_eq!(schema.get("required"), None);
    }

    #[test]
    fn the_question_names_the_tool_its_arguments_and_the_reason() {
        let approval = Approval {
            id: "ap-1234abcd".into(),
            session: "s".into(),
            tool: "refund_order".into(),
            arguments: json!({"order_id": "A-1", "password": "[redacted]"}),
            args_hash: String::new(),
            principal: "operator".into(),
            reason: "the policy for external tools is ask".into(),
            status: crate::ApprovalStatus::Pending,
            answer: None,
            created_at: String::new(),
            decided_at: None,
        };
        let text = question("ap-1234abcd", &approval.reason, Some(&approval));
        assert!(text.starts_with("Allow `refund_order` to run"), "{text}");
        assert!(text.contains("\"order_id\": \"A-1\""), "{text}");
        assert!(
            text.contains("because the policy for external tools is ask"),
            "{text}"
        );
        assert!(text.contains("ap-1234abcd"), "{text}");
    }

    #[test]
    fn the_pending_message_says_how_to_approve() {
        let text = pending_message("ap-0000beef", "the policy for write tools is ask", None);
        assert!(
            text.contains("`toolgate approvals approve ap-0000beef`"),
            "{text}"
        );
        assert!(text.contains("call the tool again"), "{text}");
    }
}
