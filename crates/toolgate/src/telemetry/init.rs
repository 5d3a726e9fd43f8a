//! The process's `tracing` subscriber: log lines on stderr (text or JSON, at
//! the levels `RUST_LOG` names) and, when the standard `OTEL_EXPORTER_OTLP_*`
//! variables ask for it, the gate's spans exported over OTLP.
//!
//! Nothing is exported unless an OTLP endpoint or protocol is set. Spans go
//! through the SDK's batch processor: a call only puts its finished span in a
//! bounded queue (dropped when full), and a background thread exports them, so
//! an exporter that is slow or down never holds a call up.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::combinator::And;
use tracing_subscriber::filter::{EnvFilter, FilterExt, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// For a person at a terminal.
    #[default]
    Text,
    /// One JSON object a line, with the trace and span ids of the span it is in.
    Json,
}

/// Why telemetry cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The OTLP protocol variable names a protocol toolgate does not export with.
    #[error(
        "`{variable}` is `{value}`; toolgate exports traces as `http/protobuf` or `grpc`: set one of those, or unset it"
    )]
    Protocol {
        /// The variable read (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`).
        variable: &'static str,
        /// Its value, as set.
        value: String,
    },
    /// The OTLP exporter could not be built from the `OTEL_EXPORTER_OTLP_*`
    /// variables; the exporter's own words.
    #[error("the OTLP exporter cannot be built: {0}; check the OTEL_EXPORTER_OTLP_* variables")]
    Exporter(String),
    /// `RUST_LOG` is not a filter directive; the parser's words.
    #[error(
        "`RUST_LOG` is not a filter toolgate can read ({0}); write it as e.g. `warn,toolgate=debug`"
    )]
    Filter(String),
    /// `TOOLGATE_OTEL_SPANS` is neither `calls` nor `all`; its value.
    #[error(
        "`TOOLGATE_OTEL_SPANS` is `{0}`; it is `calls` (each request and tool call, the default) or `all` (also each execution, attempt and store commit)"
    )]
    Spans(String),
    /// A global `tracing` subscriber was set before: telemetry is set up once
    /// per process.
    #[error("the tracing subscriber is already set in this process")]
    AlreadySet,
}

/// Keeps telemetry running; dropping it flushes and stops the exporter.
#[must_use = "dropping the guard stops exporting"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
    /// The runtime the gRPC exporter's connections live on.
    _runtime: Option<tokio::runtime::Runtime>,
}

impl TelemetryGuard {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            let _ = provider.shutdown_with_timeout(Duration::from_secs(5));
        }
    }
}

const ENDPOINTS: [&str; 4] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
];

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The most detailed level of the MCP SDK's (rmcp) logs shown unless `RUST_LOG`
/// names `rmcp` itself: below `info` they dump whole messages (`received
/// request`, `response message`, every transport event), arguments and results
/// with the secrets the audit log redacts.
const RMCP_CAP: Level = Level::INFO;

/// The filter of log lines `rust_log` (a `RUST_LOG` value) asks for, less the
/// SDK's message dumps unless it names `rmcp` (see [`RMCP_CAP`]). The cap only
/// lowers: `warn` stays `warn` for the SDK too.
fn log_filter<S>(rust_log: &str) -> Result<And<EnvFilter, Targets, S>, TelemetryError>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let filter = EnvFilter::builder()
        .parse(rust_log)
        .map_err(|e| TelemetryError::Filter(e.to_string()))?;
    let mut cap = Targets::new().with_default(Level::TRACE);
    if !names_rmcp(rust_log) {
        cap = cap.with_target("rmcp", RMCP_CAP);
    }
    Ok(filter.and(cap))
}

/// Whether a directive of `rust_log` has `rmcp` (or a module of it) as its target.
fn names_rmcp(rust_log: &str) -> bool {
    rust_log.split(',').any(|directive| {
        let target = directive
            .split(['[', '='])
            .next()
            .unwrap_or_default()
            .trim();
        target == "rmcp" || target.starts_with("rmcp::")
    })
}

/// Sets the process's subscriber: log lines when `log` is given or `RUST_LOG`
/// is set (else none, as before), and OTLP export when the environment asks.
pub fn init(log: Option<LogFormat>) -> Result<TelemetryGuard, TelemetryError> {
    let filter = match var("RUST_LOG") {
        Some(filter) => Some(log_filter(&filter)?),
        None => log.map(|_| log_filter("warn")).transpose()?,
    };
    let logs = filter.map(|filter| {
        let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
        match log.unwrap_or_default() {
            LogFormat::Text => lines.boxed(),
            LogFormat::Json => super::json_log::layer().boxed(),
        }
        .with_filter(filter)
    });
    let (provider, runtime) = match exporter()? {
        Some((provider, runtime)) => (Some(provider), runtime),
        None => (None, None),
    };
    // Trace ids in JSON log lines need spans recorded, exported or not.
    let recorder = match (&provider, log) {
        (Some(provider), _) => Some(provider.clone()),
        (None, Some(LogFormat::Json)) => Some(SdkTracerProvider::builder().build()),
        (None, _) => None,
    };
    let detail = Targets::new().with_target("toolgate", span_detail()?);
    let set = match (logs, recorder) {
        // Spans alone: their filter is the subscriber's, so that a span of
        // another crate is never made and each enter, exit and record of one
        // of toolgate's skips the per-layer filter's bookkeeping.
        (None, Some(provider)) => Registry::default()
            .with(detail)
            .with(span_layer(&provider))
            .try_init(),
        (logs, recorder) => Registry::default()
            .with(logs)
            .with(recorder.map(|provider| span_layer(&provider).with_filter(detail)))
            .try_init(),
    };
    set.map_err(|_| TelemetryError::AlreadySet)?;
    Ok(TelemetryGuard {
        provider,
        _runtime: runtime,
    })
}

/// The layer that records toolgate's spans as OpenTelemetry spans of `provider`.
fn span_layer<S>(
    provider: &SdkTracerProvider,
) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    // No context activation: each enter and exit of a span (every poll of a
    // future it instruments) would attach and detach an OpenTelemetry
    // `Context`, which nothing here reads; parents are found from tracing's
    // own current span, and ids from the span's extensions.
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("toolgate"))
        .with_context_activation(false)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
}

/// Which of toolgate's spans are exported: by default the spans of requests, tool
/// calls and the calls they make (`info`); `TOOLGATE_OTEL_SPANS=all` adds the
/// detail spans of each execution, attempt and store commit (`debug`), which
/// roughly double a call's tracing cost.
fn span_detail() -> Result<Level, TelemetryError> {
    match var("TOOLGATE_OTEL_SPANS").as_deref().map(str::trim) {
        None | Some("calls") => Ok(Level::INFO),
        Some("all") => Ok(Level::DEBUG),
        Some(other) => Err(TelemetryError::Spans(other.to_owned())),
    }
}

type Exporting = (SdkTracerProvider, Option<tokio::runtime::Runtime>);

/// The tracer provider exporting over OTLP, when the environment names an
/// endpoint or a protocol (and OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none
/// do not turn it off).
fn exporter() -> Result<Option<Exporting>, TelemetryError> {
    if !ENDPOINTS.iter().any(|name| var(name).is_some())
        || var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    let (variable, protocol) = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") {
        Some(p) => ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", p),
        None => (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            var("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_else(|| "http/protobuf".into()),
        ),
    };
    use opentelemetry_otlp::{SpanExporter, WithExportConfig as _};
    let built = |e: opentelemetry_otlp::ExporterBuildError| TelemetryError::Exporter(e.to_string());
    let (exporter, runtime) = match protocol.trim() {
        "http/protobuf" => {
            let exporter = SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .build()
                .map_err(built)?;
            (exporter, None)
        }
        "grpc" => {
            // tonic's connections run on a runtime of their own, so that
            // exporting takes nothing from the runtime serving calls.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("toolgate-otlp")
                .enable_all()
                .build()
                .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
            let exporter = {
                let _entered = runtime.enter();
                SpanExporter::builder()
                    .with_tonic()
                    .build()
                    .map_err(built)?
            };
            (exporter, Some(runtime))
        }
        other => {
            return Err(TelemetryError::Protocol {
                variable,
                value: other.to_owned(),
            });
        }
    };
    let mut resource = Resource::builder();
    if var("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("toolgate");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    Ok(Some((provider, runtime)))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::Subscriber;
    use tracing_subscriber::layer::Context;

    use super::*;

    /// Records the target and level of every event it is shown.
    struct Seen(Arc<Mutex<Vec<(String, Level)>>>);

    impl<S: Subscriber> Layer<S> for Seen {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let meta = event.metadata();
            self.0
                .lock()
                .unwrap()
                .push((meta.target().to_owned(), *meta.level()));
        }
    }

    /// The events a subscriber filtered by `rust_log` keeps of the SDK's trace,
    /// debug and info events and one of toolgate's at trace.
    fn kept(rust_log: &str) -> Vec<(String, Level)> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let subscriber =
            Registry::default().with(Seen(seen.clone()).with_filter(log_filter(rust_log).unwrap()));
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(target: "rmcp::service", request = "{\"password\": \"hunter2\"}", "new event");
            tracing::debug!(target: "rmcp::service", request = "{\"password\": \"hunter2\"}", "received request");
            tracing::info!(target: "rmcp::service", "received notification");
            tracing::trace!(target: "toolgate::gate", "a call");
        });
        seen.lock().unwrap().clone()
    }

    fn rmcp(level: Level) -> (String, Level) {
        ("rmcp::service".to_owned(), level)
    }

    #[test]
    fn a_trace_filter_keeps_the_sdks_message_dumps_out_unless_it_names_rmcp() {
        let toolgate = ("toolgate::gate".to_owned(), Level::TRACE);
        assert_eq!(kept("trace"), [rmcp(Level::INFO), toolgate.clone()]);
        assert_eq!(kept("debug"), [rmcp(Level::INFO)]);
        assert_eq!(kept("warn,toolgate=trace"), std::slice::from_ref(&toolgate));
        assert_eq!(
            kept("trace,rmcp=trace"),
            [
                rmcp(Level::TRACE),
                rmcp(Level::DEBUG),
                rmcp(Level::INFO),
                toolgate
            ]
        );
        assert_eq!(
            kept("warn,rmcp::service=debug"),
            [rmcp(Level::DEBUG), rmcp(Level::INFO)]
        );
    }

    #[test]
    fn only_a_directive_whose_target_is_rmcp_names_it() {
        assert!(names_rmcp("rmcp=trace"));
        assert!(names_rmcp("info, rmcp::transport=debug"));
        assert!(names_rmcp("rmcp"));
        assert!(names_rmcp("rmcp[session]=trace"));
        assert!(!names_rmcp("trace"));
        assert!(!names_rmcp("rmcpx=trace,toolgate=debug"));
        assert!(!names_rmcp("[{rmcp=1}]=trace"));
    }
}
