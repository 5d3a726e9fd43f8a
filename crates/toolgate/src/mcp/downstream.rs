//! The MCP client a served call runs for, reachable from inside the tool.
//!
//! `toolgate serve` runs each `tools/call` through the gate inside a scope that
//! holds the calling client's [`Downstream`]. A tool that runs long reports
//! progress through it, logs to the client, or asks the client for something (an
//! upstream MCP server's sampling or elicitation request, forwarded): the client
//! sees it as coming from the call it made. Outside a served call there is none.
//!
//! The scope is task-local: a tool that spawns a task and reports from there must
//! take [`Downstream::current`] before it spawns.

// MCP logging is deprecated by the 2026-07-28 revision, and current in the
// revisions this server speaks.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use serde_json::Value;

tokio::task_local! {
    static DOWNSTREAM: Downstream;
}

/// The client of the served call in progress: its connection, the progress token
/// it sent with the call, and the log level it asked for.
#[derive(Clone)]
pub struct Downstream {
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    log_level: LogLevel,
}

impl std::fmt::Debug for Downstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downstream")
            .field("progress_token", &self.progress_token)
            .finish_non_exhaustive()
    }
}

impl Downstream {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
        log_level: LogLevel,
    ) -> Self {
        Downstream {
            peer,
            progress_token,
            log_level,
        }
    }

    /// The client of the served call this task runs, if it runs one.
    pub fn current() -> Option<Downstream> {
        DOWNSTREAM.try_with(Clone::clone).ok()
    }

    /// Runs `future` with `self` as the current downstream.
    pub(crate) async fn scope<F: Future>(self, future: F) -> F::Output {
        DOWNSTREAM.scope(self, future).await
    }

    /// The client's connection: for requests to it (sampling, elicitation) and
    /// for what it declared at `initialize`.
    pub fn peer(&self) -> &Peer<RoleServer> {
        &self.peer
    }

    /// The token the client sent to receive progress for this call, if any.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress_token.as_ref()
    }

    /// Reports progress on the call; sent only when the client asked for progress.
    /// Returns whether a notification was sent.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> bool {
        let Some(token) = &self.progress_token else {
            return false;
        };
        let mut param = ProgressNotificationParam::new(token.clone(), progress);
        param.total = total;
        param.message = message;
        self.peer.notify_progress(param).await.is_ok()
    }

    /// Logs to the client, when `level` is at or above the level it asked for
    /// (`info` until it asks). Returns whether a notification was sent.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) -> bool {
        if !self.log_level.admits(level) {
            return false;
        }
        let mut param = LoggingMessageNotificationParam::new(level, data);
        param.logger = logger.map(str::to_owned);
        self.peer.notify_logging_message(param).await.is_ok()
    }

    /// Passes on an upstream server's progress on this call: its progress, total
    /// and message, under the token this call's client sent.
    pub async fn forward_progress(&self, upstream: &ProgressNotificationParam) -> bool {
        self.progress(upstream.progress, upstream.total, upstream.message.clone())
            .await
    }

    /// Passes on an upstream server's log message, as [`Downstream::log`] would
    /// send it (at or above the client's level).
    pub async fn forward_log(&self, upstream: &LoggingMessageNotificationParam) -> bool {
        self.log(
            upstream.level,
            upstream.logger.as_deref(),
            upstream.data.clone(),
        )
        .await
    }

    /// Whether the client can show a form to its user (MCP elicitation).
    pub fn supports_elicitation(&self) -> bool {
        self.peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
    }

    /// Whether the client can sample its model for the server.
    pub fn supports_sampling(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.sampling.is_some())
    }
}

/// The least severe level a client wants logged: a session's, shared by the
/// session and every call it makes (`info` until it asks), or the one a stateless
/// request named (none: no logs).
#[derive(Clone, Debug)]
pub(crate) struct LogLevel {
    asked: Arc<Mutex<Option<LoggingLevel>>>,
    /// The level until the client asks; `None` logs nothing.
    unasked: Option<LoggingLevel>,
}

impl Default for LogLevel {
    fn default() -> Self {
        LogLevel {
            asked: Arc::default(),
            unasked: Some(LoggingLevel::Info),
        }
    }
}

impl LogLevel {
    /// The level a stateless request asked for, if any (else nothing is logged).
    pub(crate) fn fixed(level: Option<LoggingLevel>) -> Self {
        LogLevel {
            asked: Arc::new(Mutex::new(level)),
            unasked: None,
        }
    }

    pub(crate) fn set(&self, level: LoggingLevel) {
        *self.asked.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    fn admits(&self, level: LoggingLevel) -> bool {
        let asked = *self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        asked
            .or(self.unasked)
            .is_some_and(|floor| severity(level) >= severity(floor))
    }
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_below_the_asked_level_are_held_back() {
        let level = LogLevel::default();
        assert!(!level.admits(LoggingLevel::Debug));
        assert!(level.admits(LoggingLevel::Info));
        level.set(LoggingLevel::Warning);
        assert!(!level.admits(LoggingLevel::Notice));
        assert!(level.admits(LoggingLevel::Error));
        level.set(LoggingLevel::Debug);
        assert!(level.admits(LoggingLevel::Debug));
    }

    #[test]
    fn a_stateless_request_that_names_no_level_gets_no_logs() {
        assert!(!LogLevel::fixed(None).admits(LoggingLevel::Emergency));
        let warning = LogLevel::fixed(Some(LoggingLevel::Warning));
        assert!(!warning.admits(LoggingLevel::Info));
        assert!(warning.admits(LoggingLevel::Error));
    }

    #[tokio::test]
    async fn outside_a_served_call_there_is_no_downstream() {
        assert!(Downstream::current().is_none());
    }
}
