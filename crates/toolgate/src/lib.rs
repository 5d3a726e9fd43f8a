#![warn(missing_docs)]
#![deny(unreachable_pub)]

//! toolgate: the layer between language models and the tools they call.
//!
//! Define a tool once — as Rust code with `#[derive(Tool)]` and a [`ToolHandler`]
//! impl, or at run time as a [`DynTool`] — register it in a [`Catalog`], and read
//! its [`ToolDescriptor`] to describe it to any model API.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use toolgate::{Catalog, Tool, ToolCtx, ToolError, ToolHandler};
//!
//! /// Look up an order by its number.
//! #[derive(Tool)]
//! #[tool(effect = "read")]
//! struct LookupOrder;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct OrderQuery {
//!     /// The order number, e.g. `A-1001`.
//!     order_id: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Order {
//!     order_id: String,
//!     status: String,
//! }
//!
//! impl ToolHandler for LookupOrder {
//!     type Input = OrderQuery;
//!     type Output = Order;
//!     async fn call(&self, _ctx: &ToolCtx, q: OrderQuery) -> Result<Order, ToolError> {
//!         Ok(Order { order_id: q.order_id, status: "shipped".into() })
//!     }
//! }
//!
//! let catalog = Catalog::new().with_native(LookupOrder).unwrap();
//! let descriptor = catalog.get("lookup_order").unwrap().descriptor();
//! assert_eq!(descriptor.description, "Look up an order by its number.");
//! ```

pub use toolgate_core::*;
pub use toolgate_derive::Tool;

pub mod audit;
#[cfg(feature = "mcp")]
pub mod auth;
#[cfg(feature = "code-mode")]
pub mod code_mode;
#[cfg(feature = "console")]
pub mod console;
pub mod flow;
pub mod gate;
mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
mod regular_file;
mod search_tool;
#[cfg(feature = "semantic")]
pub mod semantic;
#[cfg(feature = "mcp")]
pub mod serve;
mod spec_file;
mod spec_tool;
pub mod store;
pub mod telemetry;

pub use gate::{
    ArgumentProblem, CallOptions, DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_TASK_TTL, Gate, GateBuilder,
    GateOptions, Outcome, TaskError, TaskFilter, TaskFuture, TaskScope, ToolCall,
    invalid_arguments_message,
};
pub use gate::{Authenticated, Limited, RateLimiter, RatePermit, RateRefused};
#[cfg(feature = "http")]
pub use http::{
    DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_REDIRECTS, DEFAULT_MAX_RESPONSE_BYTES, HttpRuntime,
    MAX_CONNECT_TIMEOUT,
};
pub use http::{Downgrade, binding_summary, mask_binding, mask_tool_secrets, sandbox};
#[cfg(feature = "http")]
pub use http::{FetchError, FetchLimits, Fetched, fetch_document};
pub use regular_file::{OpenFileError, open_regular_file, read_regular_file};
pub use search_tool::{CatalogScorer, SearchFilter, SearchTools};
pub use spec_file::{DEFAULT_SPEC_FILE, SpecReadError, SpecSource, render_diagnostics};
#[cfg(feature = "http")]
pub use spec_tool::spec_catalog_with_http;
pub use spec_tool::{SpecTool, spec_catalog};
pub use store::{ALLOW_SYMLINK_ENV, Admission, AdmissionCheck};
pub use store::{
    Approval, ApprovalRequest, ApprovalStatus, ApprovalStore, AuditFilter, AuditLog, CallHistory,
    GateStore, Grant, GrantReach, GrantScope, MemoryApprovals, MemoryAuditLog, MemoryCallHistory,
    MemoryGateStore, MemoryPins, MemoryStore, MemoryTasks, PINNED_FIELDS, Pin, PinChange, PinCheck,
    PinError, PinStore, RecordedCall, Resolution, STATE_DB_FILE, STATE_DIR_ENV, SqliteStore,
    StateStore, StoreError, TaskRecord, TaskStatus, TaskStore, changed_fields, default_state_dir,
    join_fields, pin_diff, resolve_state_dir, state_dir_from_env,
};
pub use store::{CODE_RUN_KEY_FILE, CodeRunStore, MemoryCodeRuns, PausedRun};
pub use store::{MemorySessions, SessionKey, SessionKind, StoredSession, StoredSessions};
pub use store::{OpenOptions, STORE_ENV, ServedStore, StoreChoice, choose_store, open_store};
#[cfg(feature = "postgres")]
pub use store::{POSTGRES_SCHEMA_VERSION, PostgresOptions, PostgresStore, mask_url};
pub use store::{RateBucket, RateCounters, RateTaken};
