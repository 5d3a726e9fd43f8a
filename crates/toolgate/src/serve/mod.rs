//! The front door of a served gateway: one HTTP application composed of the
//! routers its parts offer — the MCP endpoint, `/metrics`, the OAuth metadata,
//! the web console — under one access layer ([`crate::auth`]), as axum
//! applications compose routers.
//!
//! Each part knows only itself: the MCP server serves its endpoint, the console
//! its pages, the exporter its metrics; none of them checks `Host`, `Origin` or
//! credentials. The front door puts every route behind the rebinding guard,
//! the MCP endpoint and `/metrics` behind the credential check, and the console
//! beside them with its own login sessions; the health checks sit outside
//! all of it, open to a load balancer's probe. It also owns shutting down:
//! stop accepting, let the server's running calls finish, end the sessions.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use toolgate::auth::HttpAccess;
//! use toolgate::mcp::server::{McpServer, shutdown_signal};
//! use toolgate::serve::FrontDoor;
//! use toolgate::{Catalog, Gate};
//!
//! let gate = Arc::new(Gate::builder(Catalog::new()).build());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8731").await?;
//! let server = McpServer::builder(gate).build();
//! let report = FrontDoor::new(server, HttpAccess::open())
//!     .serve(listener, shutdown_signal())
//!     .await?;
//! eprintln!("{report}");
//! # Ok(())
//! # }
//! ```

mod health;
#[cfg(feature = "console")]
mod upstream_view;

pub use health::{
    Health, LIVE_PATH, LastReload, READY_PATH, Readiness, STORE_PROBE_BOUND, SpecState, SpecStatus,
    serve_health,
};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::middleware;
use tokio_util::sync::CancellationToken;

use crate::auth::HttpAccess;
use crate::auth::rebinding::{self, Guard};
use crate::mcp::server::{DEFAULT_HTTP_PATH, McpServer, ServeError, ServeReport, check_path};
use crate::telemetry::{METRICS_PATH, MetricsEndpoint};

/// The default address of `toolgate serve --http`.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8731";

/// How long open connections get to close once the sessions have ended.
const CLOSE: Duration = Duration::from_secs(5);

/// A served gateway over HTTP: an MCP server's endpoint and what is served
/// beside it, behind one access layer.
pub struct FrontDoor {
    server: McpServer,
    path: String,
    access: HttpAccess,
    metrics: Option<MetricsEndpoint>,
    health: Option<Health>,
    #[cfg(feature = "console")]
    console: Option<crate::console::Console>,
}

impl FrontDoor {
    /// `server`'s MCP endpoint at [`DEFAULT_HTTP_PATH`], for whom `access` lets in.
    pub fn new(server: McpServer, access: HttpAccess) -> Self {
        FrontDoor {
            server,
            path: DEFAULT_HTTP_PATH.to_owned(),
            access,
            metrics: None,
            health: None,
            #[cfg(feature = "console")]
            console: None,
        }
    }

    /// Serve the MCP endpoint at `path` instead (checked when served: one fixed
    /// absolute path, see [`check_path`]).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Serve `/metrics` beside the MCP endpoint, behind the same credential and
    /// `Host` check. An MCP endpoint at [`METRICS_PATH`] keeps its path, and
    /// metrics are then not served (with a warning).
    pub fn metrics(mut self, endpoint: MetricsEndpoint) -> Self {
        self.metrics = Some(endpoint);
        self
    }

    /// Serve `/healthz` and `/readyz` beside the MCP endpoint, open to any
    /// caller and outside the `Host` check: a load balancer probes by address.
    pub fn health(mut self, health: Health) -> Self {
        self.health = Some(health);
        self
    }

    /// Serve the web console at `/`, showing the gate the server serves at each
    /// request. It has its own login sessions, so it sits outside the
    /// credential check (the `Host` guard covers it too). To hold waiting calls
    /// until an approver answers there, build the server with
    /// [`hold_approvals`](crate::mcp::server::McpServerBuilder::hold_approvals).
    #[cfg(feature = "console")]
    pub fn console(mut self, console: crate::console::Console) -> Self {
        self.console = Some(console);
        self
    }

    /// The whole application for a server bound to `addr`: every route behind
    /// the `Host`/`Origin` guard; the MCP endpoint and `/metrics` behind the
    /// credential check; the OAuth metadata open; CORS for the allowed origins.
    /// The MCP sessions end when `sessions` is cancelled.
    pub fn router(&self, addr: SocketAddr, sessions: CancellationToken) -> Router {
        let mut guarded = self.server.endpoint(&self.path, sessions);
        match &self.metrics {
            Some(_) if self.path == METRICS_PATH => {
                tracing::warn!(
                    "the MCP endpoint is at {METRICS_PATH}, so metrics are not served there"
                );
            }
            Some(endpoint) => guarded = guarded.merge(endpoint.router()),
            None => {}
        }
        let app = self
            .access
            .guard(guarded)
            .merge(self.access.metadata_routes());
        let app = match self.access.allowed().cors() {
            Some(cors) => app.layer(cors),
            None => app,
        };
        #[cfg(feature = "console")]
        let app = match &self.console {
            Some(console) => {
                let server = self.server.clone();
                let gate: crate::console::GateSource = Arc::new(move || server.gate());
                app.merge(console.routes(gate, self.access.clone()))
            }
            None => app,
        };
        let guard = Guard::new(addr, self.access.allowed().clone());
        let app = app.layer(middleware::from_fn_with_state(guard, rebinding::check));
        match &self.health {
            Some(health) => app.merge(health.router()),
            None => app,
        }
    }

    /// Serves on `listener` until `shutdown` resolves; then stops accepting,
    /// gives running calls the server's grace period (cancelling the rest
    /// through the gate, which records each outcome), and ends the sessions.
    /// A non-loopback address needs a credential.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<ServeReport, ServeError> {
        let addr = listener.local_addr()?;
        self.access.check(addr)?;
        check_path(&self.path)?;
        let sessions = CancellationToken::new();
        let stop_accepting = CancellationToken::new();
        let app = self.router(addr, sessions.clone());
        // The peer's address is the client a session counts against.
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        // Without TCP_NODELAY the last chunk of a streamed (SSE) answer waits for
        // the client's delayed ACK, about 40 ms.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        let server = axum::serve(listener, app)
            .with_graceful_shutdown(stop_accepting.clone().cancelled_owned())
            .into_future();
        let server = tokio::spawn(server);
        shutdown.await;
        stop_accepting.cancel();
        let report = self.server.drain().await;
        sessions.cancel();
        match tokio::time::timeout(CLOSE, server).await {
            Ok(Ok(result)) => result?,
            Ok(Err(join)) => return Err(ServeError::Io(std::io::Error::other(join))),
            Err(_) => tracing::warn!("connections still open after shutdown; closing them"),
        }
        Ok(report)
    }
}
