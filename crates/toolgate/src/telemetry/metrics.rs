//! `/metrics`: what the gate recorded, in the Prometheus text format (0.0.4).
//!
//! One Prometheus recorder per process ([`MetricsEndpoint::install`]) takes what
//! the gate's recording points (`record.rs`) count; gauges that describe a state
//! rather than events (approvals waiting, upstream servers, quarantined tools)
//! are read when a scrape comes, so they cost nothing between scrapes. The
//! endpoint is served beside the MCP endpoint, behind the same credential
//! (`McpServerBuilder::metrics`),
//! or on an address of its own ([`serve_metrics`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use metrics::Unit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::names::*;
use crate::GateStore;
use crate::auth::Identity;
use crate::store::ApprovalStatus;
use toolgate_core::spec::Budget;

/// The path the endpoint is served at.
pub const METRICS_PATH: &str = "/metrics";

/// The content type of the Prometheus text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often histograms' recent samples are folded in when nothing scrapes, so
/// that what waits for a scrape stays small.
const UPKEEP: Duration = Duration::from_secs(5);

/// Latency buckets of calls, in seconds: a mock answers in well under a
/// millisecond, an HTTP API in tens to hundreds, a slow tool in seconds.
const CALL_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Latency buckets of store commits, in seconds (an fsync'd SQLite commit takes
/// from tens of microseconds to tens of milliseconds).
const COMMIT_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// The states an upstream server's `toolgate_upstream_state` has a series for.
const UPSTREAM_STATES: [&str; 6] = [
    "starting",
    "ready",
    "restarting",
    "unavailable",
    "misconfigured",
    "stopped",
];

/// The process's one recorder, once installed.
static RECORDER: Mutex<Option<PrometheusHandle>> = Mutex::new(None);

/// Why metrics cannot be recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// Another `metrics` recorder holds the process (an embedding program's own).
    #[error(
        "cannot record metrics: {0}; a program that installs its own `metrics` recorder renders toolgate's metrics itself"
    )]
    Install(String),
}

type Sampler = Arc<dyn Fn() + Send + Sync>;

/// Renders the process's metrics for a scrape, after reading the gauges of the
/// store and upstream servers it was given.
#[derive(Clone)]
pub struct MetricsEndpoint {
    handle: PrometheusHandle,
    samplers: Vec<Sampler>,
    /// Who may read it beside the MCP endpoint, when not everyone may.
    readers: Option<Arc<std::collections::HashSet<String>>>,
}

impl std::fmt::Debug for MetricsEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsEndpoint")
            .field("samplers", &self.samplers.len())
            .finish_non_exhaustive()
    }
}

impl MetricsEndpoint {
    /// Installs the Prometheus recorder (once per process; later calls share it)
    /// and returns an endpoint rendering it. Until this is called, the gate's
    /// recording points do nothing.
    pub fn install() -> Result<Self, MetricsError> {
        let mut installed = RECORDER.lock().unwrap_or_else(PoisonError::into_inner);
        let handle = match &*installed {
            Some(handle) => handle.clone(),
            None => {
                let handle = PrometheusBuilder::new()
                    .set_buckets_for_metric(Matcher::Full(CALL_DURATION.into()), CALL_BUCKETS)
                    .and_then(|b| {
                        b.set_buckets_for_metric(
                            Matcher::Full(COMMIT_DURATION.into()),
                            COMMIT_BUCKETS,
                        )
                    })
                    .and_then(|b| b.install_recorder())
                    .map_err(|e| MetricsError::Install(e.to_string()))?;
                describe();
                super::call_handles::keep();
                let upkeep = handle.clone();
                std::thread::Builder::new()
                    .name("toolgate-metrics".into())
                    .spawn(move || {
                        loop {
                            std::thread::sleep(UPKEEP);
                            upkeep.run_upkeep();
                        }
                    })
                    .map_err(|e| MetricsError::Install(e.to_string()))?;
                *installed = Some(handle.clone());
                handle
            }
        };
        Ok(MetricsEndpoint {
            handle,
            samplers: Vec::new(),
            readers: None,
        })
    }

    /// Beside the MCP endpoint, only `principals` (and requests that run as
    /// the server's own principal: its bearer token, or no credential on
    /// loopback) may read the metrics, which show every principal's calls;
    /// others get 403. A metrics listener of its own takes no credential.
    pub fn readers(mut self, principals: impl IntoIterator<Item = String>) -> Self {
        self.readers = Some(Arc::new(principals.into_iter().collect()));
        self
    }

    /// Also report the approvals waiting in `store`, and the age of the oldest.
    pub fn store(mut self, store: Arc<dyn GateStore>) -> Self {
        self.samplers
            .push(Arc::new(move || sample_approvals(&*store)));
        self
    }

    /// Also report what each budget of the gate `serving` returns (the one
    /// serving at each scrape, so a reloaded spec's budgets) has spent in its
    /// window now, by principal, and its limit, read from `store`'s shared
    /// counters.
    pub fn budgets(
        mut self,
        serving: impl Fn() -> Option<Arc<crate::Gate>> + Send + Sync + 'static,
        store: Arc<dyn GateStore>,
    ) -> Self {
        self.samplers.push(Arc::new(move || {
            if let Some(gate) = serving() {
                sample_budgets(gate.budgets(), &*store);
            }
        }));
        self
    }

    /// Also run `sample` before each scrape, to set gauges of what only another
    /// part knows: each upstream server's state and quarantined tools
    /// (the MCP client's `Upstreams::metrics_sampler`).
    pub fn sampler(mut self, sample: impl Fn() + Send + Sync + 'static) -> Self {
        self.samplers.push(Arc::new(sample));
        self
    }

    /// The metrics as a scrape gets them, in the Prometheus text format.
    pub fn render(&self) -> String {
        for sample in &self.samplers {
            sample();
        }
        self.handle.render()
    }

    /// The endpoint as a router serving [`METRICS_PATH`]; whoever mounts it
    /// puts the credential check and the `Host` guard in front.
    pub(crate) fn router(&self) -> Router {
        let endpoint = self.clone();
        Router::new().route(
            METRICS_PATH,
            axum::routing::get(move |identity: Option<axum::Extension<Identity>>| {
                let endpoint = endpoint.clone();
                async move {
                    let principal = identity.and_then(|i| i.0.principal);
                    if let (Some(readers), Some(principal)) = (&endpoint.readers, &principal)
                        && !readers.contains(principal)
                    {
                        return (
                            axum::http::StatusCode::FORBIDDEN,
                            format!("{principal} may not read the metrics: they show every principal's calls, and only approvers read them\n"),
                        )
                            .into_response();
                    }
                    // Reading the store's approvals may touch the disk.
                    match tokio::task::spawn_blocking(move || endpoint.render()).await {
                        Ok(text) => ([(header::CONTENT_TYPE, TEXT_FORMAT)], text).into_response(),
                        Err(_) => axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                    }
                }
            }),
        )
    }
}

/// Serves the metrics endpoint alone on `listener` (`serve --metrics ADDR`),
/// until `shutdown` resolves. It takes no credential: bind it where only the
/// scraper reaches.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    endpoint: MetricsEndpoint,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, endpoint.router())
        .with_graceful_shutdown(shutdown)
        .await
}

/// The HELP and unit of every metric, once the recorder is in place.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        CALLS,
        Unit::Count,
        "Calls through the gate, by tool, outcome (the audit log's status) and principal."
    );
    describe_histogram!(
        CALL_DURATION,
        Unit::Seconds,
        "Time from a call's arrival to its recorded completion, for calls that ran."
    );
    describe_histogram!(
        COMMIT_DURATION,
        Unit::Seconds,
        "Time of one store transaction (a group commit of audit records and state)."
    );
    describe_counter!(AUDIT_RECORDS, Unit::Count, "Audit records written.");
    describe_counter!(
        RATE_LIMITED,
        Unit::Count,
        "Calls a rate limit refused, by tool and principal."
    );
    describe_counter!(
        OVER_BUDGET,
        Unit::Count,
        "Calls that would have gone past a budget (and were asked about or refused), by budget (budgets[N])."
    );
    describe_counter!(
        SHADOW_DISAGREEMENTS,
        Unit::Count,
        "Calls a shadow rule (policy.rules[N]) or a policy in shadow mode (policy) would have decided otherwise, by rule and tool."
    );
    describe_counter!(
        SPEC_RELOADS,
        Unit::Count,
        "Times a running server read its spec again, by outcome (ok: the new spec serves; refused: it has errors or changes what only a restart applies, and the old one still serves)."
    );
    describe_counter!(
        UPSTREAM_RESTARTS,
        Unit::Count,
        "Restarts of upstream MCP servers after a failure."
    );
    describe_counter!(
        UPSTREAM_CALLS,
        Unit::Count,
        "Calls sent to upstream MCP servers, by server and outcome (ok, or error: the tool's, the server's, a timeout or a lost connection)."
    );
    describe_gauge!(APPROVALS_PENDING, "Approvals waiting for an answer.");
    describe_gauge!(
        BUDGET_SPENT,
        "What a budget (budgets[N]) has spent in its window now, by principal counted (empty: every caller together); calls or cost units."
    );
    describe_gauge!(
        BUDGET_LIMIT,
        "The most a budget (budgets[N]) may spend per window."
    );
    describe_gauge!(
        APPROVAL_OLDEST_AGE,
        Unit::Seconds,
        "Age of the oldest approval waiting (0 when none waits)."
    );
    describe_gauge!(
        UPSTREAM_UP,
        "1 when the upstream MCP server is ready, else 0."
    );
    describe_gauge!(
        UPSTREAM_STATE,
        "1 for the state the upstream MCP server is in (unavailable: its circuit is open), 0 for the others."
    );
    describe_gauge!(
        QUARANTINED_TOOLS,
        "Tools of the upstream MCP server withheld until their change is reviewed."
    );
    describe_gauge!(
        QUARANTINED_SKILLS,
        "Skills of the upstream MCP server withheld until their change is reviewed."
    );
}

fn sample_budgets(budgets: &[Budget], store: &dyn GateStore) {
    let Ok(uses) = crate::budgets::budgets_in_use(budgets, store, SystemTime::now()) else {
        return;
    };
    for used in uses {
        let principal = used.principal.unwrap_or_default();
        metrics::gauge!(BUDGET_SPENT, "budget" => used.budget.clone(), "principal" => principal)
            .set(used.spent as f64);
        metrics::gauge!(BUDGET_LIMIT, "budget" => used.budget).set(used.limit as f64);
    }
}

fn sample_approvals(store: &dyn GateStore) {
    let Ok(approvals) = store.list(false) else {
        return;
    };
    let now = SystemTime::now();
    let pending = approvals
        .iter()
        .filter(|a| a.status == ApprovalStatus::Pending);
    let (count, oldest) = pending.fold((0u64, None::<SystemTime>), |(n, oldest), a| {
        let created = humantime::parse_rfc3339_weak(&a.created_at).ok();
        let oldest = match (oldest, created) {
            (Some(o), Some(c)) => Some(o.min(c)),
            (o, c) => o.or(c),
        };
        (n + 1, oldest)
    });
    let age = oldest
        .and_then(|t| now.duration_since(t).ok())
        .unwrap_or_default();
    metrics::gauge!(APPROVALS_PENDING).set(count as f64);
    metrics::gauge!(APPROVAL_OLDEST_AGE).set(age.as_secs_f64());
}

/// Sets the gauges of one upstream server: its state (one of
/// `UPSTREAM_STATES`: 1 for the one it is in, 0 for the others), whether it is
/// up, and how many of its tools and skills are quarantined. What an MCP
/// client knows of its servers, recorded without this module knowing the client.
pub(crate) fn upstream_gauges(
    server: &str,
    state: &str,
    up: bool,
    (tools, skills): (usize, usize),
) {
    for each in UPSTREAM_STATES {
        metrics::gauge!(UPSTREAM_STATE, "server" => server.to_owned(), "state" => each)
            .set(if each == state { 1.0 } else { 0.0 });
    }
    metrics::gauge!(UPSTREAM_UP, "server" => server.to_owned()).set(if up { 1.0 } else { 0.0 });
    metrics::gauge!(QUARANTINED_TOOLS, "server" => server.to_owned()).set(tools as f64);
    metrics::gauge!(QUARANTINED_SKILLS, "server" => server.to_owned()).set(skills as f64);
}
