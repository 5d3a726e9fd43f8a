//! Who a request to the MCP endpoint runs as: the principal its credential
//! names, narrowed by a token's scopes and carrying its claims, with what the
//! server offers that principal; and the binding of a session to the credential
//! that opened it.

use std::sync::{Arc, OnceLock};

use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use toolgate_core::Principal;

use crate::auth::{AuthMethod, Identity};
use crate::gate::Authenticated;
use crate::mcp::server::Shared;
use crate::mcp::server::offering::Offering;
use crate::mcp::server::restore::Opener;
use crate::mcp::server::stateless;

/// Who a request runs as, and what the server offers that principal.
pub(crate) struct Caller {
    /// The principal the call runs as, with its credential's claims.
    pub(crate) principal: Principal,
    /// What the server offers that principal (its gate and tool list).
    pub(crate) offering: Arc<Offering>,
    /// How an HTTP request authenticated (`None` on stdio), for the audit log.
    pub(crate) authenticated: Option<Authenticated>,
}

/// Who the request runs as: the principal its credential names (see
/// [`crate::auth`]), else the one the server serves. A session belongs to the
/// credential that opened it; another credential's request is refused.
pub(super) fn resolve(
    shared: &Shared,
    opened_by: &OnceLock<Option<Opener>>,
    context: &RequestContext<RoleServer>,
) -> Result<Caller, McpError> {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let identity = parts.and_then(|parts| parts.extensions.get::<Identity>());
    let authenticated = parts.map(|_| Authenticated {
        method: identity
            .map_or(AuthMethod::None, |i| i.method)
            .as_str()
            .to_owned(),
        credential: identity.and_then(|i| i.credential.clone()),
    });
    if !stateless::is_stateless(context) {
        let presented = identity.map(|i| (i.principal.as_deref(), i.credential.as_deref()));
        let opener = opened_by.get_or_init(|| {
            presented.map(|(principal, credential)| {
                (principal.map(str::to_owned), credential.map(str::to_owned))
            })
        });
        let opener = opener
            .as_ref()
            .map(|(principal, credential)| (principal.as_deref(), credential.as_deref()));
        if opener != presented {
            return Err(McpError::invalid_request(
                "this MCP session was opened with another credential; open a session of your own",
                None,
            ));
        }
    }
    let principal = match identity.and_then(|i| i.principal.as_deref()) {
        None => shared.principals().served.clone(),
        Some(id) => shared.principal_named(id).ok_or_else(|| {
            McpError::invalid_request(
                format!(
                    "the credential names the principal `{id}`, which the spec file does not declare; \
                     declare it under `principals:` or make a key for a declared one"
                ),
                None,
            )
        })?,
    };
    // A token's tool scopes narrow its principal; they never widen it.
    let mut principal = match identity.and_then(|i| i.scopes.as_deref()) {
        Some(patterns) => principal.narrowed_to(patterns),
        None => principal,
    };
    if let Some(identity) = identity {
        // Policy rules may test what the credential says (`claim:`).
        principal.claims = identity.claims.clone();
    }
    let offering = shared.offering_for(&principal);
    Ok(Caller {
        principal,
        offering,
        authenticated,
    })
}
