//! The context a tool runs with: the call's id and caller, the conversation's
//! state, the deadline and cancellation, an idempotency key, the flow's view for
//! a tool that reads it, and, for an upstream MCP tool, the origin label of what
//! the conversation has read (SEP-3193).

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolgate_core::{DynTool, ToolCtx, ToolSource};

use super::Gate;
use super::call::{Request, Stop};
use super::run::RunLimits;
use super::store_failure::store_failure;

impl Gate {
    /// The context the tool runs with: the call's id and caller, the state, the
    /// deadline, cancellation, an idempotency key and (for a tool that reads
    /// it) the flow's view.
    pub(super) fn tool_ctx(
        &self,
        request: &Request<'_>,
        tool: &Arc<dyn DynTool>,
        arguments: &Value,
        state: &Map<String, Value>,
        limits: RunLimits,
        run_cancel: &CancellationToken,
    ) -> Result<ToolCtx, Stop> {
        let (session, call, principal) = (request.session, request.call, request.principal);
        let mut ctx = ToolCtx::new(call.id.clone(), principal.clone())
            .with_state(Arc::new(state.clone()))
            .with_deadline(limits.deadline)
            .with_cancellation(run_cancel.child_token());
        // The caller's key, else one the tool derives from its arguments.
        if let Some(key) = call
            .idempotency_key
            .clone()
            .or_else(|| tool.idempotency_key(arguments))
        {
            ctx = ctx.with_idempotency_key(key);
        }
        // An upstream MCP call carries what the conversation has read (SEP-3193).
        if self.labelled && matches!(tool.descriptor().source, ToolSource::Mcp { .. }) {
            match self.seen_account(session) {
                Ok(seen) => ctx = ctx.with_flow_origin(toolgate_core::flow_origin(&seen)),
                Err(e) => return Err(Stop::failed(store_failure("the call history", e))),
            }
        }
        if tool.reads_flow() {
            match self.flow_view_in(session, state, Some(principal)) {
                Ok(Some(view)) => ctx = ctx.with_flow_view(Arc::new(view)),
                Ok(None) => {}
                Err(e) => return Err(Stop::failed(store_failure("the state store", e))),
            }
        }
        Ok(ctx)
    }
}
