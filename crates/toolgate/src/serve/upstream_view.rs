//! The running upstream servers as the console shows them: the one place that
//! knows both the MCP client's [`Upstreams`] and the console's
//! [`UpstreamView`], so neither imports the other.

use crate::console::{Circuit, UpstreamRow, UpstreamView};
use crate::mcp::client::{ServerState, Upstreams};
use crate::skills::skill_pin_key;

impl UpstreamView for Upstreams {
    fn servers(&self) -> Vec<UpstreamRow> {
        self.status()
            .into_iter()
            .map(|server| UpstreamRow {
                circuit: match &server.state {
                    ServerState::Unavailable { until, .. } => Circuit::OpenUntil(*until),
                    ServerState::Misconfigured { .. } | ServerState::Stopped => Circuit::NeverTried,
                    _ => Circuit::Closed,
                },
                health: server.state.as_str(),
                available: server.state.is_available(),
                tools: server.tools.len(),
                namespace: server.namespace,
                server: server.server,
                transport: server.transport,
                reason: server.reason,
                failures: server.failures,
                quarantined: server
                    .quarantined
                    .into_iter()
                    .chain(server.quarantined_skills.iter().map(|s| skill_pin_key(s)))
                    .collect(),
            })
            .collect()
    }

    fn release_accepted(&self) {
        self.withheld();
    }
}
