//! Reasoner-facing guidance: what a planner needs to pick the right tool.

use serde::{Deserialize, Serialize};

/// Guidance for the model that chooses tools. Every field is optional, and a
/// descriptor skips the whole value when [`ToolUsage::is_empty`].
///
/// `tier` is descriptive (read, write, execute, destructive, external): knowing a
/// tool's tier is not permission to run it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolUsage {
    /// When this tool is the right choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_use: Option<String>,
    /// When another tool, or no tool, is the better choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_not_to: Option<String>,
    /// What must be true before calling it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preconditions: Vec<String>,
    /// A coarse cost hint: "free / local", "network call", "LLM tokens".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
    /// An example of a good call, in words or as arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
    /// The tool's safety tier, as a description for the planner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
}

impl ToolUsage {
    /// True when no field carries guidance.
    pub fn is_empty(&self) -> bool {
        self == &ToolUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_usage_serializes_to_an_empty_object_and_reports_empty() {
        let usage = ToolUsage::default();
        assert!(usage.is_empty());
        assert_eq!(serde_json::to_string(&usage).unwrap(), "{}");
    }

    #[test]
    fn any_field_makes_usage_non_empty() {
        let usage = ToolUsage {
            preconditions: vec!["customer verified".into()],
            ..Default::default()
        };
        assert!(!usage.is_empty());
    }
}
