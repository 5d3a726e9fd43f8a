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

// What a first program needs: the tool contract, the catalog, the gate and the
// call's words, who calls, the policy, and the stores a user picks. Everything
// else lives in a namespace, each merging core's pure half with the runtime's.
pub use gate::{Gate, GateBuilder, GateOptions};
#[cfg(feature = "postgres")]
pub use store::PostgresStore;
pub use store::{GateStore, MemoryGateStore, SqliteStore};
pub use toolgate_core::{
    Catalog, CatalogError, Decision, DynTool, Effect, Native, Outcome, Policy, Principal, ToolCall,
    ToolCtx, ToolDescriptor, ToolError, ToolHandler, ToolMeta,
};
pub use toolgate_core::{rest_import, wire};
/// Re-exported so generated and user code can name them through toolgate.
pub use toolgate_core::{schemars, serde_json};
pub use toolgate_derive::Tool;

pub mod audit;
#[cfg(feature = "mcp")]
pub mod auth;
pub mod budgets;
#[cfg(feature = "code-mode")]
pub mod code_mode;
#[cfg(feature = "console")]
pub mod console;
pub mod flow;
pub mod gate;
pub mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
mod regular_file;
mod search_tool;
#[cfg(feature = "semantic")]
pub mod semantic;
#[cfg(feature = "mcp")]
pub mod serve;
pub mod skills;
mod spec_file;
mod spec_tool;
pub mod store;
pub mod telemetry;

/// A tool's definition beyond the contract: where it came from, how it is
/// scheduled and retried, its annotations, its name's rules, its usage guidance.
pub mod tool {
    pub use toolgate_core::{
        Annotations, MAX_NAME_LEN, NameError, Retry, Safety, Scheduling, Tier, ToolSource,
        ToolUsage, UnknownName, closest_names, planner_digest, planner_digest_in_flow, schema_of,
        validate_name,
    };
}

/// Who may do what: rules, approvers, and why a call was decided as it was.
pub mod policy {
    pub use toolgate_core::{
        AnswerRefusal, AnsweredBy, Answerer, Approvers, CallFacts, Change, ChangeGroup, Claims,
        Considered, Decision, EffectDecisions, Explanation, Fingerprints, Labels, OutputLabel,
        Policy, PolicyRule, PrincipalSpec, Replay, RuleMode, RuleOfTwo, Seen, SeenLabel, Shadowed,
        Sighting, Simulation, ToolOutput, Verdict, acts_on_world, scope_matches,
    };
}

/// Untrusted text made safe before a model, a terminal or a log sees it.
pub mod sanitize {
    pub use toolgate_core::{
        DESCRIPTION_FENCE, OUTPUT_FENCE, REDACTED, SanitizeOptions, Sanitized,
        UntrustedSchemaError, escape_for_terminal, escape_json_for_terminal, fence_description,
        is_secret_header, is_secret_key, is_unsafe_for_terminal, mentions_mcp_keywords,
        redact_arguments, redact_headers, sanitize_description, sanitize_output, sanitize_schema,
        sanitize_value,
    };
}

/// Spec files: their model and checks (core), reading them from disk, and the
/// catalog of tools they declare.
pub mod spec {
    pub use crate::spec_file::{DEFAULT_SPEC_FILE, SpecReadError, SpecSource, render_diagnostics};
    #[cfg(feature = "http")]
    pub use crate::spec_tool::spec_catalog_with_http;
    pub use crate::spec_tool::{SpecTool, spec_catalog};
    pub use toolgate_core::spec::*;
}

/// Finding the right few tools: the index and scorers (core), and the
/// `search_tools` tool that serves them.
pub mod search {
    pub use crate::search_tool::{CatalogScorer, SearchFilter, SearchTools};
    pub use toolgate_core::search::*;
}

/// Files read from outside: regular files only, never a device or a FIFO.
pub mod files {
    pub use crate::regular_file::{OpenFileError, open_regular_file, read_regular_file};
}
