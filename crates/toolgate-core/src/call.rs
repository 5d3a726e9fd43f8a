//! The words of a call: what a caller asks ([`ToolCall`]) and what the gate's
//! answer came to ([`Outcome`]). Pure data, so stores, wire formats and front
//! ends share them without depending on the gate that runs calls.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call as a model (or any caller) makes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The caller's id of the call (a model's tool-call id).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the caller gave them.
    pub arguments: Value,
    /// The caller's idempotency key: a second call with the same key (same
    /// principal, tool and arguments) gets the first one's outcome, and nothing
    /// runs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Values the MCP host sends apart from the model's arguments
    /// (`secureArguments`, as SEP-3221 drafts it), which fill a tool's
    /// `inject: {PARAM: "{host}"}` parameters and nothing else.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub secure_arguments: serde_json::Map<String, Value>,
    /// Contributors of untrusted content that the host's origin label (SEP-3193)
    /// names: the call counts as made after reading untrusted content, and its
    /// arguments as tainted. Labels only restrict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untrusted_origin: Vec<String>,
}

impl ToolCall {
    /// A call of `name` with `arguments`, named `id` by its caller.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            idempotency_key: None,
            secure_arguments: serde_json::Map::new(),
            untrusted_origin: Vec::new(),
        }
    }

    /// Whether `key` may be an idempotency key: 1 to 255 printable ASCII
    /// characters without spaces, as HTTP's `Idempotency-Key` header carries
    /// them (a UUID is a good one).
    pub fn is_valid_key(key: &str) -> bool {
        !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| (0x21..=0x7e).contains(&b))
    }

    /// The call with an idempotency key (see [`ToolCall::idempotency_key`]).
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
}

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
        /// What went wrong, in words the model can act on.
        message: String,
        /// Whether trying again could help.
        retryable: bool,
    },
    /// A human must approve the call first; re-submit it after approval.
    PendingApproval {
        /// The approval to wait for; approving or rejecting names it.
        approval_id: String,
        /// Why the call needs approval (the policy's reason).
        reason: String,
    },
    /// The call was sent but what became of it is not known (its deadline ran
    /// out while it ran, the connection broke mid-response, the process running
    /// it died): it may have happened. Repeating it could do it twice; the same
    /// call in its conversation is refused until an operator resolves this one.
    Unknown {
        /// What was lost, in words the model can act on.
        message: String,
        /// The run in the audit log an operator resolves (`toolgate audit resolve`).
        run_id: String,
    },
    /// The call may not run.
    Denied {
        /// Why not (the policy's reason, or what else refused it).
        reason: String,
    },
    /// A rate limit (`limits.rate`) lets the call through only later; nothing
    /// ran. Calling again after `retry_after_ms` can succeed.
    RateLimited {
        /// The limit, in words.
        limit: String,
        /// How long until the limit lets a call through, in milliseconds.
        retry_after_ms: u64,
    },
    /// The call was admitted, authorized and recorded, and runs in the background
    /// as a task: `Gate::task` and
    /// `Gate::await_task` read what it came to.
    Started {
        /// The task's id, which `Gate::task` and `Gate::await_task` take.
        task_id: String,
    },
}

impl Outcome {
    /// A failure with `message`; `retryable` says whether trying again could help.
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
            Outcome::Unknown { .. } => "unknown",
        }
    }

    /// Whether the tool ran and returned a value; every refusal or failure is not ok.
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
            Outcome::Unknown { message, run_id } => format!(
                "this call may have happened: {message}. Do not repeat it: ask the user, or \
                 check whether it took effect (run {run_id})."
            ),
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
