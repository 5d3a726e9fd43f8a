//! Asking the person at a client of the stateless revision to approve a call.
//!
//! That revision has no server-to-client requests: a `tools/call` that needs an
//! answer comes back `input_required`, carrying the question (an elicitation
//! form, the same one session clients get) and an opaque `requestState`; the
//! client asks its user and calls again with the answer in `inputResponses` and
//! the state echoed. The state names the approval and is sealed (HMAC-SHA256
//! with a key of this server process, bound to the principal, conversation and
//! tool, expiring with the approval timeout), so a client cannot answer an
//! approval it was not asked, in another conversation, or after the question
//! lapsed. The answer is recorded in the approvals store like one given with
//! `toolgate approvals approve`, and the retried call is then decided by it.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequiredResult,
    InputResponses, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};

use super::approval::{self, Answer};
use crate::Gate;
use crate::store::ApprovalStore;

/// The key of the approval question among a result's input requests.
const INPUT_KEY: &str = "approval";

/// Seals and opens the `requestState` of approval questions.
pub(crate) struct ApprovalQuestions {
    codec: RequestStateCodec,
    ttl: Duration,
}

/// What the sealed state says.
#[derive(Serialize, Deserialize)]
struct Asked {
    approval_id: String,
}

/// What a retried call carried.
#[derive(Debug)]
pub(crate) struct Retry {
    pub(crate) approval_id: String,
    /// `None` when the retry carried no answer (ask again).
    pub(crate) answer: Option<Answer>,
}

impl ApprovalQuestions {
    /// Questions that a client may answer within `ttl`, sealed with a fresh key.
    pub(crate) fn new(ttl: Duration) -> Self {
        let mut key = Vec::with_capacity(32);
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        ApprovalQuestions {
            codec: RequestStateCodec::new_unchecked(key),
            ttl,
        }
    }

    /// The `input_required` result asking to approve `approval_id`, for the call
    /// identified by `binding` (see [`binding`]).
    pub(crate) fn ask(
        &self,
        gate: &Gate,
        approval_id: &str,
        reason: &str,
        binding: &[u8],
    ) -> InputRequiredResult {
        let approval = ApprovalStore::get(gate.store().as_ref(), approval_id)
            .ok()
            .flatten();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: approval::question(approval_id, reason, approval.as_ref()),
            requested_schema: approval::schema(),
        };
        let requests = BTreeMap::from([(
            INPUT_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        )]);
        let asked = Asked {
            approval_id: approval_id.to_owned(),
        };
        let options = SealOptions::new().associated_data(binding).ttl(self.ttl);
        let state = self.codec.seal_json_with(&asked, &options).ok();
        InputRequiredResult::new(Some(requests), state)
    }

    /// Reads a retried call's state and answer. An error when the state was not
    /// sealed by this server for this call, or has expired.
    pub(crate) fn retry(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        binding: &[u8],
    ) -> Result<Retry, McpError> {
        let asked: Asked = self.codec.open_json_with(state, binding).map_err(|_| {
            McpError::invalid_params(
                format!(
                    "the requestState of this call was not issued by this server for this call, \
                     was changed, or has expired (an approval question lasts {}); call the tool \
                     again without requestState and inputResponses",
                    humantime::format_duration(self.ttl)
                ),
                None,
            )
        })?;
        let answer = responses
            .and_then(|responses| responses.get(INPUT_KEY))
            .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
            .map(|result| approval::answer_of(&result));
        Ok(Retry {
            approval_id: asked.approval_id,
            answer,
        })
    }
}

/// The bytes a question is bound to: who calls, in which conversation, which tool.
pub(crate) fn binding(principal: &str, conversation: &str, tool: &str) -> Vec<u8> {
    [principal, conversation, tool].join("\u{0}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn questions() -> ApprovalQuestions {
        ApprovalQuestions::new(Duration::from_secs(60))
    }

    fn sealed(questions: &ApprovalQuestions, binding: &[u8]) -> String {
        let options = SealOptions::new()
            .associated_data(binding)
            .ttl(questions.ttl);
        let asked = Asked {
            approval_id: "ap-1".into(),
        };
        questions.codec.seal_json_with(&asked, &options).unwrap()
    }

    #[test]
    fn an_answer_in_the_retry_decides_the_approval_it_was_asked_for() {
        let questions = questions();
        let bound = binding("operator", "mcp-c1", "refund");
        let state = sealed(&questions, &bound);
        let responses = InputResponses::from([(
            INPUT_KEY.to_owned(),
            json!({"action": "accept", "content": {"approve": false}}),
        )]);
        let retry = questions.retry(&state, Some(&responses), &bound).unwrap();
        assert_eq!(retry.approval_id, "ap-1");
        assert_eq!(retry.answer, Some(Answer::Deny));
        let retry = questions.retry(&state, None, &bound).unwrap();
        assert_eq!(retry.answer, None);
    }

    #[test]
    fn a_state_from_another_conversation_or_changed_by_the_client_is_refused() {
        let questions = questions();
        let state = sealed(&questions, &binding("operator", "mcp-c1", "refund"));
        let other = binding("operator", "mcp-c2", "refund");
        let refused = questions.retry(&state, None, &other).unwrap_err();
        assert!(
            refused.message.contains("call the tool again"),
            "{refused:?}"
        );
        let mut tampered = state.clone();
        tampered.push('A');
        let bound = binding("operator", "mcp-c1", "refund");
        assert!(questions.retry(&tampered, None, &bound).is_err());
        assert!(
            ApprovalQuestions::new(Duration::from_secs(60))
                .retry(&state, None, &bound)
                .is_err(),
            "another server process's key does not open it"
        );
    }
}
