//! What the gate does, in the formats operators already run: Prometheus metrics
//! (`metrics`), OpenTelemetry traces (`traces`, exported by [`init`]) and log
//! lines (text or JSON).
//!
//! The gate records through the `metrics` facade at a few points (a call's
//! outcome, an execution's latency, a store commit, a rate-limit refusal, an
//! upstream restart). With no recorder installed, as when nothing asks for
//! metrics, each point is a no-op; [`MetricsEndpoint::install`] installs the
//! Prometheus recorder that `/metrics` renders. Spans are `tracing` spans: with
//! no subscriber recording them, each costs a check of a static flag.

#[cfg(feature = "mcp")]
mod call_handles;
#[cfg(feature = "otlp")]
mod init;
#[cfg(feature = "otlp")]
mod json_log;
#[cfg(feature = "mcp")]
mod metrics;
mod names;
mod record;
mod span_arguments;
// Trace context in and out is for MCP requests and HTTP bindings.
#[cfg_attr(
    not(all(feature = "mcp", feature = "http")),
    allow(dead_code, unused_imports)
)]
mod traces;

pub(crate) use record::*;
pub(crate) use span_arguments::span_arguments;
#[allow(unused_imports)]
pub(crate) use traces::{follow_remote_parent, trace_fields};

#[cfg(feature = "otlp")]
pub use init::{LogFormat, TelemetryError, TelemetryGuard, init};
#[cfg(feature = "mcp")]
#[cfg(feature = "mcp")]
pub(crate) use metrics::upstream_gauges;
#[cfg(feature = "mcp")]
pub use metrics::{METRICS_PATH, MetricsEndpoint, MetricsError, serve_metrics};
