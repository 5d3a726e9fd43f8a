//! What the monitor answers: where a conversation stands (its steps, what it
//! still owes) and, for each tool, whether it may run now and why not. Plain
//! data, serialized as `toolgate flow status --json` prints it.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Where a conversation stands: its steps, what it still owes, and every tool's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowView {
    /// Every step, in flow order.
    pub steps: Vec<StepView>,
    /// Tools that must still succeed before the conversation may end (`require`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<Requirement>,
    /// The terminal step whose completion ended the flow, if one has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_by: Option<String>,
    /// Each tool asked about, in the order asked.
    pub tools: IndexMap<String, ToolStatus>,
}

/// One step and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepView {
    /// The step's id, as the flow file names it.
    pub id: String,
    /// Whether it is active, done, or waiting on a guard.
    pub status: StepStatus,
    /// What the model should do while it is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// Why a waiting step is not active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

/// Where one step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Its `when` guard holds and it is not done: the model should work on it now.
    Active,
    /// Its `done` guard holds (or its tool has succeeded); it stays done.
    Done,
    /// Not yet active: `why` says which guard does not hold.
    Waiting,
}

/// A tool that must succeed before the conversation may end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirement {
    /// The tool that must still succeed.
    pub tool: String,
    /// Why, in words: the `when` guard that holds.
    pub because: String,
}

/// Whether a tool may run now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool may be called now.
    Allowed {
        /// Why the user must confirm a call, when the flow says so.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confirm: Option<String>,
    },
    /// The tool may not be called until something else happens first.
    Blocked {
        /// One sentence for the model: what must happen first.
        reason: String,
        /// Each rule that blocks it and the guard that does not hold, for people.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        details: Vec<String>,
    },
}

impl ToolStatus {
    /// Whether a call would be let through (possibly after the user confirms).
    pub fn is_allowed(&self) -> bool {
        matches!(self, ToolStatus::Allowed { .. })
    }

    /// The reason a blocked tool is blocked.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ToolStatus::Blocked { reason, .. } => Some(reason),
            ToolStatus::Allowed { .. } => None,
        }
    }
}

impl FlowView {
    /// The ids of the active steps.
    pub fn active(&self) -> Vec<&str> {
        self.with_status(StepStatus::Active)
    }

    /// The ids of the done steps.
    pub fn done(&self) -> Vec<&str> {
        self.with_status(StepStatus::Done)
    }

    fn with_status(&self, status: StepStatus) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| s.status == status)
            .map(|s| s.id.as_str())
            .collect()
    }

    /// The instructions of the active steps, as `(step, text)`.
    pub fn instructions(&self) -> Vec<(&str, &str)> {
        self.steps
            .iter()
            .filter(|s| s.status == StepStatus::Active)
            .filter_map(|s| Some((s.id.as_str(), s.instruction.as_deref()?)))
            .collect()
    }

    /// A tool's status; tools the view was not asked about are allowed.
    pub fn status(&self, tool: &str) -> ToolStatus {
        self.tools
            .get(tool)
            .cloned()
            .unwrap_or(ToolStatus::Allowed { confirm: None })
    }

    /// Whether a tool may run now.
    pub fn is_allowed(&self, tool: &str) -> bool {
        self.tools.get(tool).is_none_or(ToolStatus::is_allowed)
    }
}
