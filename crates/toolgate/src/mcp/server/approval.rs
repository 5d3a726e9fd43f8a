//! Asking the person at the MCP client to approve a call, through elicitation.
//!
//! When the policy says `ask`, the gate opens an approval and answers
//! `PendingApproval`. If the client can show a form, the server asks there (a
//! yes/no question naming the tool, its arguments as recorded — secrets redacted —
//! and the reason) and records the answer in the approvals store, so the re-run
//! call is decided the same way as one approved with `toolgate approvals approve`.
//! Without an answer the approval stays open for the operator.
//!
//! The client's answer counts only where the rule that asked lets the client
//! answer (`answered_by: client` or `either`, as a flow's `confirm:` does): the
//! gate cannot know that a person, rather than the client program, answered, so
//! a policy `ask` waits for an approver by default and its question is not put to
//! the client at all. An `accept` counts only with `approve: true` in its content.

use std::time::{Duration, SystemTime};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use toolgate_core::Answerer;

use crate::store::ApprovalStore;
use crate::{Gate, store::Approval};

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

/// Why the client may not answer `approval_id`, if it may not: the rule that
/// asked wants an approver.
pub(crate) fn client_may_not_answer(gate: &Gate, approval_id: &str) -> Option<String> {
    let approval = ApprovalStore::get(gate.store().as_ref(), approval_id)
        .ok()
        .flatten()?;
    (!approval.answered_by.client_may_answer()).then(|| {
        "the rule that asked wants an approver's answer, which the MCP client cannot give"
            .to_owned()
    })
}

/// Asks the client's user to approve `approval_id`; gives up after `timeout` or
/// when `cancel` fires. A call only an approver may answer is not asked.
pub(crate) async fn ask(
    peer: &Peer<RoleServer>,
    gate: &Gate,
    approval_id: &str,
    reason: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Answer {
    if let Some(why) = client_may_not_answer(gate, approval_id) {
        return Answer::None(why);
    }
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

/// What an elicitation's result says of the approval: an `accept` approves
/// only with `approve: true` in its content (an empty `accept` is no answer).
pub(super) fn answer_of(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => {
            let approve = result
                .content
                .as_ref()
                .and_then(|c| c.get(APPROVE_FIELD))
                .and_then(Value::as_bool);
            match approve {
                Some(true) => Answer::Approve,
                Some(false) => Answer::Deny,
                None => Answer::None(
                    "the client accepted without `approve: true` in its answer, which is no approval"
                        .into(),
                ),
            }
        }
        ElicitationAction::Decline => Answer::Deny,
        ElicitationAction::Cancel => Answer::None("the person dismissed the question".into()),
        _ => Answer::None("the client answered in a way this server does not know".into()),
    }
}

/// Records the answer `by` gave in the approvals store, where the rule that
/// asked lets the client answer; an approval someone else decided meanwhile is
/// left as they decided it.
pub(crate) fn record(gate: &Gate, approval_id: &str, answer: &Answer, by: &Answerer) {
    if matches!(answer, Answer::None(_)) {
        return;
    }
    if let Some(why) = client_may_not_answer(gate, approval_id) {
        tracing::warn!(approval_id, "not recording the MCP client's answer: {why}");
        return;
    }
    let store = gate.store().as_ref();
    let recorded = match answer {
        Answer::Approve => store
            .approve_by(approval_id, None, by, SystemTime::now())
            .map(drop),
        Answer::Deny => store
            .deny_by(approval_id, Some(DECLINED), by, SystemTime::now())
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

/// How often a call held for an approver looks for the answer: the store is
/// shared across processes and has no change notification.
const ANSWER_POLL: Duration = Duration::from_millis(100);

/// Waits until someone answers `approval_id` (in the console, or with `toolgate
/// approvals` in another process), for at most `timeout`; `true` once it is
/// decided, so the call is run again and takes the answer.
pub(crate) async fn wait_for_answer(
    gate: &Gate,
    approval_id: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if ApprovalStore::no_longer_pending(gate.store().as_ref(), approval_id) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::select! {
            _ = tokio::time::sleep(ANSWER_POLL) => {}
            _ = cancel.cancelled() => return false,
        }
    }
}

/// What a call waiting for a person tells the model when nobody answered here.
pub(crate) fn pending_message(approval_id: &str, reason: &str, why: Option<&str>) -> String {
    let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
    format!(
        "this call is waiting for a human's approval: {reason}. Nobody approved it here{why}; \
         the approval id is {approval_id}. A person can approve it with \
         `toolgate approvals approve {approval_id}` (or refuse with `toolgate approvals deny {approval_id}`), \
         as a principal granted `approve` where the spec file names approvers; \
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
            status: crate::store::ApprovalStatus::Pending,
            answer: None,
            created_at: String::new(),
            decided_at: None,
            answered_by: toolgate_core::AnsweredBy::Client,
            decided_by: None,
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
    fn an_accept_approves_only_with_approve_true() {
        let result =
            |value: serde_json::Value| -> ElicitResult { serde_json::from_value(value).unwrap() };
        assert_eq!(
            answer_of(&result(
                json!({"action": "accept", "content": {"approve": true}})
            )),
            Answer::Approve
        );
        assert_eq!(
            answer_of(&result(
                json!({"action": "accept", "content": {"approve": false}})
            )),
            Answer::Deny
        );
        for empty in [
            json!({"action": "accept"}),
            json!({"action": "accept", "content": {}}),
            json!({"action": "accept", "content": {"approve": "yes"}}),
        ] {
            assert!(
                matches!(answer_of(&result(empty.clone())), Answer::None(_)),
                "{empty}"
            );
        }
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
