//! Calls to an upstream server's tools: the circuit check, waiting for a
//! restarting server, the call under its timeout, and cancelling an abandoned one.

use super::*;

impl Server {
    /// Refuses a call while the server's circuit is open (see [`Self::ready_peer`]).
    pub(crate) fn check_circuit(&self) -> Result<(), ToolError> {
        match self.state() {
            ServerState::Unavailable {
                reason,
                failures,
                until,
            } => Err(self.circuit_open(&reason, failures, until)),
            _ => Ok(()),
        }
    }

    fn circuit_open(&self, reason: &str, failures: u32, until: Instant) -> ToolError {
        let left = until.saturating_duration_since(Instant::now());
        ToolError::Retryable {
            message: format!(
                "{} is unavailable after {failures} failures in a row (the last: {reason}); \
                 toolgate tries it again in {}",
                self.label,
                humantime::format_duration(Duration::from_secs(left.as_secs().max(1)))
            ),
            retry_after: Some(left),
        }
    }

    /// Calls `remote` with `input`, under the server's call timeout and the call's
    /// deadline.
    pub(crate) async fn call(
        &self,
        remote: &str,
        input: Value,
        ctx: &ToolCtx,
    ) -> Result<Value, ToolError> {
        let arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::invalid_input(format!(
                    "arguments must be a JSON object, not {other}"
                )));
            }
        };
        let peer = self.ready_peer(ctx).await?;
        let mut params = CallToolRequestParams::new(remote.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        if let Some(label) = ctx.flow_origin() {
            let meta = params.meta.get_or_insert_with(Default::default);
            meta.insert(toolgate_core::FLOW_ORIGIN_META.to_owned(), label.clone());
        }
        let limit = match ctx.deadline() {
            Some(deadline) => self
                .config
                .call_timeout
                .min(deadline.saturating_duration_since(Instant::now())),
            None => self.config.call_timeout,
        };
        // The client span of the upstream call; its trace context rides in
        // `_meta` (SEP-414), where the upstream server can pick it up.
        let span = tracing::info_span!(
            "tools/call",
            otel.name = tracing::field::Empty,
            otel.kind = "client",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = remote,
            toolgate.upstream = %self.config.name,
        );
        if !span.is_disabled() {
            span.record("otel.name", format!("tools/call {remote}"));
            let fields = crate::telemetry::trace_fields(&span);
            if !fields.is_empty() {
                let meta = params.meta.get_or_insert_with(Default::default);
                for (key, value) in fields {
                    meta.insert(key, Value::String(value));
                }
            }
        }
        let sent = tokio::time::timeout(limit, self.send_call(&peer, params)).instrument(span);
        let answer = tokio::select! {
            answer = sent => answer,
            _ = ctx.cancellation().cancelled() => {
                return Err(ToolError::permanent("the call was cancelled; the server was told to stop it"));
            }
        };
        let label = &self.label;
        let result = match answer {
            Err(_) => Err(ToolError::unknown(format!(
                "{label} did not answer within {}; the call was cancelled on the server, but it may have taken effect first",
                humantime::format_duration(limit)
            ))),
            Ok(Ok(Answer::Result(result))) => {
                self.shared().breaker.record_success();
                let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                call_outcome(&value, &self.config.name, &self.config.scrubber)
            }
            Ok(Ok(Answer::InputRequired(asked))) => {
                self.shared().breaker.record_success();
                Err(ToolError::permanent(input_required_words(
                    label,
                    &self.config.name,
                    &asked,
                    &self.config.scrubber,
                )))
            }
            Ok(Err(ServiceError::McpError(error))) => {
                let message =
                    upstream_text(&error.message, &self.config.name, &self.config.scrubber);
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    Err(ToolError::invalid_input(format!(
                        "{label} refused the arguments: {message}"
                    )))
                } else {
                    Err(ToolError::permanent(format!(
                        "{label} answered with an error: {message}"
                    )))
                }
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                if matches!(self.config.transport, Transport::Http { .. }) {
                    self.reconnect.notify_one();
                }
                let detail = self.lost_connection_reason().await;
                Err(ToolError::unknown(format!(
                    "{detail}; toolgate is restarting it. The call may have taken effect before the connection was lost"
                )))
            }
            Ok(Err(other)) => Err(ToolError::permanent(format!(
                "{label} failed the call: {}",
                upstream_words(&other.to_string(), &self.config.scrubber)
            ))),
        };
        crate::telemetry::upstream_call(&self.config.name, result.is_ok());
        result
    }

    /// Sends one `tools/call`. While it runs, the server's progress on it, its log
    /// messages and its requests go to the MCP client whose call this is, if any
    /// (see `relay.rs`). Dropped before the answer (a timeout, a cancellation), it
    /// tells the server to stop.
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
    ) -> Result<Answer, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await?;
        let registered = crate::mcp::Downstream::current().map(|downstream| {
            self.relay
                .register(handle.progress_token.clone(), downstream)
        });
        let mut abandoned = CancelOnDrop {
            peer: Some(peer.clone()),
            id: handle.id.clone(),
        };
        let answer = handle.await_response().await;
        abandoned.peer = None;
        if registered.is_some() {
            self.relay.caught_up().await;
        }
        match answer? {
            ServerResult::CallToolResult(result) => Ok(Answer::Result(result)),
            ServerResult::InputRequiredResult(asked) => Ok(Answer::InputRequired(asked)),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    /// Why the connection was lost, as the supervisor found out (it may take a
    /// moment to learn the exit status).
    async fn lost_connection_reason(&self) -> String {
        let mut state = self.state.subscribe();
        let ended = state.wait_for(|s| !matches!(s, ServerState::Ready | ServerState::Starting));
        match tokio::time::timeout(Duration::from_secs(1), ended).await {
            Ok(Ok(state)) => match &*state {
                ServerState::Restarting { reason, .. }
                | ServerState::Unavailable { reason, .. } => {
                    format!("the connection was lost during the call: {reason}")
                }
                _ => format!("{} lost the connection during the call", self.label),
            },
            _ => format!("{} lost the connection during the call", self.label),
        }
    }

    /// The peer of a live connection; waits while the server starts or restarts,
    /// and fails fast while its circuit is open.
    async fn ready_peer(&self, ctx: &ToolCtx) -> Result<Peer<RoleClient>, ToolError> {
        let mut state = self.state.subscribe();
        let wait = match ctx.deadline() {
            Some(deadline) => self
                .config
                .connect_timeout
                .min(deadline.saturating_duration_since(Instant::now())),
            None => self.config.connect_timeout,
        };
        let until = Instant::now() + wait;
        loop {
            let current = state.borrow_and_update().clone();
            let label = &self.label;
            match current {
                ServerState::Ready => {
                    if let Some(peer) = self.peer() {
                        return Ok(peer);
                    }
                }
                ServerState::Unavailable {
                    reason,
                    failures,
                    until,
                } => return Err(self.circuit_open(&reason, failures, until)),
                ServerState::Misconfigured { reason } => return Err(ToolError::permanent(reason)),
                ServerState::Stopped => {
                    return Err(ToolError::permanent(format!("{label} has been stopped")));
                }
                ServerState::Starting | ServerState::Restarting { .. } => {}
            }
            let changed = tokio::time::timeout_at(until.into(), state.changed());
            match changed.await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => {
                    return Err(ToolError::permanent(format!("{label} has been stopped")));
                }
                Err(_) => {
                    let why = self
                        .last_error()
                        .map(|e| format!(" (the last failure: {e})"))
                        .unwrap_or_default();
                    return Err(ToolError::retryable(format!(
                        "{label} is restarting and was not back within {}{why}",
                        humantime::format_duration(wait)
                    )));
                }
            }
        }
    }
}
/// What an upstream server answered a `tools/call` with.
enum Answer {
    Result(CallToolResult),
    /// The 2026-07-28 revision's question back (`resultType: "input_required"`).
    InputRequired(InputRequiredResult),
}

/// The tool error for an upstream `input_required` answer: what kinds of input the
/// server asked for, and an elicitation's question (fenced as untrusted text). toolgate
/// does not relay such questions: the answer would have to come from whoever called
/// toolgate, and the gate has no way to ask them yet.
fn input_required_words(
    label: &str,
    source: &str,
    asked: &InputRequiredResult,
    scrubber: &Scrubber,
) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    let mut question = None;
    for request in asked.input_requests.iter().flat_map(|r| r.values()) {
        let kind = match request {
            InputRequest::Elicitation(elicit) => {
                question = question.or_else(|| {
                    let params = serde_json::to_value(&elicit.params).ok()?;
                    params.get("message")?.as_str().map(str::to_owned)
                });
                "an answer from the user"
            }
            InputRequest::CreateMessage(_) => "a reply from the model (sampling)",
            InputRequest::ListRoots(_) => "the client's roots",
            _ => "input of a kind toolgate does not know",
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    let what = if kinds.is_empty() {
        "more input".to_owned()
    } else {
        kinds.join(" and ")
    };
    let mut words = format!(
        "the upstream {label} asked for input ({what}); toolgate cannot relay it yet, so the tool did not run"
    );
    if let Some(question) = question {
        words.push_str(". Its question: ");
        words.push_str(&upstream_text(&question, source, scrubber));
    }
    words
}

/// Tells the server to stop a request whose answer nobody waits for any more.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(peer), Ok(runtime)) = (self.peer.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let notice = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("toolgate stopped waiting for the answer".into()),
        );
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(notice).await;
        });
    }
}
