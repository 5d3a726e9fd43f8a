//! Code mode over MCP (`toolgate serve --code-mode`): `tools/list` offers
//! `run_code`, whose description carries the stubs of the tools the caller's
//! principal may call in its conversation now (built per request, since identity
//! and the flow's position are), plus the tools marked `always_loaded`, which stay
//! callable directly. A `tools/call` of `run_code` runs the program through
//! [`CodeMode`] for the caller's principal in the caller's conversation; each call
//! in it takes the gate. A call in the program that needs approval asks the
//! client's user by elicitation ([`super::approval`]) when the client can show a
//! form, and the program goes on at its call site within the same `tools/call`.
//! With the console on (`--console`), a call nobody answered there is held, as a
//! plain call is, until an approver answers (in the console or with `toolgate
//! approvals`) for up to `--approval-timeout`; the program then goes on at its
//! call site, and pauses (`pending_approval`) only if nobody answered in time.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_core::spec::SpecFile;
use toolgate_core::wire::{self, RenderOptions, Target};
use toolgate_core::{Principal, SanitizeOptions};

use super::approval::{self, Answer};
use super::result::error_result;
use super::{Shared, stateless};
use crate::Gate;
use crate::code_mode::{
    AskApproval, CodeMode, CodeRun, NeverAsk, RESUME_CODE, RUN_CODE, resume_code_descriptor,
    run_code_tool,
};

/// Code mode as a server offers it.
pub(crate) struct CodeOffer {
    mode: CodeMode,
    /// The spec file the tools came from: a mock's canned response gives the
    /// returns shape of a tool that declares none.
    spec: Option<SpecFile>,
    /// Tools offered directly beside `run_code`.
    always_loaded: BTreeSet<String>,
}

impl CodeOffer {
    pub(crate) fn new(
        mode: CodeMode,
        spec: Option<SpecFile>,
        always_loaded: impl IntoIterator<Item = String>,
    ) -> Self {
        CodeOffer {
            mode,
            spec,
            always_loaded: always_loaded.into_iter().collect(),
        }
    }

    /// Whether a call of `name` is a program to run or resume.
    pub(crate) fn runs(&self, name: &str) -> bool {
        name == RUN_CODE || name == RESUME_CODE
    }

    /// What `tools/list` shows: `run_code` for `principal` in `session` and
    /// `resume_code`, then those of `listed` (the tools it would list without
    /// code mode, rendered; `canonical` maps a wire name to the catalog's) that
    /// are always loaded.
    pub(crate) fn tools(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        listed: &[Tool],
        canonical: impl Fn(&str) -> String,
    ) -> Vec<Tool> {
        let mut tools = Vec::with_capacity(2 + self.always_loaded.len());
        match self.builtins(gate, session, principal) {
            Ok(builtins) => tools.extend(builtins),
            Err(why) => tracing::warn!("run_code is not offered: {why}"),
        }
        tools.extend(
            listed
                .iter()
                .filter(|tool| self.always_loaded.contains(&canonical(&tool.name)))
                .cloned(),
        );
        tools
    }

    /// `run_code` and `resume_code`, rendered for MCP.
    fn builtins(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
    ) -> Result<Vec<Tool>, String> {
        let run_code = run_code_tool(gate, session, principal, self.spec.as_ref())
            .map_err(|e| e.to_string())?;
        let resume_code = resume_code_descriptor(run_code.effect);
        let offered = [run_code, resume_code];
        let rendered = wire::render(Target::Mcp, &offered, &[], RenderOptions::default());
        if let Some(problem) = rendered.problems.first() {
            return Err(problem.message.clone());
        }
        rendered
            .tools
            .into_iter()
            .map(|entry| {
                serde_json::from_value(entry).map_err(|e| format!("not a valid MCP tool: {e}"))
            })
            .collect()
    }

    /// Runs the program in `arguments` (of `run_code`), or resumes the one
    /// `resume_code` names, for `principal` in `session`; `ask` may have a person
    /// answer an approval while the program waits.
    pub(crate) async fn call(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        tool: &str,
        arguments: &Value,
        ask: &dyn AskApproval,
    ) -> CallToolResult {
        let run = if tool == RESUME_CODE {
            let Some(run_id) = arguments.get("run_id").and_then(Value::as_str) else {
                return error_result(
                    "resume_code takes `run_id`, the run id run_code returned with pending_approval",
                );
            };
            self.mode.resume_asking(gate, run_id, principal, ask).await
        } else {
            let Some(code) = arguments.get("code").and_then(Value::as_str) else {
                return error_result(
                    "run_code takes `code`, the Python program as a string, e.g. {\"code\": \"lookup_order(order_id='A-1')\"}",
                );
            };
            self.mode
                .run_asking(gate, session, principal, code, ask)
                .await
        };
        result_of(&run)
    }

    /// A `tools/call` of `tool` (`run_code` or `resume_code`) from `context`'s
    /// client: asks by elicitation when the client has a session and can show a
    /// form; otherwise the program pauses at a call that needs approval.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn serve(
        &self,
        shared: &Shared,
        tool: &str,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        arguments: Option<serde_json::Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let arguments = Value::Object(arguments.unwrap_or_default());
        let can_ask = !stateless::is_stateless(context)
            && context
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form);
        let hold = shared.hold_approvals;
        if !can_ask && !hold {
            return self
                .call(gate, session, principal, tool, &arguments, &NeverAsk)
                .await;
        }
        let ask = AskOrHold {
            elicit: Elicit {
                peer: &context.peer,
                form: can_ask,
                gate,
                timeout: shared.options.approval_timeout,
                cancel: shared.inflight.cancellation(),
                who: &principal.id,
            },
            hold,
        };
        self.call(gate, session, principal, tool, &arguments, &ask)
            .await
    }
}

/// Asks the client's user where it can, then, with the console on, holds the
/// program until an approver answers: what a plain call waiting for approval does.
struct AskOrHold<'a> {
    /// How to ask the client's user, and the gate, timeout and cancellation a
    /// held program waits under.
    elicit: Elicit<'a>,
    /// Whether to wait for an answer given elsewhere (the console is on).
    hold: bool,
}

impl AskApproval for AskOrHold<'_> {
    fn ask<'b>(&'b self, approval_id: &'b str, reason: &'b str) -> BoxFuture<'b, bool> {
        Box::pin(async move {
            if self.elicit.form && self.elicit.ask(approval_id, reason).await {
                return true;
            }
            if self.hold {
                let Elicit {
                    gate,
                    timeout,
                    cancel,
                    ..
                } = self.elicit;
                return approval::wait_for_answer(gate, approval_id, timeout, cancel).await;
            }
            let _ = self.hold;
            false
        })
    }
}

/// A run as a `tools/call` result: the text for the model (an error unless the
/// program finished with a value; a paused one says how to go on), and the run
/// as structured content.
fn result_of(run: &CodeRun) -> CallToolResult {
    let text = run.text_for_model(SanitizeOptions::for_output().max_chars);
    let block = vec![ContentBlock::text(text)];
    let mut result = if run.is_ok() {
        CallToolResult::success(block)
    } else {
        CallToolResult::error(block)
    };
    result.structured_content = serde_json::to_value(run).ok();
    result
}

/// Asks the MCP client's user about an approval a program waits for, by
/// elicitation, and records the answer, as a plain call's approval is asked.
struct Elicit<'a> {
    peer: &'a Peer<RoleServer>,
    /// Whether the client can show a form (it has a session and declared form
    /// elicitation): [`AskOrHold`] asks through this only then.
    form: bool,
    gate: &'a Gate,
    timeout: Duration,
    cancel: &'a CancellationToken,
    /// Who answers: the caller's principal.
    who: &'a str,
}

impl AskApproval for Elicit<'_> {
    fn ask<'b>(&'b self, approval_id: &'b str, reason: &'b str) -> BoxFuture<'b, bool> {
        Box::pin(async move {
            let answer = approval::ask(
                self.peer,
                self.gate,
                approval_id,
                reason,
                self.timeout,
                self.cancel,
            )
            .await;
            let by = toolgate_core::Answerer::new(self.who, "elicitation");
            approval::record(self.gate, approval_id, &answer, &by);
            !matches!(answer, Answer::None(_))
        })
    }
}
