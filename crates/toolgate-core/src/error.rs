//! How a tool's failure should be treated.

use std::time::Duration;

/// A failure reported by a tool. The variant says who must act: the caller may
/// retry, nobody can, or the model must fix its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// A transient failure; trying again may succeed (within what the effect permits).
    #[error("{message}")]
    Retryable {
        /// What failed, in words for the model.
        message: String,
        /// How long to wait before trying again, when the tool knows.
        retry_after: Option<Duration>,
    },
    /// A failure that will recur however often the call is repeated.
    #[error("{message}")]
    Permanent {
        /// What failed, in words for the model.
        message: String,
    },
    /// The request may have reached whatever the tool acts on, but its answer
    /// was lost (the connection broke after it was sent, the server died
    /// mid-call): the effect may have happened. Never retried blindly.
    #[error("{message}")]
    Unknown {
        /// What was lost, in words for the model.
        message: String,
    },
    /// The model's input was wrong; the message tells it what to change.
    #[error("invalid input: {message}")]
    InvalidInput {
        /// What is wrong with the input and how to fix it.
        message: String,
    },
}

impl ToolError {
    /// A transient failure.
    pub fn retryable(message: impl Into<String>) -> Self {
        ToolError::Retryable {
            message: message.into(),
            retry_after: None,
        }
    }

    /// A failure that will recur.
    pub fn permanent(message: impl Into<String>) -> Self {
        ToolError::Permanent {
            message: message.into(),
        }
    }

    /// A request whose outcome is lost.
    pub fn unknown(message: impl Into<String>) -> Self {
        ToolError::Unknown {
            message: message.into(),
        }
    }

    /// The model's input was wrong.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        ToolError::InvalidInput {
            message: message.into(),
        }
    }

    /// Whether trying the same call again could help.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ToolError::Retryable { .. })
    }
}
