//! How the caller of the calls in progress proved who it is, for the audit log.
//!
//! The HTTP edge of the MCP server knows how each request authenticated; the
//! gate writes the audit records. Rather than widen [`Gate::call`](crate::Gate::call)
//! or [`Principal`](crate::Principal) (a declared role, shared by every caller
//! of it), the edge runs a request's gate calls inside [`Authenticated::scope`],
//! and the gate reads it when it starts a call's record. A call made outside a
//! scope (the Rust API, `toolgate call`, MCP over stdio) records none.

use std::future::Future;

tokio::task_local! {
    static AUTHENTICATED: Authenticated;
}

/// How a caller authenticated, as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// `api_key`, `oauth`, `bearer_token` or `none`.
    pub method: String,
    /// What names the credential (a key's id and label, a token's `sub` and
    /// `jti`); never the credential itself.
    pub credential: Option<String>,
}

impl Authenticated {
    /// Runs `future` with every gate call in it recorded as made by `self`.
    pub async fn scope<F: Future>(self, future: F) -> F::Output {
        AUTHENTICATED.scope(self, future).await
    }

    /// The caller of the calls in progress, if a scope says.
    pub fn current() -> Option<Authenticated> {
        AUTHENTICATED.try_with(Clone::clone).ok()
    }

    /// Fills `entry`'s `auth` and `credential` from the current scope.
    pub(crate) fn stamp(entry: &mut toolgate_core::AuditEntry) {
        if let Some(current) = Authenticated::current() {
            entry.auth = Some(current.method);
            entry.credential = current.credential;
        }
    }
}
