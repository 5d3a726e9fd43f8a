//! Resuming a program that paused for approval: in this process or any other
//! sharing the store, once a person has answered.
//!
//! The paused call is submitted to the gate again, exactly as the program made
//! it (same session, principal, call id, arguments). The gate finds the approval
//! decided: approved, the call runs — once, since the approval is consumed — and
//! its value is the call's result in the program; denied, the call raises
//! `PermissionError` at its call site. Still pending, nothing runs and the program
//! stays paused. Past `code_mode.approval_wait` without an answer, the call raises
//! `PermissionError` without being submitted, and the approval is denied so that
//! it does not linger.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::json;
use toolgate_core::Principal;

use super::CodeMode;
use super::ask::{AskApproval, NeverAsk};
use super::audit::{begin_audit, end_audit, epoch_ms, gate_time};
use super::host::Segment;
use super::protocol::ToWorker;
use super::replies::reply_for;
use super::run_result::{CodeRun, resume_error, worker_error};
use super::wall_clock::{Stopped, WallClock};
use crate::{Gate, Outcome, ToolCall, store::ApprovalStatus, store::PausedRun, store::StoreError};

impl CodeMode {
    /// Resumes the paused program `run_id` for `principal` (who must be the one
    /// that ran it). Refused — a [`CodeRun`] whose error has kind `resume` — for
    /// a run that is unknown, finished, being resumed elsewhere, another
    /// principal's, or whose snapshot's seal does not match.
    ///
    /// The audit log records the resume as `run_code` with call id
    /// `RUN_ID-resume-N` under the program's run id.
    pub async fn resume(&self, gate: &Gate, run_id: &str, principal: &Principal) -> CodeRun {
        self.resume_asking(gate, run_id, principal, &NeverAsk).await
    }

    /// [`CodeMode::resume`] with an asker for approvals the program needs after
    /// it goes on (see [`AskApproval`]).
    pub async fn resume_asking(
        &self,
        gate: &Gate,
        run_id: &str,
        principal: &Principal,
        ask: &dyn AskApproval,
    ) -> CodeRun {
        let started = Instant::now();
        let mut run = CodeRun::new();
        let paused = match gate.store().take_run(run_id.trim()) {
            Ok(paused) => paused,
            Err(e) => {
                run.fail(resume_error(e.to_string()));
                return run;
            }
        };
        let run_id = paused.run_id.as_str();
        if paused.principal != principal.id {
            let _ = gate.store().release_run(run_id);
            run.fail(resume_error(format!(
                "program {run_id} was run by principal `{}`, and only it may resume the program",
                paused.principal
            )));
            return run;
        }
        let intent = match begin_audit(
            gate,
            run_id,
            &format!("{run_id}-resume-{}", paused.suspensions),
            &paused.session,
            principal,
            json!({
                "resume": run_id,
                "sha256": paused.code_sha256,
                "approval_id": paused.approval_id,
            }),
        ) {
            Ok(intent) => intent,
            Err(e) => {
                let _ = gate.store().release_run(run_id);
                run.fail(worker_error(format!(
                    "the audit log cannot be written ({}), so the program was not resumed; tell the operator",
                    e.reported()
                )));
                return run;
            }
        };
        self.resume_paused(gate, &paused, principal, ask, &mut run)
            .await;
        if !run.is_pending()
            && let Err(e) = gate.store().finish_run(run_id)
        {
            tracing::warn!(
                run_id,
                "a resumed program could not be marked finished: {e}"
            );
        }
        end_audit(gate, intent, started, &run);
        run
    }

    async fn resume_paused(
        &self,
        gate: &Gate,
        paused: &PausedRun,
        principal: &Principal,
        ask: &dyn AskApproval,
        run: &mut CodeRun,
    ) {
        let mut segment = Segment {
            run_id: paused.run_id.clone(),
            session: paused.session.clone(),
            code_sha256: paused.code_sha256.clone(),
            calls: usize::try_from(paused.calls).unwrap_or(usize::MAX),
            suspensions: usize::try_from(paused.suspensions).unwrap_or(usize::MAX),
            elapsed_before: Duration::from_millis(paused.elapsed_ms),
            limit_hit: None,
        };
        run.calls = segment.calls;
        let clock = WallClock::new(
            self.current_limits()
                .wall_clock
                .saturating_sub(segment.elapsed_before),
        );
        let answer = if self.expired(gate, paused) {
            ToWorker::Raise {
                exception: "PermissionError".into(),
                message: format!(
                    "approval {} was not answered within {} (`code_mode.approval_wait`), so this call did not run",
                    paused.approval_id,
                    humantime::format_duration(self.current_limits().approval_wait)
                ),
            }
        } else {
            let call = ToolCall::new(
                paused.call_id.clone(),
                paused.tool.clone(),
                paused.arguments.clone(),
            );
            match self
                .call_asking(gate, &paused.session, principal, &call, ask, &clock)
                .await
            {
                Ok(Outcome::PendingApproval {
                    approval_id,
                    reason,
                }) => {
                    // Still waiting (perhaps on a new request, if the old one was
                    // used up by another call): stay paused, unchanged otherwise.
                    let still = PausedRun {
                        approval_id,
                        reason,
                        ..paused.clone()
                    };
                    match gate.store().pause_run(&still) {
                        Ok(()) => run.pending(&still),
                        Err(e) => run.fail(worker_error(format!(
                            "program {} still waits for approval, but could not be kept paused ({}); tell the operator",
                            paused.run_id,
                            e.reported()
                        ))),
                    }
                    return;
                }
                Ok(outcome) => reply_for(outcome),
                Err(Stopped::WallClock) => {
                    run.fail(self.wall_clock_error());
                    return;
                }
                Err(Stopped::Broken(e)) => {
                    run.fail(worker_error(format!("the program could not go on ({e})")));
                    return;
                }
            }
        };
        let names = Self::names(gate, principal);
        let first = ToWorker::Resume {
            snapshot: BASE64.encode(&paused.snapshot),
            printed: paused.printed.clone(),
            functions: names.python_names().map(str::to_owned).collect(),
            parameters: Self::parameters(gate, &names),
            limits: self.interpreter_limits(),
            answer: Box::new(answer),
        };
        self.run_segment(
            gate,
            principal,
            &names,
            first,
            &mut segment,
            &clock,
            ask,
            run,
        )
        .await;
    }

    /// Whether the approval `paused` waits for went unanswered past its wait; a
    /// request still pending then is denied, so it does not linger.
    fn expired(&self, gate: &Gate, paused: &PausedRun) -> bool {
        let now = gate_time(gate);
        if epoch_ms(now) < paused.expires_ms {
            return false;
        }
        let store = gate.store();
        match crate::store::ApprovalStore::get(store.as_ref(), &paused.approval_id) {
            Ok(Some(approval)) if approval.status == ApprovalStatus::Pending => {
                let _ = store.deny(
                    &paused.approval_id,
                    Some("no one answered before the waiting program's code_mode.approval_wait ran out"),
                    now,
                );
                true
            }
            Ok(Some(approval)) => approval
                .decided_at
                .as_deref()
                .and_then(|t| humantime::parse_rfc3339(t).ok())
                .is_none_or(|decided| epoch_ms(decided) >= paused.expires_ms),
            Ok(None) | Err(_) => true,
        }
    }

    /// The programs paused for approval in `gate`'s store, oldest first.
    pub fn paused(gate: &Gate) -> Result<Vec<PausedRun>, StoreError> {
        gate.store().paused_runs()
    }
}
