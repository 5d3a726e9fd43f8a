//! Logging in to the console, and what guards it afterwards.
//!
//! On loopback without `auth:`, the server prints a login URL with a random
//! token (as Jupyter does); opening it once starts a session. With `auth:`, a
//! person logs in with a credential `/mcp` would take (an API key, a bearer
//! token), and sees the console as that principal: a principal the spec grants
//! no `approve:` sees only its own calls, approvals, conversations and audit
//! records; approvers and the operator see everything. Either way the browser gets
//! a session cookie (`HttpOnly`, `SameSite=Strict`: scripts cannot read it and
//! other sites' requests do not carry it), and each session has a CSRF token
//! that every state-changing form carries. Sessions are kept in the gate's
//! store (by the cookie's SHA-256 digest, with their expiry and CSRF token), so
//! a restart logs nobody out and every instance sharing the store takes the same
//! cookie; logging out deletes it there. A write whose `Origin` or
//! `Sec-Fetch-Site` says it came from another site is refused before anything
//! else.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Form;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::App;
use super::layout::{self, Nav};
use crate::auth::HeldCredential;
use crate::auth::HttpAccess;
use crate::store::{
    MemorySessions, SessionKey, SessionKind, StoredSession, StoredSessions, now_ms,
};

/// The console's session cookie.
const COOKIE: &str = "toolgate_console";

/// How long a session lasts without a request.
const IDLE: Duration = Duration::from_secs(12 * 3600);

/// A one-time login token: 32 random bytes, kept as a SHA-256 digest and
/// compared in constant time; used up by the first login.
pub struct LoginToken {
    shown: String,
    digest: [u8; 32],
    used: AtomicBool,
}

impl LoginToken {
    /// A new random token; fails only if the system's random source does.
    pub fn random() -> std::io::Result<Self> {
        let shown = random_hex()?;
        Ok(LoginToken {
            digest: Sha256::digest(shown.as_bytes()).into(),
            shown,
            used: AtomicBool::new(false),
        })
    }

    pub(super) fn reveal(&self) -> &str {
        &self.shown
    }

    /// Whether `presented` is the token and unused; uses it up if so.
    fn take(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        bool::from(digest.ct_eq(&self.digest)) && !self.used.swap(true, Ordering::SeqCst)
    }
}

/// 32 random bytes as 64 hex digits.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| std::io::Error::other(format!("the system's random source failed: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Who is looking at the console, as their session says.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    /// Who answers approvals: the principal logged in as, or the operator.
    pub(crate) who: String,
    /// How they logged in, as shown in the header.
    pub(crate) how: &'static str,
    /// What every state-changing form of this session carries.
    pub(crate) csrf: String,
    /// The only principal whose calls, approvals and audit records this viewer
    /// sees; `None` for the operator and for approvers, who see everything.
    pub(crate) only: Option<String>,
}

impl Viewer {
    /// Whether this viewer may see what `principal` did.
    pub(crate) fn sees(&self, principal: &str) -> bool {
        self.only.as_deref().is_none_or(|only| only == principal)
    }

    /// Whether a form's CSRF token is this session's.
    pub(crate) fn csrf_ok(&self, presented: &str) -> bool {
        self.csrf.as_bytes().ct_eq(presented.as_bytes()).into()
    }
}

/// Console sessions, kept in the gate's store when the console has one (so they
/// survive a restart and every instance sharing the store knows them), else in
/// memory. The store holds the cookie's SHA-256 digest, never the cookie.
#[derive(Default)]
pub(super) struct Sessions {
    store: OnceLock<Arc<dyn StoredSessions>>,
    memory: MemorySessions,
}

/// The ways of logging in, as a session records them.
const HOW: [&str; 4] = ["login link", "API key", "bearer token", "access token"];

impl Sessions {
    /// Keeps sessions in `store` from now on. Set once; a later call is ignored.
    pub(super) fn keep_in(&self, store: Arc<dyn StoredSessions>) {
        let _ = self.store.set(store);
    }

    fn store(&self) -> &dyn StoredSessions {
        match self.store.get() {
            Some(store) => store.as_ref(),
            None => &self.memory,
        }
    }

    /// A new session for `viewer`, ending with `held` (the credential it was
    /// opened with) if it ends before the session would; the cookie value that
    /// names it.
    fn open(
        &self,
        who: String,
        how: &'static str,
        only: Option<String>,
        held: Option<HeldCredential>,
    ) -> std::io::Result<String> {
        let id = random_hex()?;
        let csrf = random_hex()?;
        let now = now_ms();
        let idle = u64::try_from(IDLE.as_millis()).unwrap_or(u64::MAX);
        let mut expires_ms = now.saturating_add(idle);
        if let Some(HeldCredential::Until { ms }) = &held {
            expires_ms = expires_ms.min(*ms);
        }
        let session = StoredSession {
            kind: SessionKind::Console,
            key: SessionKey::of(&id),
            principal: Some(who.clone()),
            data: json!({"who": who, "how": how, "csrf": csrf, "only": only, "held": held}),
            created_ms: now,
            expires_ms,
            idle_ms: idle,
        };
        self.store()
            .put_session(&session)
            .map_err(std::io::Error::other)?;
        Ok(id)
    }

    /// The viewer whose session cookie `headers` carry, if it is live and the
    /// credential it was opened with still holds (`access` says whether: a
    /// revoked key or an expired token ends the session, which is then deleted
    /// on every instance sharing the store); renews it when due. A store that
    /// cannot be read lets nobody in.
    pub(super) fn of(&self, headers: &HeaderMap, access: &HttpAccess) -> Option<Viewer> {
        let key = SessionKey::of(cookie(headers)?);
        let now = now_ms();
        let found = self.store().session(SessionKind::Console, &key, now);
        let session = match found {
            Ok(session) => session?,
            Err(e) => {
                tracing::warn!("cannot read a console session: {e}");
                return None;
            }
        };
        if let Some(held) = session.data.get("held").filter(|h| !h.is_null()) {
            let holds = serde_json::from_value::<HeldCredential>(held.clone())
                .is_ok_and(|held| access.still_holds(&held, now));
            if !holds {
                if let Err(e) = self.store().delete_session(SessionKind::Console, &key) {
                    tracing::warn!("cannot end a console session: {e}");
                }
                return None;
            }
        }
        if session.due_for_renewal(now) {
            let until = now.saturating_add(session.idle_ms);
            if let Err(e) = self
                .store()
                .renew_session(SessionKind::Console, &key, now, until)
            {
                tracing::warn!("cannot renew a console session: {e}");
            }
        }
        let text = |field: &str| session.data.get(field).and_then(Value::as_str);
        let how = text("how").unwrap_or_default();
        Some(Viewer {
            who: text("who")?.to_owned(),
            how: HOW.into_iter().find(|h| *h == how).unwrap_or("session"),
            csrf: text("csrf").filter(|c| !c.is_empty())?.to_owned(),
            only: text("only").map(str::to_owned),
        })
    }

    /// Ends the session `headers` carry the cookie of, wherever it is kept.
    fn close(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers)
            && let Err(e) = self
                .store()
                .delete_session(SessionKind::Console, &SessionKey::of(id))
        {
            tracing::warn!("cannot end a console session: {e}");
        }
    }
}

/// The console's session cookie among the request's cookies.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

#[derive(Deserialize)]
pub(super) struct LoginQuery {
    token: Option<String>,
}

/// `GET /login`: with the one-time token, starts a session; otherwise the form.
pub(super) async fn page(State(app): State<App>, Query(query): Query<LoginQuery>) -> Response {
    let Some(token) = query.token else {
        return login_page(&app, StatusCode::OK, None);
    };
    let taken = app
        .console
        .inner
        .login
        .as_ref()
        .is_some_and(|login| login.take(&token));
    if !taken {
        return login_page(
            &app,
            StatusCode::UNAUTHORIZED,
            Some(
                "This login link is wrong or was used already: each link logs in once. Restart the console for a new one, or log in with a credential.",
            ),
        );
    }
    let who = app.console.inner.operator.clone();
    start(&app, who, "login link", None, None)
}

#[derive(Deserialize)]
pub(super) struct CredentialForm {
    credential: String,
}

/// `POST /login`: logs in with an API key or bearer token that `/mcp` takes.
pub(super) async fn with_credential(
    State(app): State<App>,
    Form(form): Form<CredentialForm>,
) -> Response {
    if !app.access.requires_token() {
        return login_page(
            &app,
            StatusCode::UNAUTHORIZED,
            Some(
                "This console takes no credentials (the spec file has no `auth:`): open the login link the server printed.",
            ),
        );
    }
    match app.access.identify(form.credential.trim()).await {
        Ok(identity) => {
            let held = app.access.hold_of(&identity);
            // A principal who may not answer approvals sees only its own doings.
            let only = identity
                .principal
                .clone()
                .filter(|p| !app.console.sees_everything(p));
            let who = identity
                .principal
                .unwrap_or_else(|| app.console.inner.operator.clone());
            let how = match identity.method {
                crate::auth::AuthMethod::ApiKey => "API key",
                crate::auth::AuthMethod::BearerToken => "bearer token",
                _ => "access token",
            };
            start(&app, who, how, only, held)
        }
        Err(_) => login_page(
            &app,
            StatusCode::UNAUTHORIZED,
            Some(
                "That credential is not one this server takes: paste an API key from `toolgate keys add`, or the bearer token the server was started with.",
            ),
        ),
    }
}

/// A new session for `who`, its cookie set, and on to the approvals.
fn start(
    app: &App,
    who: String,
    how: &'static str,
    only: Option<String>,
    held: Option<HeldCredential>,
) -> Response {
    let Ok(id) = app.console.inner.sessions.open(who, how, only, held) else {
        return login_page(
            app,
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("The system's random number generator failed; try again."),
        );
    };
    let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/");
    let mut response = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_static("/approvals"))],
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /logout`: ends the session.
pub(super) async fn logout(State(app): State<App>, headers: HeaderMap) -> Response {
    app.console.inner.sessions.close(&headers);
    let mut response = login_page(&app, StatusCode::OK, Some("Logged out."));
    let clear = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    if let Ok(value) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// A request without a live session: pages get the login page, the rest a
/// plain 401.
pub(super) fn refused(app: &App, method: &Method) -> Response {
    if method == Method::GET {
        login_page(
            app,
            StatusCode::UNAUTHORIZED,
            Some("Log in to see the console."),
        )
    } else {
        (
            StatusCode::UNAUTHORIZED,
            "no console session: log in at /login first\n",
        )
            .into_response()
    }
}

fn login_page(app: &App, status: StatusCode, message: Option<&str>) -> Response {
    let link = app.console.inner.login.is_some();
    let credential = app.access.requires_token();
    let body = html! {
        @if let Some(message) = message { p.notice { (message) } }
        @if link {
            p { "Open the login link " code { "toolgate" } " printed when it started (it logs in once)." }
        }
        @if credential {
            form method="post" action="/login" {
                label for="credential" { "API key or bearer token" }
                input #credential type="password" name="credential" autocomplete="off" required;
                button type="submit" { "Log in" }
            }
        }
        @if !link && !credential {
            p { "This console has no way to log in: serve it on loopback, or give the spec file an " code { "auth:" } " section." }
        }
    };
    (status, layout::page("Log in", None, Nav::None, body)).into_response()
}

/// Refuses a state-changing request that a browser says came from another
/// site (`Sec-Fetch-Site` other than `same-origin`, or an `Origin` that is not
/// this server's), before any handler reads it.
pub(super) async fn same_origin_writes(request: Request, next: Next) -> Response {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if !safe && let Some(why) = cross_site(request.headers()) {
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    next.run(request).await
}

/// Why a write with `headers` is cross-site, if it is.
pub(crate) fn cross_site(headers: &HeaderMap) -> Option<String> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site"))
        && site != "same-origin"
        && site != "none"
    {
        return Some(format!(
            "refused: the browser says this request came from another site (Sec-Fetch-Site: {site})"
        ));
    }
    if let Some(origin) = text(header::ORIGIN) {
        let host = text(header::HOST).unwrap_or_default();
        let own = [format!("http://{host}"), format!("https://{host}")];
        if !own.iter().any(|o| o == origin) {
            return Some(format!(
                "refused: a write from {origin} is not from the console's own page"
            ));
        }
    }
    None
}

/// Checks a form's CSRF token against the viewer's session.
pub(crate) fn csrf_refusal(viewer: &super::Viewer, presented: &str) -> Option<Response> {
    (!viewer.csrf_ok(presented)).then(|| {
        (
            StatusCode::FORBIDDEN,
            "refused: the form's CSRF token is not this session's; reload the page and try again\n",
        )
            .into_response()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_token_logs_in_once() {
        let token = LoginToken::random().unwrap();
        let shown = token.reveal().to_owned();
        assert_eq!(shown.len(), 64);
        assert!(!token.take("wrong"));
        assert!(token.take(&shown));
        assert!(!token.take(&shown));
    }

    #[test]
    fn a_session_is_found_by_its_cookie_among_others() {
        let sessions = Sessions::default();
        let id = sessions
            .open("alice".into(), "login link", None, None)
            .unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; {COOKIE}={id}")).unwrap(),
        );
        let access = HttpAccess::open();
        assert_eq!(sessions.of(&headers, &access).unwrap().who, "alice");
        let mut wrong = HeaderMap::new();
        wrong.insert(
            header::COOKIE,
            HeaderValue::from_static("toolgate_console=nope"),
        );
        assert!(sessions.of(&wrong, &access).is_none());
        assert!(sessions.of(&HeaderMap::new(), &access).is_none());
    }

    #[test]
    fn a_session_ends_when_its_access_token_expires_or_its_key_is_unknown() {
        let sessions = Sessions::default();
        let access = HttpAccess::open();
        let headers = |id: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::COOKIE,
                HeaderValue::from_str(&format!("{COOKIE}={id}")).unwrap(),
            );
            headers
        };
        let now = now_ms();
        let live = sessions
            .open(
                "ops".into(),
                "access token",
                None,
                Some(HeldCredential::Until { ms: now + 60_000 }),
            )
            .unwrap();
        assert!(sessions.of(&headers(&live), &access).is_some());
        let expired = sessions
            .open(
                "ops".into(),
                "access token",
                None,
                Some(HeldCredential::Until { ms: now - 1 }),
            )
            .unwrap();
        assert!(sessions.of(&headers(&expired), &access).is_none());
        let key = Some(HeldCredential::Key {
            id: "3f9a0c1d".into(),
        });
        let keyed = sessions.open("ops".into(), "API key", None, key).unwrap();
        assert!(
            sessions.of(&headers(&keyed), &access).is_none(),
            "a server that no longer takes the key ends the session"
        );
    }

    #[test]
    fn a_write_from_another_site_is_cross_site() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8731"));
        assert_eq!(cross_site(&headers), None);
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8731"),
        );
        assert_eq!(cross_site(&headers), None);
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(cross_site(&headers).unwrap().contains("evil.example"));
        headers.remove(header::ORIGIN);
        headers.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(cross_site(&headers).unwrap().contains("cross-site"));
    }
}
