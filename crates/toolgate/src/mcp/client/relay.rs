//! Passing an upstream server's notifications and requests on to the MCP client
//! whose call runs there (`toolgate serve`; see [`Downstream`]).
//!
//! Progress carries the token of the upstream request it is about, so it reaches
//! exactly the client whose call that is. Log messages and requests (sampling,
//! elicitation) carry no such link in the protocol versions servers speak today:
//! they go to the client of the most recent call still running on that server,
//! which is exact while a server runs one served call at a time.
//!
//! rmcp handles each notification on a task of its own, so a call's answer can
//! overtake the log messages a server sent before it. [`Sequenced`] counts those
//! notifications as they come off the wire, in order, and a served call waits
//! ([`Relay::caught_up`]) until the ones that arrived before its answer are passed on.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ProgressToken, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::watch;

use crate::mcp::Downstream;

/// The served calls running on one upstream server.
#[derive(Default)]
pub(super) struct Relay {
    calls: Mutex<Vec<Call>>,
    next: AtomicU64,
    /// Progress and log notifications read from the server so far.
    arrived: AtomicU64,
    /// Of those, how many the handler has passed on.
    passed_on: watch::Sender<u64>,
}

/// How long a finished call waits for notifications that arrived before its answer.
const CATCH_UP_LIMIT: Duration = Duration::from_millis(500);

struct Call {
    id: u64,
    token: ProgressToken,
    downstream: Downstream,
}

/// Keeps a call registered while it runs.
pub(super) struct Registered {
    relay: Arc<Relay>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.relay.calls().retain(|c| c.id != self.id);
    }
}

impl Relay {
    fn calls(&self) -> MutexGuard<'_, Vec<Call>> {
        // Entries are pushed and removed whole, so the list behind a poisoned lock is whole.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the upstream request sent with `token` for `downstream`'s call.
    pub(super) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        downstream: Downstream,
    ) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls().push(Call {
            id,
            token,
            downstream,
        });
        Registered {
            relay: self.clone(),
            id,
        }
    }

    /// The client of the call that progress with `token` is about.
    pub(super) fn for_progress(&self, token: &ProgressToken) -> Option<Downstream> {
        self.calls()
            .iter()
            .find(|c| &c.token == token)
            .map(|c| c.downstream.clone())
    }

    /// The client of the most recent call still running.
    pub(super) fn latest(&self) -> Option<Downstream> {
        self.calls().last().map(|c| c.downstream.clone())
    }

    /// Records that the handler has passed on (or dropped) a progress or log notification.
    pub(super) fn passed_on(&self) {
        self.passed_on.send_modify(|n| *n += 1);
    }

    /// Waits until every progress and log notification that arrived so far has been
    /// passed on, for at most [`CATCH_UP_LIMIT`].
    pub(super) async fn caught_up(&self) {
        let arrived = self.arrived.load(Ordering::Acquire);
        let mut passed_on = self.passed_on.subscribe();
        let _ = tokio::time::timeout(CATCH_UP_LIMIT, passed_on.wait_for(|n| *n >= arrived)).await;
    }
}

/// A client transport that counts the server's progress and log notifications
/// as they arrive, for [`Relay::caught_up`].
pub(super) struct Sequenced<T> {
    inner: T,
    relay: Arc<Relay>,
}

impl<T> Sequenced<T> {
    pub(super) fn new(inner: T, relay: Arc<Relay>) -> Self {
        Self { inner, relay }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Sequenced<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(n) = &message
            && matches!(
                n.notification,
                ServerNotification::ProgressNotification(_)
                    | ServerNotification::LoggingMessageNotification(_)
            )
        {
            self.relay.arrived.fetch_add(1, Ordering::Release);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
