//! Waiting for another thread's work from a tokio worker without holding up the
//! worker's other tasks.
//!
//! The store's traits are synchronous, and the gate calls them inline from
//! whatever thread runs the call, often a tokio worker. A worker that blocks on a
//! lock or a reply takes its whole share of the runtime with it: on two cores,
//! two calls waiting for a commit stop every other call. Then nothing queues
//! behind the commit in progress, and group commit has nothing to group.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `wait`, a blocking wait, on this thread. On a multi-threaded runtime's
/// worker, the worker's other tasks move to another thread first
/// (`block_in_place`), so they go on while this one waits; anywhere else (a
/// current-thread runtime, a plain thread) it simply waits.
pub(crate) fn wait_blocking<T>(wait: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}
