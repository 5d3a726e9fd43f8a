//! Passing an upstream server's notifications and requests on to the MCP client
//! whose call runs there (`toolgate serve`; see [`Downstream`]).
//!
//! Progress carries the token of the upstream request it is about, so it reaches
//! exactly the client whose call that is. Log messages and requests (sampling,
//! elicitation) carry no such link in the protocol versions servers speak today:
//! they go to the client of the most recent call still running on that server,
//! which is exact while a server runs one served call at a time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::ProgressToken;

use crate::mcp::server::Downstream;

/// The served calls running on one upstream server.
#[derive(Default)]
pub struct Relay {
    calls: Mutex<Vec<Call>>,
    next: AtomicU64,
}

struct Call {
    id: u64,
    token: ProgressToken,
    downstream: Downstream,
}

/// Keeps a call registered while it runs.
pub struct Registered {
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
    pub fn register(self: &Arc<Self>, token: ProgressToken, downstream: Downstream) -> Registered {
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
    pub fn for_progress(&self, token: &ProgressToken) -> Option<Downstream> {
        self.calls()
            .iter()
            .find(|c| &c.token == token)
            .map(|c| c.downstream.clone())
    }

    /// The client of the most recent call still running.
    pub fn latest(&self) -> Option<Downstream> {
        self.calls().last().map(|c| c.downstream.clone())
    }
}
