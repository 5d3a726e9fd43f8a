//! What a model is shown of the tools a flow blocks: nothing, or the tool marked as
//! not yet available with the reason. Applied to descriptors before any wire
//! target renders them, so every API sees the same thing.

use serde::{Deserialize, Serialize};

use super::monitor::{FlowView, ToolStatus};
use crate::ToolDescriptor;

/// How blocked tools are shown to a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowVisibility {
    /// Blocked tools are left out: the model cannot pick them.
    #[default]
    Hide,
    /// Blocked tools are listed, their description opening with why they are not
    /// available yet, so the model can plan for them.
    Mark,
}

/// The first words of a marked tool's description.
pub const NOT_AVAILABLE_YET: &str = "Not available yet";

/// `tools` as a model should see them now: blocked ones hidden or marked, and
/// tools that ask for confirmation saying so.
pub fn visible_tools(
    tools: &[ToolDescriptor],
    view: &FlowView,
    visibility: FlowVisibility,
) -> Vec<ToolDescriptor> {
    tools
        .iter()
        .filter_map(|tool| match view.status(&tool.name) {
            ToolStatus::Allowed { confirm: None } => Some(tool.clone()),
            ToolStatus::Allowed {
                confirm: Some(confirm),
            } => {
                let mut tool = tool.clone();
                tool.description = format!("{} (Before it runs, {confirm}.)", tool.description);
                Some(tool)
            }
            ToolStatus::Blocked { reason, .. } => match visibility {
                FlowVisibility::Hide => None,
                FlowVisibility::Mark => {
                    let mut tool = tool.clone();
                    tool.description =
                        format!("[{NOT_AVAILABLE_YET}: {reason}.] {}", tool.description);
                    Some(tool)
                }
            },
        })
        .collect()
}
