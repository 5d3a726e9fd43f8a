//! What a server offers at one moment: the gate calls run through, the tools
//! `tools/list` shows, and the instructions new sessions get. The catalog can change
//! while the server runs (an upstream server's tools changed), so the owner builds
//! a new offering and the server swaps it in whole ([`McpServer::replace_gate`](super::McpServer::replace_gate));
//! a call keeps the offering it started with.

use std::sync::Arc;

use toolgate_core::{Principal, planner_digest};

use super::tools::ToolList;
use crate::Gate;

pub(crate) struct Offering {
    pub(crate) gate: Arc<Gate>,
    /// The whole catalog as the principal may see it (the flow and search narrow it per session).
    pub(crate) tools: ToolList,
    pub(crate) instructions: Option<String>,
    /// Tools the owner keeps out of `tools/list`.
    pub(crate) withheld: Vec<String>,
}

impl Offering {
    pub(crate) fn new(gate: Arc<Gate>, principal: &Principal, withheld: Vec<String>) -> Self {
        let tools = ToolList::build(&gate, principal, &withheld);
        for (tool, why) in &tools.left_out {
            tracing::warn!(tool = tool.as_str(), "not served over MCP: {why}");
        }
        let descriptors: Vec<_> = gate
            .catalog()
            .iter()
            .filter(|tool| !withheld.iter().any(|w| w == tool.name()))
            .map(|tool| tool.descriptor())
            .collect();
        let instructions = Some(planner_digest(descriptors, gate.policy(), principal));
        Offering {
            gate,
            tools,
            instructions,
            withheld,
        }
    }
}
