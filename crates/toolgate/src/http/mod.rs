//! HTTP bindings: a spec tool's `http:` request, made for real and kept safe.
//!
//! A call fills the binding's URL, headers and body from the arguments and state,
//! each value encoded for where it stands; sends it under the spec file's network
//! policy (public addresses only unless `network:` allows more; every resolved
//! address and every redirect checked, and the connection made to the address that
//! was checked); and turns the response into the tool's value or an error the gate
//! can retry or not. Secrets from the environment and credential headers are masked
//! out of logs, errors and results. MCP servers reached by URL connect through the
//! same checked resolver (`resolver.rs`), and so are documents fetched by URL (`fetch.rs`:
//! an OpenAPI description and the files it refers to). [`sandbox`] loads someone else's spec file with
//! its bindings outside an allow-list downgraded to mocks.

#[cfg(feature = "http")]
mod basic_auth;
#[cfg(feature = "http")]
mod body;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
mod encode;
#[cfg(feature = "http")]
mod fetch;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
mod fill;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
mod path_style;
#[cfg(feature = "http")]
mod request;
#[cfg(any(feature = "http", feature = "mcp"))]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) mod resolver;
#[cfg(feature = "http")]
mod response;
#[cfg(feature = "http")]
mod runtime;
mod sandbox;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
mod secrets;

#[cfg(feature = "http")]
pub use fetch::{FetchError, FetchLimits, Fetched, fetch_document};
#[cfg(feature = "http")]
pub use response::DEFAULT_MAX_RESPONSE_BYTES;
#[cfg(feature = "http")]
pub use runtime::{DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_REDIRECTS, HttpRuntime, MAX_CONNECT_TIMEOUT};
pub use sandbox::{Downgrade, sandbox};
pub use secrets::{binding_summary, mask_binding, mask_tool_secrets};
