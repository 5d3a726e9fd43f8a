//! How many streamable HTTP sessions live at once, and which one goes when a new
//! one needs room.
//!
//! Every `initialize` request creates a session that holds memory until it is
//! closed or sits idle for the idle timeout; unbounded, a flood of them takes the
//! server's memory (30 000 in 20 s took it to 2 GiB). So sessions are capped
//! overall and per client. A client is the credential a request carries (an API
//! key, an access token's subject, the server's bearer token) where there is
//! one, else the peer's IP address (an IPv6 address by its /64 network, which
//! one host usually holds whole): behind a reverse proxy every caller shares
//! the proxy's address, and one key must not end another's conversation.
//!
//! A new session over a cap takes the place of the longest-idle session with
//! no call in flight: over the client's own cap, one of its own; over the
//! overall cap, one of its own, else one of the anonymous (address-only)
//! client holding the most sessions, so a flood from a few addresses displaces
//! its own sessions before anyone else's. A session opened with a credential
//! is never closed to make room for another credential's. When no candidate
//! is left (every one has a call in flight, its own `initialize` unanswered, or
//! belongs to another credential), the new session is refused: 503 with
//! `Retry-After` and a JSON-RPC error saying so.
//!
//! [`CappedSessions`] wraps rmcp's in-memory session manager and keeps the books;
//! the [`admit`] middleware reserves a place before the transport creates the
//! session, and answers 503 when there is none.

pub(super) mod client;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionManager};
use rmcp::transport::streamable_http_server::{SessionId, session::EventStore};

use self::client::Client;
use super::restore::Restorable;
use crate::auth::Identity;

/// The default cap on live sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// The default cap on the live sessions of one client (one IP address).
pub const DEFAULT_MAX_SESSIONS_PER_CLIENT: usize = 64;
/// How long a session may sit idle by default before it is closed.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

/// The header that carries the session id.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long a refused client is told to wait before it tries again.
const RETRY_AFTER_SECONDS: u32 = 5;

/// The most of a refused request's body read to find its JSON-RPC id.
const MAX_ID_BODY: usize = 1 << 20;

/// How many streamable HTTP sessions a server keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Live sessions at most, all clients together.
    pub max_sessions: usize,
    /// Live sessions at most from one client (one IP address; IPv6 by /64).
    pub max_per_client: usize,
    /// A session with no request for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_client: DEFAULT_MAX_SESSIONS_PER_CLIENT,
            idle_timeout: DEFAULT_SESSION_IDLE,
        }
    }
}

/// The server is at its session limit and nothing can make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the server is at its session limit ({max_sessions} sessions, {max_per_client} per client) and every session has a call in flight; close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) or retry in a few seconds"
)]
pub(crate) struct Full {
    max_sessions: usize,
    max_per_client: usize,
}

#[derive(Debug)]
struct Live {
    client: Client,
    last_active: Instant,
    in_flight: usize,
}

impl Live {
    fn idle_since(&self) -> Option<Instant> {
        (self.in_flight == 0).then_some(self.last_active)
    }
}

/// The books: live sessions, and places reserved for sessions being created.
#[derive(Debug, Default)]
struct Books {
    live: HashMap<SessionId, Live>,
    reserved: HashMap<Client, usize>,
}

impl Books {
    fn held_by(&self, client: Client) -> usize {
        self.live.values().filter(|s| s.client == client).count()
            + self.reserved.get(&client).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.live.len() + self.reserved.values().sum::<usize>()
    }

    /// The longest-idle session with no call in flight, among `client`'s.
    fn idlest_of(&self, client: Client) -> Option<SessionId> {
        self.live
            .iter()
            .filter(|(_, s)| s.client == client)
            .filter_map(|(id, s)| Some((s.idle_since()?, id)))
            .min_by_key(|(since, _)| *since)
            .map(|(_, id)| id.clone())
    }

    /// The longest-idle session with no call in flight of the anonymous client
    /// holding the most sessions (among clients that have such a session); a
    /// credential's sessions are never taken for another's.
    fn idlest_of_the_largest(&self) -> Option<SessionId> {
        let mut held: HashMap<Client, usize> = HashMap::new();
        for session in self.live.values() {
            *held.entry(session.client).or_default() += 1;
        }
        self.live
            .iter()
            .filter(|(_, s)| !s.client.is_credential())
            .filter_map(|(id, s)| Some((held[&s.client], s.idle_since()?, id)))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, _, id)| id.clone())
    }
}

/// rmcp's in-memory session manager, with every session on the books.
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    limits: SessionLimits,
    books: Arc<Mutex<Books>>,
    /// Where sessions are kept for other servers to continue, if anywhere.
    restorable: Option<Arc<Restorable>>,
}

impl CappedSessions {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle_timeout);
        CappedSessions {
            inner,
            limits: SessionLimits {
                max_sessions: limits.max_sessions.max(1),
                max_per_client: limits.max_per_client.max(1),
                ..limits
            },
            books: Arc::default(),
            restorable: None,
        }
    }

    /// Keeps every session in `store` too, for any server sharing it to continue
    /// (see `restore`).
    pub(crate) fn restoring(mut self, store: Arc<dyn crate::store::StoredSessions>) -> Self {
        self.restorable = Some(Arc::new(Restorable::new(store, self.limits.idle_timeout)));
        self
    }

    /// Where sessions are kept for other servers, if anywhere.
    pub(crate) fn restorable(&self) -> Option<&Arc<Restorable>> {
        self.restorable.as_ref()
    }

    /// How many sessions are live now.
    pub(crate) fn live(&self) -> usize {
        self.books().live.len()
    }

    fn books(&self) -> MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves a place for a new session of `client`, closing the sessions that
    /// make room for it.
    pub(crate) async fn reserve(&self, client: Client) -> Result<Reservation, Full> {
        let (reservation, evicted) = self.reserve_now(client)?;
        for id in evicted {
            tracing::info!(session = %id, "closing an idle MCP session to make room for a new one");
            if let Err(e) = self.inner.close_session(&id).await {
                tracing::warn!(session = %id, "cannot close an evicted MCP session: {e}");
            }
        }
        Ok(reservation)
    }

    /// The bookkeeping half of [`CappedSessions::reserve`]: the reservation and
    /// the sessions taken off the books to make room (still to be closed).
    fn reserve_now(&self, client: Client) -> Result<(Reservation, Vec<SessionId>), Full> {
        let full = Full {
            max_sessions: self.limits.max_sessions,
            max_per_client: self.limits.max_per_client,
        };
        let mut books = self.books();
        let mut evicted: Vec<(SessionId, Live)> = Vec::new();
        let mut make_room = |books: &mut Books| -> Option<()> {
            while books.held_by(client) >= self.limits.max_per_client {
                let id = books.idlest_of(client)?;
                let live = books.live.remove(&id)?;
                evicted.push((id, live));
            }
            while books.total() >= self.limits.max_sessions {
                let id = books
                    .idlest_of(client)
                    .or_else(|| books.idlest_of_the_largest())?;
                let live = books.live.remove(&id)?;
                evicted.push((id, live));
            }
            Some(())
        };
        if make_room(&mut books).is_none() {
            // Nothing is closed when there is no room after all.
            books.live.extend(evicted);
            return Err(full);
        }
        *books.reserved.entry(client).or_default() += 1;
        let evicted = evicted.into_iter().map(|(id, _)| id).collect();
        Ok((
            Reservation {
                books: self.books.clone(),
                client,
                taken: false,
            },
            evicted,
        ))
    }

    /// Marks activity on a session: now, and `delta` calls more or fewer in flight.
    fn touch(&self, id: &SessionId, delta: isize) {
        touch(&self.books, id, delta);
    }
}

fn touch(books: &Mutex<Books>, id: &SessionId, delta: isize) {
    let mut books = books.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(session) = books.live.get_mut(id) {
        session.last_active = Instant::now();
        session.in_flight = session.in_flight.saturating_add_signed(delta);
    }
}

/// A place held for a session being created; given back if it never is.
pub(crate) struct Reservation {
    books: Arc<Mutex<Books>>,
    client: Client,
    taken: bool,
}

impl Reservation {
    /// The session took its place; its `initialize` is in flight until answered.
    fn take(mut self, id: SessionId) {
        let mut books = self.books.lock().unwrap_or_else(PoisonError::into_inner);
        release(&mut books, self.client);
        books.live.insert(
            id,
            Live {
                client: self.client,
                last_active: Instant::now(),
                in_flight: 1,
            },
        );
        self.taken = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.taken {
            release(
                &mut self.books.lock().unwrap_or_else(PoisonError::into_inner),
                self.client,
            );
        }
    }
}

fn release(books: &mut Books, client: Client) {
    if let Some(count) = books.reserved.get_mut(&client) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            books.reserved.remove(&client);
        }
    }
}

tokio::task_local! {
    /// The place the [`admit`] middleware reserved for the session this request
    /// may create.
    static RESERVED: Mutex<Option<Reservation>>;
}

/// Ends the in-flight mark of a request when its response stream is dropped.
struct InFlight {
    books: Arc<Mutex<Books>>,
    id: SessionId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        touch(&self.books, &self.id, -1);
    }
}

/// A request's response stream, with its in-flight mark.
struct Tracked<S> {
    stream: Pin<Box<S>>,
    _in_flight: InFlight,
}

impl<S: Stream> Stream for Tracked<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.stream.as_mut().poll_next(cx)
    }
}

impl SessionManager for CappedSessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let reserved = RESERVED
            .try_with(|slot| slot.lock().unwrap_or_else(PoisonError::into_inner).take())
            .ok()
            .flatten();
        let reservation = match reserved {
            Some(reservation) => reservation,
            None => self.reserve(Client::Unknown).await.map_err(session_error)?,
        };
        let (id, transport) = self.inner.create_session().await?;
        reservation.take(id.clone());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answered = self.inner.initialize_session(id, message).await;
        self.touch(id, -1);
        answered
    }

    /// With a store, a session held here is live only while the store has it: one
    /// deleted or expired elsewhere is closed here too.
    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        let here = self.inner.has_session(id).await?;
        let Some(restorable) = self.restorable.as_ref().filter(|_| here) else {
            return Ok(here);
        };
        if restorable.live(id).map_err(session_error)? {
            return Ok(true);
        }
        self.close_session(id).await?;
        Ok(false)
    }

    /// A session another server opened, on the books like one opened here.
    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        if self.restorable.is_none() {
            return Ok(RestoreOutcome::NotSupported);
        }
        let client = super::restore::presented_client().unwrap_or(Client::Unknown);
        let reservation = self.reserve(client).await.map_err(session_error)?;
        let outcome = self.inner.restore_session(id.clone()).await?;
        if let RestoreOutcome::Restored(_) = &outcome {
            reservation.take(id);
        }
        Ok(outcome)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.books().live.remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id, 1);
        let in_flight = InFlight {
            books: self.books.clone(),
            id: id.clone(),
        };
        let stream = self.inner.create_stream(id, message).await?;
        Ok(Tracked {
            stream: Box::pin(stream),
            _in_flight: in_flight,
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id, 0);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id, 0);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id, 0);
        self.inner.resume(id, last_event_id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

fn session_error(e: impl std::error::Error + Send + Sync + 'static) -> LocalSessionManagerError {
    LocalSessionManagerError::SessionError(std::io::Error::other(e).into())
}

/// Reserves a place for the session a request without a session id may create
/// (an `initialize`), and answers 503 with a JSON-RPC error when there is none.
pub(crate) async fn admit(
    State(sessions): State<Arc<CappedSessions>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || request.headers().contains_key(SESSION_HEADER) {
        return next.run(request).await;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let client = Client::of_request(request.extensions().get::<Identity>(), peer);
    match sessions.reserve(client).await {
        Ok(reservation) => {
            RESERVED
                .scope(Mutex::new(Some(reservation)), next.run(request))
                .await
        }
        Err(full) => refuse(request, full).await,
    }
}

/// 503, `Retry-After`, and a JSON-RPC error answering the request's id.
async fn refuse(request: Request, full: Full) -> Response {
    let id = axum::body::to_bytes(request.into_body(), MAX_ID_BODY)
        .await
        .ok()
        .and_then(|body| serde_json::from_slice::<serde_json::Value>(&body).ok())
        .and_then(|message| message.get("id").cloned())
        .unwrap_or(serde_json::Value::Null);
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32000,
            "message": full.to_string(),
            "data": {
                "max_sessions": full.max_sessions,
                "max_sessions_per_client": full.max_per_client,
                "retry_after_seconds": RETRY_AFTER_SECONDS,
            },
        },
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (header::RETRY_AFTER, RETRY_AFTER_SECONDS.to_string()),
        ],
        Body::from(body.to_string()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_sessions: usize, max_per_client: usize) -> SessionLimits {
        SessionLimits {
            max_sessions,
            max_per_client,
            ..SessionLimits::default()
        }
    }

    fn client(ip: &str) -> Client {
        Client::of(Some(SocketAddr::new(ip.parse().unwrap(), 1)))
    }

    /// Opens a session on the books (no transport), returning its id.
    fn open(sessions: &CappedSessions, who: Client, name: &str) -> Result<SessionId, Full> {
        std::thread::sleep(Duration::from_millis(2));
        let (reservation, evicted) = sessions.reserve_now(who)?;
        assert!(
            evicted
                .iter()
                .all(|id| !sessions.books().live.contains_key(id))
        );
        let id: SessionId = name.into();
        reservation.take(id.clone());
        sessions.touch(&id, -1);
        Ok(id)
    }

    #[test]
    fn a_client_over_its_cap_displaces_its_own_longest_idle_session() {
        let sessions = CappedSessions::new(limits(10, 2));
        let a = client("10.0.0.1");
        let b = client("10.0.0.2");
        open(&sessions, b, "b1").unwrap();
        open(&sessions, a, "a1").unwrap();
        open(&sessions, a, "a2").unwrap();
        std::thread::sleep(Duration::from_millis(2));
        sessions.touch(&"a1".into(), 0);
        open(&sessions, a, "a3").unwrap();
        let mut live: Vec<String> = sessions
            .books()
            .live
            .keys()
            .map(|k| k.to_string())
            .collect();
        live.sort();
        assert_eq!(live, ["a1", "a3", "b1"]);
    }

    #[test]
    fn over_the_overall_cap_the_largest_client_gives_way() {
        let sessions = CappedSessions::new(limits(4, 3));
        let small = client("10.0.0.1");
        let large = client("10.0.0.2");
        open(&sessions, small, "s1").unwrap();
        for name in ["l1", "l2", "l3"] {
            open(&sessions, large, name).unwrap();
        }
        open(&sessions, client("10.0.0.3"), "n1").unwrap();
        let books = sessions.books();
        assert!(books.live.contains_key("s1"));
        assert!(
            !books.live.contains_key("l1"),
            "the largest client's idlest went"
        );
        assert_eq!(books.live.len(), 4);
    }

    fn keyed(key_id: &str) -> Client {
        let mut claims = serde_json::Map::new();
        claims.insert("key_id".into(), key_id.into());
        let identity = Identity {
            principal: Some("agent".into()),
            method: crate::auth::AuthMethod::ApiKey,
            credential: Some(format!("key {key_id}")),
            scopes: None,
            claims: claims.into(),
        };
        Client::of_request(Some(&identity), Some("10.0.0.9:1".parse().unwrap()))
    }

    #[test]
    fn behind_one_address_each_credential_is_a_client_of_its_own() {
        let sessions = CappedSessions::new(limits(10, 2));
        let (alice, bob) = (keyed("a1a1a1a1"), keyed("b2b2b2b2"));
        assert_ne!(alice, bob);
        assert_eq!(alice, keyed("a1a1a1a1"));
        open(&sessions, bob, "b1").unwrap();
        for name in ["a1", "a2", "a3", "a4"] {
            open(&sessions, alice, name).unwrap();
        }
        let books = sessions.books();
        assert!(
            books.live.contains_key("b1"),
            "bob's session is not alice's to displace"
        );
        assert_eq!(books.live.len(), 3);
    }

    #[test]
    fn over_the_overall_cap_a_credential_never_displaces_another_credentials_session() {
        let sessions = CappedSessions::new(limits(3, 3));
        for name in ["b1", "b2", "b3"] {
            open(&sessions, keyed("b2b2b2b2"), name).unwrap();
        }
        let full = open(&sessions, keyed("a1a1a1a1"), "a1").unwrap_err();
        assert!(full.to_string().contains("session limit"), "{full}");
        assert_eq!(sessions.live(), 3, "bob keeps every session");
        // An anonymous client's idle session still gives way to a credential.
        let sessions = CappedSessions::new(limits(3, 3));
        open(&sessions, client("10.0.0.1"), "n1").unwrap();
        open(&sessions, keyed("b2b2b2b2"), "b1").unwrap();
        open(&sessions, keyed("b2b2b2b2"), "b2").unwrap();
        open(&sessions, keyed("a1a1a1a1"), "a1").unwrap();
        let books = sessions.books();
        assert!(!books.live.contains_key("n1") && books.live.contains_key("a1"));
    }

    #[test]
    fn sessions_with_calls_in_flight_are_never_displaced() {
        let sessions = CappedSessions::new(limits(10, 2));
        let a = client("10.0.0.1");
        for name in ["a1", "a2"] {
            let id = open(&sessions, a, name).unwrap();
            sessions.touch(&id, 1);
        }
        let full = open(&sessions, a, "a3").unwrap_err();
        assert!(full.to_string().contains("session limit"), "{full}");
        assert_eq!(sessions.live(), 2);
        sessions.touch(&"a2".into(), -1);
        open(&sessions, a, "a3").unwrap();
        assert!(!sessions.books().live.contains_key("a2"));
    }

    #[test]
    fn a_session_whose_initialize_is_unanswered_is_never_displaced() {
        let sessions = CappedSessions::new(limits(10, 1));
        let a = client("10.0.0.1");
        let (reservation, _) = sessions.reserve_now(a).unwrap();
        reservation.take("a1".into());
        assert!(sessions.reserve_now(a).is_err());
        sessions.touch(&"a1".into(), -1);
        assert!(sessions.reserve_now(a).is_ok());
    }

    #[test]
    fn a_reservation_never_taken_gives_its_place_back() {
        let sessions = CappedSessions::new(limits(1, 1));
        let a = client("10.0.0.1");
        let (reservation, _) = sessions.reserve_now(a).unwrap();
        assert!(sessions.reserve_now(client("10.0.0.2")).is_err());
        drop(reservation);
        assert!(sessions.reserve_now(client("10.0.0.2")).is_ok());
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64() {
        assert_eq!(client("2001:db8::1"), client("2001:db8::ffff:1"));
        assert_ne!(client("2001:db8::1"), client("2001:db8:0:1::1"));
        assert_eq!(client("::ffff:10.0.0.1"), client("10.0.0.1"));
    }
}
