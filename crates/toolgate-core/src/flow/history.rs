//! A conversation's call history, as the monitor reads it: which tools ran, in
//! order, and whether each succeeded.

use serde::{Deserialize, Serialize};

/// One call that ran (calls refused before running are not history).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallRecord {
    /// The tool's canonical name.
    pub tool: String,
    /// Whether it succeeded.
    pub ok: bool,
}

impl CallRecord {
    /// A call to `tool` that succeeded (`ok`) or failed.
    pub fn new(tool: impl Into<String>, ok: bool) -> Self {
        CallRecord {
            tool: tool.into(),
            ok,
        }
    }
}
