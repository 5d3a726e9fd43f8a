//! MCP sessions that any server sharing the store can continue, for session-based
//! clients (the revisions with `initialize` and `Mcp-Session-Id`) behind a load
//! balancer that does not keep a client on one instance.
//!
//! An `initialize` answered here is kept in the store (see
//! [`crate::store::StoredSessions`], by the digest of its session id): the client's
//! `initialize` parameters (so its capabilities, elicitation among them, come back
//! with it) and who opened it (principal and credential name). An instance that
//! gets a request for a session it does not hold asks rmcp to restore it: rmcp
//! replays the `initialize` into a new handler, which binds itself to the stored
//! opener, not to whoever presents the id, so a request with another principal's
//! credential is refused as it is on the instance that opened it. The
//! conversation (state, history, flow position) is the gate's, named by the
//! session id, so it is the same everywhere.
//!
//! Every request for a session checks the store: a session that expired or was
//! deleted (HTTP `DELETE`, by the credential that opened it, on any instance) is
//! gone on every instance at its next request, which gets 404. A session lasts the
//! server's idle timeout past its last request (renewed at most every tenth of
//! it); an instance closing its own copy
//! (idle, or to make room) leaves the stored session to the others.
//!
//! What stays with one instance: the standalone `GET` stream, and a request the
//! server sends the client (an elicitation) while a call waits, whose answer must
//! reach the instance that asked.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{InitializeRequestParams, RequestMetaObject};
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::{Value, json};

use super::capacity::client::Client;
use crate::auth::Identity;
use crate::store::{SessionKey, SessionKind, StoredSession, StoredSessions, now_ms};

/// The header that carries the session id.
const SESSION_HEADER: &str = "mcp-session-id";

/// Where a replayed `initialize` carries the stored opener to the new handler
/// (believed only on a replay, which no client can send).
const OPENER_META: &str = "io.toolgate/openedBy";

/// The principal and credential name of whoever opened a session.
pub(crate) type Opener = (Option<String>, Option<String>);

/// Who opened a session, as a request's identity says: `None` without a credential.
pub(crate) fn opener_of(identity: Option<&Identity>) -> Option<Opener> {
    identity.map(|i| (i.principal.clone(), i.credential.clone()))
}

fn opener_json(opener: &Option<Opener>) -> Value {
    match opener {
        None => Value::Null,
        Some((principal, credential)) => json!({"principal": principal, "credential": credential}),
    }
}

fn opener_from(value: Option<&Value>) -> Option<Opener> {
    let value = value.filter(|v| v.is_object())?;
    let text = |field: &str| value.get(field).and_then(Value::as_str).map(str::to_owned);
    Some((text("principal"), text("credential")))
}

/// The opener a replayed `initialize` carries, taken out of its `_meta`.
pub(crate) fn take_opener(request: &mut InitializeRequestParams) -> Option<Opener> {
    let meta = request.meta.as_mut()?;
    let opener = meta.remove(OPENER_META);
    if meta.is_empty() {
        request.meta = None;
    }
    opener_from(opener.as_ref())
}

tokio::task_local! {
    /// Who presents the request being served: its opener, were it to open a
    /// session, and the client it counts against.
    static PRESENTED: (Option<Opener>, Client);
}

/// The client of the request being served, where [`remember`] saw it.
pub(crate) fn presented_client() -> Option<Client> {
    PRESENTED.try_with(|(_, client)| *client).ok()
}

/// The store the sessions of one server are kept in, and how long one lasts idle.
pub(crate) struct Restorable {
    store: Arc<dyn StoredSessions>,
    idle: Duration,
}

impl Restorable {
    pub(crate) fn new(store: Arc<dyn StoredSessions>, idle: Duration) -> Self {
        Restorable { store, idle }
    }

    fn idle_ms(&self) -> u64 {
        u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX)
    }

    fn stored(&self, id: &str) -> Result<Option<StoredSession>, crate::store::StoreError> {
        self.store
            .session(SessionKind::Mcp, &SessionKey::of(id), now_ms())
    }

    /// Whether the session `id` is still live in the store (neither expired nor
    /// deleted), renewing it when it is due.
    pub(crate) fn live(&self, id: &str) -> Result<bool, crate::store::StoreError> {
        let now = now_ms();
        let Some(session) = self.stored(id)? else {
            return Ok(false);
        };
        if session.due_for_renewal(now) {
            let until = now.saturating_add(self.idle_ms());
            return self
                .store
                .renew_session(SessionKind::Mcp, &session.key, now, until);
        }
        Ok(true)
    }
}

/// rmcp's view of the store: what it persists after `initialize`, loads to
/// restore, and deletes on `DELETE`.
pub(crate) struct ForRmcp(pub(crate) Arc<Restorable>);

#[async_trait::async_trait]
impl SessionStore for ForRmcp {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(session) = self.0.stored(session_id)? else {
            return Ok(None);
        };
        let Some(params) = session.data.get("initialize") else {
            return Ok(None);
        };
        let mut params: InitializeRequestParams = serde_json::from_value(params.clone())?;
        let opener = opener_json(&opener_from(session.data.get("opened_by")));
        let meta = params.meta.get_or_insert_with(RequestMetaObject::default);
        meta.insert(OPENER_META.to_owned(), opener);
        Ok(Some(SessionState::new(params)))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let opener = PRESENTED
            .try_with(|(opener, _)| opener.clone())
            .map_err(|_| "a session is stored only while its `initialize` is served")?;
        let mut params = state.initialize_params.clone();
        // A client cannot name its own opener.
        let _ = take_opener(&mut params);
        let now = now_ms();
        let session = StoredSession {
            kind: SessionKind::Mcp,
            key: SessionKey::of(session_id),
            principal: opener.as_ref().and_then(|(p, _)| p.clone()),
            data: json!({
                "initialize": serde_json::to_value(&params)?,
                "opened_by": opener_json(&opener),
            }),
            created_ms: now,
            expires_ms: now.saturating_add(self.0.idle_ms()),
            idle_ms: self.0.idle_ms(),
        };
        Ok(self.0.store.put_session(&session)?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.0
            .store
            .delete_session(SessionKind::Mcp, &SessionKey::of(session_id))?;
        Ok(())
    }
}

/// Notes who presents each request to the MCP endpoint (see [`PRESENTED`]), and
/// refuses a `DELETE` of a stored session by a credential other than its opener's.
pub(crate) async fn remember(
    State(restorable): State<Arc<Restorable>>,
    request: Request,
    next: Next,
) -> Response {
    let identity = request.extensions().get::<Identity>();
    let opener = opener_of(identity);
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let client = Client::of_request(identity, peer);
    let id = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok());
    if let (&Method::DELETE, Some(id)) = (request.method(), id) {
        match restorable.stored(id) {
            Ok(Some(session)) if opener_from(session.data.get("opened_by")) != opener => {
                return (
                    StatusCode::FORBIDDEN,
                    [(header::CONTENT_TYPE, "text/plain")],
                    Body::from(
                        "this MCP session was opened with another credential; only that credential may end it\n",
                    ),
                )
                    .into_response();
            }
            Ok(_) => {}
            Err(e) => {
                return (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response();
            }
        }
    }
    PRESENTED.scope((opener, client), next.run(request)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_initialize_gives_up_its_opener_and_keeps_the_rest_of_its_meta() {
        let mut params: InitializeRequestParams = serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "c", "version": "1"},
            "_meta": {OPENER_META: {"principal": "support", "credential": null}, "x": 1},
        }))
        .unwrap();
        assert_eq!(
            take_opener(&mut params),
            Some((Some("support".into()), None))
        );
        assert_eq!(
            serde_json::to_value(&params).unwrap()["_meta"],
            json!({"x": 1})
        );
        assert_eq!(take_opener(&mut params), None);
    }

    #[test]
    fn no_credential_and_a_credential_naming_nobody_are_different_openers() {
        assert_eq!(opener_from(Some(&opener_json(&None))), None);
        let nobody = Some((None, None));
        assert_eq!(opener_from(Some(&opener_json(&nobody))), nobody);
    }
}
