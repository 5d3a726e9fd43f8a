//! The web console: where the people who run toolgate answer approvals, read and
//! verify the audit log, and see the catalog, from a browser.
//!
//! Pages are rendered on the server from the running gate (its store, catalog
//! and policy: no second source of truth) with [`maud`], whose templates escape
//! every value unless told otherwise, so a tool description or an argument
//! carrying `<script>` shows as text. The only JavaScript is htmx and its
//! server-sent-events extension, vendored under `assets/` and compiled into the
//! binary; pages that only show data read the same without it.
//!
//! Every page needs a console session (see [`login`]); every state-changing
//! request carries the session's CSRF token and must come from the console's
//! own origin.
//!
//! `toolgate serve --http --console` mounts the console beside `/mcp`
//! ([`FrontDoor::console`](crate::serve::FrontDoor::console));
//! [`Console::serve`] serves it alone.

mod approvals;
mod assets;
mod audit;
mod budgets;
mod catalog;
mod conversations;
mod layout;
mod login;
mod upstreams;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock, RwLock};

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use toolgate_core::Approvers;
use toolgate_core::spec::SpecFile;

use crate::auth::HttpAccess;
use crate::auth::rebinding::{self, Guard};
use crate::{Gate, store::PinStore};

pub use login::LoginToken;
use login::{Sessions, Viewer};
pub use upstreams::{Circuit, UpstreamRow, UpstreamView};

/// Where the console finds the gate it shows: the MCP server's current one (it is
/// swapped when upstream tools change), or a fixed gate when served alone.
pub(crate) type GateSource = Arc<dyn Fn() -> Arc<Gate> + Send + Sync>;

/// The console of one gate: how to log in, and who may approve.
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    /// The spec file the gate was built from: its principals say who may
    /// approve (`approve:` grants), its tools their bindings. A reload
    /// replaces it.
    spec: RwLock<Arc<SpecFile>>,
    /// The spec serving and its last reload, for the Catalog.
    status: OnceLock<Arc<crate::serve::SpecStatus>>,
    /// The one-time login token of a console on loopback without `auth:`.
    login: Option<LoginToken>,
    sessions: Sessions,
    /// Who answers approvals after logging in with the one-time token.
    operator: String,
    /// Where the upstream tools' pins live, for the Catalog's quarantine.
    pins: OnceLock<Arc<dyn PinStore>>,
    /// The running upstream servers, for their health on the Catalog.
    upstreams: OnceLock<Arc<dyn UpstreamView>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("login", &self.inner.login.as_ref().map(|_| "<redacted>"))
            .field("operator", &self.inner.operator)
            .finish()
    }
}

impl Console {
    /// The console of a gate built from `spec`. With `login`, a browser logs in
    /// by opening [`Console::login_url`] once; without it only with a credential
    /// the spec's `auth:` takes (an API key, or a bearer token).
    pub fn new(spec: &SpecFile, login: Option<LoginToken>) -> Self {
        Console {
            inner: Arc::new(Inner {
                spec: RwLock::new(Arc::new(spec.clone())),
                status: OnceLock::new(),
                login,
                sessions: Sessions::default(),
                operator: operator_name(),
                pins: OnceLock::new(),
                upstreams: OnceLock::new(),
            }),
        }
    }

    /// Shows the quarantined tools of `pins` on the Catalog, each with
    /// **Accept**. Set once; a later call is ignored.
    pub fn with_pins(self, pins: Arc<dyn PinStore>) -> Self {
        let _ = self.inner.pins.set(pins);
        self
    }

    /// Keeps login sessions in `store` (by their cookie's digest) instead of in
    /// memory, so that they survive a restart and every instance sharing the
    /// store knows them. Set once; a later call is ignored.
    pub fn with_sessions(self, store: Arc<dyn crate::store::StoredSessions>) -> Self {
        self.inner.sessions.keep_in(store);
        self
    }

    /// Shows the spec serving and what became of its last reload on the
    /// Catalog. Set once.
    pub fn with_spec_status(self, status: Arc<crate::serve::SpecStatus>) -> Self {
        let _ = self.inner.status.set(status);
        self
    }

    /// Answers from `spec` from now on: a reloaded spec's principals say who
    /// may approve.
    pub fn reload(&self, spec: &SpecFile) {
        *self
            .inner
            .spec
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(spec.clone());
    }

    /// The spec the console answers from now.
    fn spec(&self) -> Arc<SpecFile> {
        self.inner
            .spec
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Shows the health and circuit state of the running `upstreams` on the
    /// Catalog, and releases a tool accepted there at once. Set once.
    pub fn with_upstreams(self, upstreams: Arc<dyn UpstreamView>) -> Self {
        let _ = self.inner.upstreams.set(upstreams);
        self
    }

    /// The URL that logs a browser in, once, for a console at `addr`; `None`
    /// when the console takes only credentials.
    pub fn login_url(&self, addr: SocketAddr) -> Option<String> {
        let token = self.inner.login.as_ref()?;
        let host = match addr {
            SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
            SocketAddr::V4(v4) => v4.ip().to_string(),
        };
        Some(format!(
            "http://{host}:{}/login?token={}",
            addr.port(),
            token.reveal()
        ))
    }

    /// Serves the console alone (no MCP endpoint) on `listener` for `gate`,
    /// with the same `Host`/`Origin` checks as `serve --http`, until `shutdown`.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        gate: Arc<Gate>,
        access: HttpAccess,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let addr = listener.local_addr()?;
        let guard = Guard::new(addr, access.allowed().clone());
        let router = self.routes(Arc::new(move || gate.clone()), access);
        let router = router.layer(middleware::from_fn_with_state(guard, rebinding::check));
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
    }

    /// The console's routes for the gate `gate` gives (read on every request:
    /// a served gate is swapped when upstream tools change), every one behind a
    /// console session but the login and the static assets. They check no
    /// `Host`: whoever mounts them puts the rebinding guard in front.
    pub(crate) fn routes(&self, gate: GateSource, access: HttpAccess) -> Router {
        let app = App {
            console: self.clone(),
            gate,
            access,
        };
        let protected = Router::new()
            .route("/", get(|| async { Redirect::to("/approvals") }))
            .route("/approvals", get(approvals::page))
            .route("/approvals/rows", get(approvals::rows))
            .route("/approvals/events", get(approvals::events))
            .route("/approvals/{id}/approve", post(approvals::approve))
            .route("/approvals/{id}/deny", post(approvals::deny))
            .route("/audit", get(audit::page))
            .route("/audit/verify", post(audit::verify))
            .route("/audit/pending", get(audit::pending))
            .route("/audit/{seq}", get(audit::record))
            .route("/audit/resolve/{run_id}", post(audit::resolve))
            .route("/catalog", get(catalog::page))
            .route("/catalog/pins/{tool}/accept", post(upstreams::accept))
            .route("/conversations", get(conversations::page))
            .route("/logout", post(login::logout))
            .layer(middleware::from_fn_with_state(app.clone(), require_session));
        Router::new()
            .route("/login", get(login::page).post(login::with_credential))
            .merge(assets::routes())
            .merge(protected)
            .layer(middleware::from_fn(login::same_origin_writes))
            .layer(middleware::from_fn(security_headers))
            .with_state(app)
    }

    /// Whether `principal` sees every principal's calls: an approver does (as
    /// does everyone when the spec declares no approvers: then anyone answers).
    fn sees_everything(&self, principal: &str) -> bool {
        let spec = self.spec();
        !approvers(&spec).declared()
            || spec
                .principals
                .get(principal)
                .is_some_and(|p| !p.approve.is_empty())
    }
}

/// Who may approve what under `spec`.
fn approvers(spec: &SpecFile) -> Approvers<'_> {
    Approvers::new(&spec.principals, spec.policy.self_approve)
}

/// What every console handler gets.
#[derive(Clone)]
pub(crate) struct App {
    console: Console,
    gate: GateSource,
    access: HttpAccess,
}

impl App {
    fn gate(&self) -> Arc<Gate> {
        (self.gate)()
    }
}

/// Lets a request with a live console session through, with its [`Viewer`];
/// answers anything else with the login page (401).
async fn require_session(State(app): State<App>, mut request: Request, next: Next) -> Response {
    match app
        .console
        .inner
        .sessions
        .of(request.headers(), &app.access)
    {
        Some(viewer) => {
            request.extensions_mut().insert(viewer);
            next.run(request).await
        }
        None => login::refused(&app, request.method()),
    }
}

/// No framing by other sites, no scripts but the console's own, no sniffing.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = |headers: &mut axum::http::HeaderMap, name: &'static str, value: &'static str| {
        headers.insert(name, axum::http::HeaderValue::from_static(value));
    };
    set(
        headers,
        "content-security-policy",
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    );
    set(headers, "x-content-type-options", "nosniff");
    // Not `no-referrer`: with it a browser sends `Origin: null` on the console's
    // own form posts, which the origin check must refuse.
    set(headers, "referrer-policy", "same-origin");
    set(headers, "cache-control", "no-store");
    response
}

/// Who answers after logging in with the one-time token: the OS user, as with
/// `toolgate approvals` (else `operator`).
fn operator_name() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "operator".to_owned())
}

/// A console error page's response.
fn error_page(status: axum::http::StatusCode, viewer: Option<&Viewer>, message: &str) -> Response {
    (
        status,
        layout::page(
            "Error",
            viewer,
            layout::Nav::None,
            maud::html! {
                p.error { (message) }
            },
        ),
    )
        .into_response()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::SystemTime;

    use axum::Extension;
    use axum::extract::State;
    use serde_json::json;

    use super::*;
    use crate::{MemoryGateStore, store::ApprovalRequest};

    /// A tool whose description, and a call whose arguments, carry markup.
    const SPEC: &str = r#"
tools:
  - name: send_email
    description: "Send an email <script>alert('description')</script> to a customer."
    effect: external
    usage:
      when_to_use: "When <b onmouseover=alert(1)>asked</b>."
    parameters:
      type: object
      properties:
        to: {type: string, description: "<img src=x onerror=alert(2)>"}
      required: [to]
"#;

    fn app() -> App {
        app_of(SPEC).0
    }

    /// The console of a gate on the spec `text` (in memory), and the gate.
    pub(super) fn app_of(text: &str) -> (App, Arc<Gate>) {
        let checked = toolgate_core::spec::check(text);
        let spec = checked.spec.expect("the test spec is valid");
        let catalog =
            crate::spec_tool::spec_catalog(&spec, "toolgate.yaml", &crate::Catalog::new())
                .expect("the catalog builds");
        let gate = Arc::new(
            Gate::builder(catalog)
                .spec(&spec)
                .store(Arc::new(MemoryGateStore::default()))
                .build(),
        );
        let shown = gate.clone();
        let app = App {
            console: Console::new(&spec, None),
            gate: Arc::new(move || shown.clone()),
            access: HttpAccess::open(),
        };
        (app, gate)
    }

    fn viewer() -> Viewer {
        Viewer {
            who: "operator".into(),
            how: "login link",
            csrf: "csrf-for-tests".into(),
            only: None,
        }
    }

    async fn body(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the body is read");
        String::from_utf8(bytes.to_vec()).expect("pages are UTF-8")
    }

    #[tokio::test]
    async fn a_tool_description_carrying_markup_renders_as_text() {
        let page = body(catalog::page(State(app()), Extension(viewer())).await).await;
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(!page.contains("<b onmouseover"), "{page}");
        assert!(!page.contains("<img src=x"), "{page}");
        insta::assert_snapshot!(page);
    }

    #[tokio::test]
    async fn arguments_carrying_a_script_render_as_text_on_the_approvals_page() {
        let app = app();
        let request = ApprovalRequest::new(
            "s-1",
            "send_email",
            json!({"to": "<script>alert('argument')</script>"}),
            "support_bot",
            "external tools ask <i>a person</i>",
        );
        app.gate()
            .store()
            .resolve(&request, SystemTime::UNIX_EPOCH)
            .expect("the request is opened");
        let page = body(approvals::page(State(app), Extension(viewer())).await).await;
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(!page.contains("<i>a person"), "{page}");
        assert!(
            page.contains("&lt;script&gt;alert('argument')&lt;/script&gt;"),
            "{page}"
        );
        assert!(
            page.contains(r#"name="csrf" value="csrf-for-tests""#),
            "{page}"
        );
        let id = page
            .split("id=\"ap-")
            .nth(1)
            .and_then(|rest| rest.get(..8))
            .expect("the request's row");
        insta::assert_snapshot!(page.replace(id, "XXXXXXXX"));
    }

    #[tokio::test]
    async fn the_approvals_page_shows_what_each_budget_has_spent() {
        let (app, gate) = app_of(&format!(
            "{SPEC}budgets:\n  - {{principal: '*', tools: send_email, calls: 2, per: 1h}}\n  - {{tools: '*', calls: 100, per: 1d, over: ask}}\n"
        ));
        let store = gate.store().clone();
        let hour = toolgate_core::spec::Budget::window_at(&gate.budgets()[0], now_ms())
            .expect("an hour's window")
            .0;
        let charge = crate::store::BudgetCharge {
            counter: gate.budgets()[0].counter("support_bot"),
            window_ms: hour,
            amount: 2,
            limit: None,
        };
        store.charge_budgets(&[charge]).expect("charged");
        let page = body(approvals::page(State(app), Extension(viewer())).await).await;
        let section = page
            .split("<h2>Budgets</h2>")
            .nth(1)
            .expect("the budgets section");
        let cells: Vec<&str> = section
            .split("<td")
            .skip(1)
            .map(|cell| cell.split_once('>').map_or("", |(_, rest)| rest))
            .map(|cell| cell.split("</td>").next().unwrap_or(""))
            .collect();
        insta::assert_snapshot!(cells[..5].join(" | ") + "\n" + &cells[6..11].join(" | "), @r"
        <code>budgets[0]</code> | each principal's calls to `send_email`: 2 calls per 1h | support_bot | 2 of 2 calls | deny
        <code>budgets[1]</code> | all calls: 100 calls per 1d | every caller | 0 of 100 calls | ask
        ");
        assert!(
            section.contains(r#"class="bad""#),
            "a budget used up is marked"
        );
    }

    fn now_ms() -> u64 {
        u64::try_from(
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap()
    }
}
