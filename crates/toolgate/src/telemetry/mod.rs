//! What the gate does, in the formats operators already run: Prometheus metrics
//! (`metrics`) and OpenTelemetry traces.
//!
//! The gate records through the `metrics` facade at a few points (a call's
//! outcome, an execution's latency, a store commit, a rate-limit refusal, an
//! upstream restart). With no recorder installed, as when nothing asks for
//! metrics, each point is a no-op; [`MetricsEndpoint::install`] installs the
//! Prometheus recorder that `/metrics` renders.

#[cfg(feature = "mcp")]
mod metrics;
mod record;

pub(crate) use record::*;

#[cfg(feature = "mcp")]
pub(crate) use metrics::route_beside;
#[cfg(feature = "mcp")]
pub use metrics::{METRICS_PATH, MetricsEndpoint, MetricsError, serve_metrics};
