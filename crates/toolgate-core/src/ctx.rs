//! What a handler may know about the call it is serving.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::Principal;
use crate::flow::FlowView;

/// The context of one call: its id, its caller, its deadline and cancellation, its
/// idempotency key, a read-only view of the conversation's state (and, for tools that
/// ask, of its flow) and a tracing span.
///
/// Fields are private so the context can grow; build one with [`ToolCtx::new`] and the
/// `with_*` methods.
#[derive(Debug, Clone)]
pub struct ToolCtx {
    call_id: String,
    principal: Arc<Principal>,
    deadline: Option<Instant>,
    cancel: CancellationToken,
    idempotency_key: Option<String>,
    state: Arc<Map<String, Value>>,
    flow: Option<Arc<FlowView>>,
    flow_origin: Option<Arc<Value>>,
    span: tracing::Span,
}

impl ToolCtx {
    /// A context for call `call_id` made by `principal`, with no deadline, no state and
    /// a fresh cancellation signal.
    pub fn new(call_id: impl Into<String>, principal: Principal) -> Self {
        ToolCtx {
            call_id: call_id.into(),
            principal: Arc::new(principal),
            deadline: None,
            cancel: CancellationToken::new(),
            idempotency_key: None,
            state: Arc::default(),
            flow: None,
            flow_origin: None,
            span: tracing::Span::none(),
        }
    }

    /// The instant the call must have finished by; handlers read it as [`ToolCtx::deadline`].
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The signal the caller fires when it gives up on the call, in place of a fresh one.
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// The key that makes repeating the call safe (an idempotent tool's).
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The conversation's state as the call sees it, shared and read-only.
    pub fn with_state(mut self, state: Arc<Map<String, Value>>) -> Self {
        self.state = state;
        self
    }

    /// Where the conversation's flow stands; the gate sets it for tools that
    /// [read the flow](crate::DynTool::reads_flow).
    pub fn with_flow_view(mut self, view: Arc<FlowView>) -> Self {
        self.flow = Some(view);
        self
    }

    /// The tracing span the call runs in, in place of none.
    pub fn with_span(mut self, span: tracing::Span) -> Self {
        self.span = span;
        self
    }

    /// The id the model (or caller) gave this call.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Who is calling.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// When the call must have finished, if it has a deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Fires when the caller gives up on this call; long handlers should watch it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The key that makes repeating this call safe, for idempotent tools.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// One key of the conversation's state.
    pub fn state(&self, key: &str) -> Option<&Value> {
        self.state.get(key)
    }

    /// The whole conversation state, read-only.
    pub fn state_map(&self) -> &Map<String, Value> {
        &self.state
    }

    /// Where the conversation's flow stands (every step, every tool's status), when
    /// the gate has a flow and the tool [reads it](crate::DynTool::reads_flow).
    pub fn flow_view(&self) -> Option<&FlowView> {
        self.flow.as_deref()
    }

    /// The origin label (SEP-3193, a draft) an upstream MCP call carries: whose
    /// content the conversation has read (see [`crate::flow_origin`]).
    pub fn flow_origin(&self) -> Option<&Value> {
        self.flow_origin.as_deref()
    }

    /// Gives the call an origin label for upstream MCP servers.
    pub fn with_flow_origin(mut self, label: Value) -> Self {
        self.flow_origin = Some(Arc::new(label));
        self
    }

    /// The span this call runs in.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }
}
