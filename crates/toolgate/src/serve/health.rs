//! Health checks for load balancers and orchestrators: `/healthz` answers
//! while the process serves HTTP; `/readyz` answers 200 when the server is
//! ready for traffic (its store takes a call within a bound, and every
//! upstream server marked `required` is connected or restarting) and 503 with
//! the reasons when it is not.
//!
//! Both are open: a probe carries no credential. So they say nothing a
//! stranger could use: counts of tools and servers, never a tool's, a
//! principal's or a server's name; a failure's detail goes to the log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;

use crate::GateStore;
use crate::mcp::client::{ServerState, Upstreams};
use crate::mcp::server::McpServer;

/// Where liveness is probed.
pub const LIVE_PATH: &str = "/healthz";
/// Where readiness is probed.
pub const READY_PATH: &str = "/readyz";
/// How long the store gets to take a probe before the server is not ready.
pub const STORE_PROBE_BOUND: Duration = Duration::from_secs(2);

/// The spec a server runs on, and what became of the last time it read it
/// again; kept by whoever reloads it, shown by `/readyz`.
#[derive(Debug, Default)]
pub struct SpecStatus {
    state: Mutex<SpecState>,
}

/// [`SpecStatus`] at one moment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SpecState {
    /// The SHA-256 of the spec file serving now.
    pub sha256: String,
    /// The last reload, if there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reload: Option<LastReload>,
}

/// What became of a reload.
#[derive(Debug, Clone, Serialize)]
pub struct LastReload {
    /// When it was tried (RFC 3339, UTC).
    pub at: String,
    /// Whether the new spec serves (else the old one still does).
    pub ok: bool,
    /// Why not, without names: `3 errors in the spec file`, `auth changed,
    /// which takes a restart`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl SpecStatus {
    /// Serving the spec whose file hashes to `sha256`.
    pub fn new(sha256: impl Into<String>) -> Self {
        SpecStatus {
            state: Mutex::new(SpecState {
                sha256: sha256.into(),
                last_reload: None,
            }),
        }
    }

    /// Now.
    pub fn get(&self) -> SpecState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A reload served the spec hashing to `sha256` (`refused: None`), or was
    /// refused for that reason and the old spec still serves. Counted in
    /// `toolgate_spec_reloads_total`.
    pub fn reloaded(&self, at: String, sha256: &str, refused: Option<String>) {
        crate::telemetry::spec_reload(refused.is_none());
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if refused.is_none() {
            state.sha256 = sha256.to_owned();
        }
        state.last_reload = Some(LastReload {
            at,
            ok: refused.is_none(),
            refused,
        });
    }
}

/// What `/readyz` answers.
#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    /// `ready` or `not ready`.
    pub status: &'static str,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// How many tools a new session of the served principal is offered.
    pub tools: usize,
    /// The spec serving, and its last reload.
    pub spec: SpecState,
}

impl Readiness {
    /// Whether the server is ready for traffic.
    pub fn is_ready(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// A served gateway's health checks.
#[derive(Clone)]
pub struct Health {
    server: McpServer,
    store: Arc<dyn GateStore>,
    spec: Arc<SpecStatus>,
    upstreams: Option<(Arc<Upstreams>, Vec<String>)>,
    bound: Duration,
    /// A probe of the store still waiting: the next one does not pile onto it.
    probing: Arc<AtomicBool>,
}

impl Health {
    /// The checks of `server`, whose calls go to `store`, serving the spec
    /// `spec` tells of.
    pub fn new(server: McpServer, store: Arc<dyn GateStore>, spec: Arc<SpecStatus>) -> Self {
        Health {
            server,
            store,
            spec,
            upstreams: None,
            bound: STORE_PROBE_BOUND,
            probing: Arc::default(),
        }
    }

    /// Not ready while one of `required` (namespaces of `upstreams`) is
    /// starting or unavailable (its circuit open); one restarting is waited for
    /// by the calls, so it counts as serving.
    pub fn upstreams(
        mut self,
        upstreams: Arc<Upstreams>,
        required: impl IntoIterator<Item = String>,
    ) -> Self {
        self.upstreams = Some((upstreams, required.into_iter().collect()));
        self
    }

    /// Give the store `bound` to take a probe (default [`STORE_PROBE_BOUND`]).
    pub fn store_bound(mut self, bound: Duration) -> Self {
        self.bound = bound;
        self
    }

    /// Whether the server is ready now, and why not.
    pub async fn readiness(&self) -> Readiness {
        let mut reasons = Vec::new();
        if let Some(reason) = self.store_problem().await {
            reasons.push(reason);
        }
        if let Some((upstreams, required)) = &self.upstreams {
            let down = upstreams
                .status()
                .into_iter()
                .filter(|s| required.contains(&s.namespace))
                .filter(|s| {
                    matches!(
                        s.state,
                        ServerState::Starting | ServerState::Unavailable { .. }
                    )
                })
                .count();
            if down > 0 {
                reasons.push(format!(
                    "{down} of {} required upstream servers {} not connected",
                    required.len(),
                    if down == 1 { "is" } else { "are" }
                ));
            }
        }
        Readiness {
            status: if reasons.is_empty() {
                "ready"
            } else {
                "not ready"
            },
            reasons,
            tools: self.server.tool_names().len(),
            spec: self.spec.get(),
        }
    }

    /// Why the store is not taking calls, if it is not: it failed the probe,
    /// or did not answer within the bound.
    async fn store_problem(&self) -> Option<String> {
        if self.probing.swap(true, Ordering::AcqRel) {
            return Some("the store has not answered the last probe yet".into());
        }
        let store = self.store.clone();
        let probing = self.probing.clone();
        let probe = tokio::task::spawn_blocking(move || {
            let probed = store.probe();
            probing.store(false, Ordering::Release);
            probed
        });
        match tokio::time::timeout(self.bound, probe).await {
            Ok(Ok(Ok(()))) => None,
            Ok(Ok(Err(e))) => {
                tracing::warn!(error = %e, "readiness: the store failed its probe");
                Some("the store failed its probe (the server's log says why)".into())
            }
            Ok(Err(_)) => Some("the store's probe stopped".into()),
            Err(_) => Some(format!(
                "the store did not answer within {} ms",
                self.bound.as_millis()
            )),
        }
    }

    /// `/healthz` and `/readyz`, open to any caller.
    pub fn router(&self) -> Router {
        let health = self.clone();
        Router::new()
            .route(
                LIVE_PATH,
                get(|| async { json(StatusCode::OK, &serde_json::json!({"status": "ok"})) }),
            )
            .route(
                READY_PATH,
                get(move || async move {
                    let readiness = health.readiness().await;
                    let code = if readiness.is_ready() {
                        StatusCode::OK
                    } else {
                        StatusCode::SERVICE_UNAVAILABLE
                    };
                    json(code, &readiness)
                }),
            )
    }
}

/// `value` as a JSON answer with status `code`.
fn json(code: StatusCode, value: &impl Serialize) -> Response {
    let body = serde_json::to_string(value).unwrap_or_default();
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Serves the health checks alone on `listener` (`serve --health ADDR`) until
/// `shutdown` resolves.
pub async fn serve_health(
    listener: tokio::net::TcpListener,
    health: Health,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, health.router())
        .with_graceful_shutdown(shutdown)
        .await
}
