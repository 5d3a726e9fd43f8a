//! What a call through the gate came to.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The result of one call through the gate. Every refusal says, in words a model can
/// act on, what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran.
    Ok {
        /// What the tool returned.
        value: Value,
        /// The value as structured content, when the tool declares what it returns.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
        /// The value as text for a model: output from untrusted sources is
        /// sanitized and fenced as data.
        text: String,
        /// Problems noticed after the run, e.g. output that does not match `returns`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
    /// The call did not produce a value.
    Error {
        message: String,
        /// Whether trying again could help.
        retryable: bool,
    },
    /// A human must approve the call first; re-submit it after approval.
    PendingApproval { approval_id: String, reason: String },
    /// The call may not run.
    Denied { reason: String },
    /// A rate limit (`limits.rate`) lets the call through only later; nothing
    /// ran. Calling again after `retry_after_ms` can succeed.
    RateLimited {
        /// The limit, in words.
        limit: String,
        retry_after_ms: u64,
    },
    /// The call was admitted, authorized and recorded, and runs in the background
    /// as a task: [`Gate::task`](crate::Gate::task) and
    /// [`Gate::await_task`](crate::Gate::await_task) read what it came to.
    Started { task_id: String },
}

impl Outcome {
    pub fn error(message: impl Into<String>, retryable: bool) -> Self {
        Outcome::Error {
            message: message.into(),
            retryable,
        }
    }

    /// The short name used in the audit log and `--json` output.
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Ok { .. } => "ok",
            Outcome::Error { .. } => "error",
            Outcome::PendingApproval { .. } => "pending_approval",
            Outcome::Denied { .. } => "denied",
            Outcome::Started { .. } => "started",
            Outcome::RateLimited { .. } => "rate_limited",
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok { .. })
    }

    /// The value, when the tool ran.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Outcome::Ok { value, .. } => Some(value),
            _ => None,
        }
    }

    /// What to tell the model: the value's text, or the refusal.
    pub fn message_for_model(&self) -> String {
        match self {
            Outcome::Ok { text, .. } => text.clone(),
            Outcome::Error { message, .. } => message.clone(),
            Outcome::PendingApproval {
                approval_id,
                reason,
            } => format!(
                "this call is waiting for a human's approval ({reason}); approval id {approval_id}. \
                 Tell the user, and call again once it is approved."
            ),
            Outcome::Denied { reason } => format!("this call is not allowed: {reason}"),
            Outcome::RateLimited {
                limit,
                retry_after_ms,
            } => format!(
                "this call was not run: a rate limit lets no more through now ({limit}). \
                 Call again in {} s or later.",
                retry_after_ms.div_ceil(1000).max(1)
            ),
            Outcome::Started { task_id } => format!(
                "this call is running in the background as task {task_id}; its result comes \
                 when it finishes (the caller reads it with `toolgate tasks get {task_id}`, or \
                 `tasks/get` over MCP). Go on meanwhile."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::store::StoreError;

    const LOCATION: &str = "postgres://toolgate:***@db.internal.example:5433/toolgate_prod";

    /// What no caller should read: where the store is, and what it said.
    const HIDDEN: [&str; 6] = [
        "db.internal.example",
        "5433",
        "toolgate_prod",
        "toolgate:",
        "10.0.0.9",
        "permission denied",
    ];

    #[test]
    fn a_store_failure_tells_the_caller_what_failed_but_not_where_the_store_is() {
        let errors = [
            StoreError::Unreachable {
                location: LOCATION.into(),
                problem: "writing state: connection refused (os error 111) to 10.0.0.9:5433".into(),
            },
            StoreError::Database {
                location: LOCATION.into(),
                action: "writing state",
                problem: "permission denied for table state".into(),
            },
            StoreError::Tls {
                location: LOCATION.into(),
                problem: "the certificate of db.internal.example has expired".into(),
                fix: "renew it".into(),
            },
        ];
        for error in errors {
            assert!(error.to_string().contains("db.internal.example"));
            let message = super::super::store_failure("the audit log", error).message_for_model();
            for hidden in HIDDEN {
                assert!(!message.contains(hidden), "{hidden} in {message}");
            }
            assert!(
                message.starts_with("the audit log cannot be written, so nothing ran ("),
                "{message}"
            );
            assert!(message.contains("tell the operator"), "{message}");
        }
    }

    #[test]
    fn a_store_failure_still_says_what_kind_of_failure_it_was() {
        let error = StoreError::Database {
            location: LOCATION.into(),
            action: "writing state",
            problem: "permission denied for table state".into(),
        };
        let outcome = super::super::store_failure("the state store", error);
        assert!(
            outcome
                .message_for_model()
                .contains("the database failed while writing state"),
            "{outcome:?}"
        );
        assert!(matches!(
            outcome,
            super::Outcome::Error {
                retryable: true,
                ..
            }
        ));
    }
}
