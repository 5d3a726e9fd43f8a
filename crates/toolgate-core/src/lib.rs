//! The vocabulary of toolgate: the tool contract, descriptors and usage guidance, the
//! safety model, and the catalog.
//!
//! Everything here is pure — no I/O, no async runtime, no clock — so it is tested
//! with plain unit and property tests. The runtime lives in the `toolgate` crate,
//! which re-exports this one.

mod catalog;
mod ctx;
mod descriptor;
mod dyn_tool;
mod effect;
mod error;
mod handler;
mod name;
mod principal;
pub mod spec;
pub mod wire;
mod usage;

pub use catalog::{Catalog, CatalogError};
pub use ctx::ToolCtx;
pub use descriptor::{Scheduling, ToolDescriptor, ToolSource};
pub use dyn_tool::{DynTool, Native};
pub use effect::{Annotations, Effect, Retry, Safety, Tier, UnknownName};
pub use error::ToolError;
pub use handler::{ToolHandler, ToolMeta, schema_of};
pub use name::{MAX_NAME_LEN, NameError, closest_names, validate_name};
pub use principal::{Principal, scope_matches};
pub use usage::ToolUsage;

/// Re-exported so generated and user code can name them through toolgate.
pub use schemars;
pub use serde_json;
