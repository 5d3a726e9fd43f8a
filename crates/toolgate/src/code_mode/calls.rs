//! A program's calls through the gate: one at a time, as the worker sends a
//! call made without `await` or awaited alone, or a batch of awaited calls run
//! concurrently; a call that needs approval is asked about first.

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use toolgate_core::Principal;

use super::ask::AskApproval;
use super::host::{CodeMode, Pending, Segment};
use super::names::PythonNames;
use super::protocol::{BatchCall, ToWorker};
use super::replies::reply_for;
use super::run_result::raise_hint;
use super::wall_clock::{Stopped, WallClock};
use crate::{Gate, Outcome, ToolCall, gate::CallOptions};

impl CodeMode {
    /// A batch of awaited calls, run concurrently through the gate as
    /// [`Gate::call_all`] runs a model's parallel calls (at most
    /// `per_tool_concurrency` of one tool at a time). A call that needs
    /// approval is asked about like any other; if it stays pending, the program
    /// pauses once the rest of it waits for that call (`pending`). One call
    /// pauses a program at a time: another one pending in the same batch is
    /// deferred, and asked again when the program goes on.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_batch(
        &self,
        gate: &Gate,
        principal: &Principal,
        names: &PythonNames,
        calls: Vec<BatchCall>,
        segment: &mut Segment,
        clock: &WallClock,
        ask: &dyn AskApproval,
        pending: &mut Option<Pending>,
    ) -> Result<Vec<(u32, ToWorker)>, Stopped> {
        let mut results = Vec::with_capacity(calls.len());
        let mut runnable = Vec::with_capacity(calls.len());
        for call in calls {
            if let Some(abort) = self.count_call(segment) {
                results.push((call.id, abort));
                return Ok(results);
            }
            match names.tool(&call.function) {
                Some(tool) => runnable.push((
                    call.id,
                    ToolCall::new(
                        format!("{}-{}", segment.run_id, segment.calls),
                        tool,
                        call.arguments,
                    ),
                )),
                None => results.push((
                    call.id,
                    ToWorker::Raise {
                        exception: "NameError".into(),
                        message: format!("name '{}' is not defined", call.function),
                    },
                )),
            }
        }
        let session = segment.session.as_str();
        let outcomes = futures::future::join_all(
            runnable
                .iter()
                .map(|(_, call)| self.call_asking(gate, session, principal, call, ask, clock)),
        )
        .await;
        for ((id, call), outcome) in runnable.into_iter().zip(outcomes) {
            let reply = match outcome? {
                // The program pauses for one call at a time; this one is asked
                // again when it goes on.
                Outcome::PendingApproval { .. } if pending.is_some() => ToWorker::Defer,
                Outcome::PendingApproval {
                    approval_id,
                    reason,
                } => self.pause_at(segment, pending, call, approval_id, reason),
                other => reply_for(other),
            };
            results.push((id, reply));
        }
        Ok(results)
    }

    /// Counts one more call of the program; past `max_calls`, the reply that
    /// ends it.
    pub(super) fn count_call(&self, segment: &mut Segment) -> Option<ToWorker> {
        segment.calls += 1;
        if segment.calls <= self.limits.max_calls {
            return None;
        }
        segment.limit_hit = Some("max_calls");
        Some(ToWorker::Abort {
            exception: "RuntimeError".into(),
            message: format!(
                "the program made more than the {} tool calls it may make{}",
                self.limits.max_calls,
                raise_hint("max_calls", &self.limits)
            ),
        })
    }

    /// The reply to a call that waits for a person: pause the program there
    /// (`pending`), or end it if it has paused as often as it may.
    pub(super) fn pause_at(
        &self,
        segment: &mut Segment,
        pending: &mut Option<Pending>,
        call: ToolCall,
        approval_id: String,
        reason: String,
    ) -> ToWorker {
        if segment.suspensions >= self.limits.max_suspensions {
            segment.limit_hit = Some("max_suspensions");
            return ToWorker::Abort {
                exception: "RuntimeError".into(),
                message: format!(
                    "the program needed a person's approval more than the {} times it may pause{}",
                    self.limits.max_suspensions,
                    raise_hint("max_suspensions", &self.limits)
                ),
            };
        }
        segment.suspensions += 1;
        *pending = Some(Pending {
            tool: call.name,
            call_id: call.id,
            arguments: call.arguments,
            approval_id,
            reason,
        });
        ToWorker::Suspend
    }

    /// One call through the gate; when it needs approval, `ask` is given the
    /// chance to have it answered (not counted on `clock`), and an answered call
    /// is submitted once more.
    pub(super) async fn call_asking(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        call: &ToolCall,
        ask: &dyn AskApproval,
        clock: &WallClock,
    ) -> Result<Outcome, Stopped> {
        let outcome = call_once(gate, session, principal, call, clock).await?;
        let Outcome::PendingApproval {
            approval_id,
            reason,
        } = &outcome
        else {
            return Ok(outcome);
        };
        let asked = Instant::now();
        let answered = ask.ask(approval_id, reason).await;
        clock.extend(asked.elapsed());
        if !answered {
            return Ok(outcome);
        }
        call_once(gate, session, principal, call, clock).await
    }
}

/// One submission of `call` to the gate, cancelled if the wall clock runs out.
async fn call_once(
    gate: &Gate,
    session: &str,
    principal: &Principal,
    call: &ToolCall,
    clock: &WallClock,
) -> Result<Outcome, Stopped> {
    let cancel = CancellationToken::new();
    clock
        .call_within(
            gate.call_with(
                session,
                call.clone(),
                principal,
                CallOptions {
                    cancel: cancel.clone(),
                    ..CallOptions::default()
                },
            ),
            &cancel,
        )
        .await
}
