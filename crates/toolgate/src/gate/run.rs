//! Running a tool: under a deadline and the caller's cancellation, retried only as
//! its effect permits (a lost answer too, where repeating is safe), with panics
//! caught.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_core::{DynTool, Retry, ToolCtx, ToolError};
use tracing::Instrument;

/// Limits on one execution.
#[derive(Debug, Clone, Copy)]
pub(super) struct RunLimits {
    /// When all attempts together must have finished.
    pub deadline: Instant,
    /// Attempts at most, when the effect permits retrying.
    pub max_attempts: u32,
    /// The first backoff; each retry doubles it (a tool's `retry_after` wins).
    pub backoff: Duration,
}

/// How an execution ended.
#[derive(Debug)]
pub(super) enum RunEnd {
    Done(Result<Value, ToolError>),
    TimedOut,
    Cancelled,
    Panicked(String),
}

/// Runs `tool` until it succeeds, fails in a way that may not be retried, or runs
/// out of attempts or time. Returns how it ended and how many attempts it took.
pub(super) async fn run(
    tool: &dyn DynTool,
    ctx: &ToolCtx,
    arguments: &Value,
    limits: RunLimits,
    cancel: &CancellationToken,
) -> (RunEnd, u32) {
    let deadline = limits.deadline;
    let may_retry = match tool.effect().retry() {
        Retry::Freely => true,
        Retry::WithSameKey => ctx.idempotency_key().is_some() && tool.passes_idempotency_key(),
        Retry::Never => false,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let span = tracing::debug_span!("toolgate.attempt", toolgate.attempt = i64::from(attempt));
        let call = AssertUnwindSafe(tool.call(ctx, arguments.clone()))
            .catch_unwind()
            .instrument(span);
        // The call is polled before its deadline: a call that finishes at once
        // never registers the timer, and registering one wakes the runtime's
        // driver (a syscall, and another turn of its poll) on every call.
        let end = tokio::select! {
            biased;
            _ = cancel.cancelled() => RunEnd::Cancelled,
            result = call => match result {
                Ok(result) => RunEnd::Done(result),
                Err(panic) => RunEnd::Panicked(panic_message(&panic)),
            },
            _ = tokio::time::sleep_until(deadline.into()) => RunEnd::TimedOut,
        };
        let wait = match &end {
            RunEnd::Done(Err(
                error @ (ToolError::Retryable { .. } | ToolError::Unknown { .. }),
            )) if may_retry && attempt < limits.max_attempts => {
                let retry_after = match error {
                    ToolError::Retryable { retry_after, .. } => *retry_after,
                    _ => None,
                };
                retry_after.unwrap_or(limits.backoff * 2u32.saturating_pow(attempt - 1))
            }
            _ => return (end, attempt),
        };
        if Instant::now() + wait >= deadline {
            return (end, attempt);
        }
        tokio::select! {
            _ = cancel.cancelled() => return (RunEnd::Cancelled, attempt),
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
