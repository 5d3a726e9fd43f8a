//! What a model is shown of the tools a flow blocks: nothing, or the tool marked as
//! not yet available with the reason. Applied to descriptors before any wire
//! target renders them, so every API sees the same thing.

use serde::{Deserialize, Serialize};

use super::status::{FlowView, ToolStatus};
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

/// Whether a tool the flow gives `status` is shown at all: a blocked tool is hidden
/// or marked, as `visibility` says; every other tool is shown.
pub fn is_visible(status: &ToolStatus, visibility: FlowVisibility) -> bool {
    !matches!(
        (status, visibility),
        (ToolStatus::Blocked { .. }, FlowVisibility::Hide)
    )
}

/// `tools` as a model should see them now: blocked ones hidden or marked, and
/// tools that ask for confirmation saying so.
pub fn visible_tools(
    tools: &[ToolDescriptor],
    view: &FlowView,
    visibility: FlowVisibility,
) -> Vec<ToolDescriptor> {
    tools
        .iter()
        .filter_map(|tool| {
            let status = view.status(&tool.name);
            if !is_visible(&status, visibility) {
                return None;
            }
            let mut tool = tool.clone();
            match status {
                ToolStatus::Allowed { confirm: None } => {}
                ToolStatus::Allowed {
                    confirm: Some(confirm),
                } => {
                    tool.description = format!("{} (Before it runs, {confirm}.)", tool.description)
                }
                ToolStatus::Blocked { reason, .. } => {
                    tool.description =
                        format!("[{NOT_AVAILABLE_YET}: {reason}.] {}", tool.description);
                }
            }
            Some(tool)
        })
        .collect()
}
