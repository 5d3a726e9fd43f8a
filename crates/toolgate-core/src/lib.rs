#![warn(missing_docs)]
#![deny(unreachable_pub)]

//! The vocabulary of toolgate: the tool contract, descriptors and usage guidance, the
//! safety model, and the catalog.
//!
//! Everything here is pure — no I/O, no async runtime, no clock — so it is tested
//! with plain unit and property tests. The runtime lives in the `toolgate` crate,
//! which re-exports this one.

mod anchor;
mod audit;
mod call;
mod canonical;
mod catalog;
mod chain;
mod clip;
mod ctx;
mod descriptor;
mod digest;
mod dyn_tool;
mod effect;
mod error;
pub mod flow;
mod handler;
mod name;
mod policy;
mod principal;
mod redact;
pub mod rest_import;
mod sanitize;
mod schema_text;
pub mod search;
pub mod skill;
pub mod spec;
mod terminal;
mod usage;
pub mod wire;

pub use anchor::{Anchor, AnchorError};
pub use audit::{AuditEntry, AuditRecord, GENESIS_HASH, RecordKind, chain_hash};
pub use call::{Outcome, ToolCall};
pub use canonical::{call_hash, canonical_json, content_hash, lower_hex, sha256_hex};
pub use catalog::{Catalog, CatalogError};
pub use chain::{ChainBreak, ChainVerifier, VerifyReport, verify_chain, verify_chain_anchored};
pub use clip::{
    AUDIT_ARGUMENTS_BYTES, AUDIT_STRING_BYTES, CLIPPED_KEY, ECHO_CHARS, audit_arguments,
    clip_for_audit, clip_text, json_len,
};
pub use ctx::ToolCtx;
pub use descriptor::{Scheduling, ToolDescriptor, ToolSource};
pub use digest::{planner_digest, planner_digest_in_flow};
pub use dyn_tool::{DynTool, Native};
pub use effect::{Annotations, Effect, Retry, Safety, Tier, UnknownName};
pub use error::ToolError;
pub use handler::{ToolHandler, ToolMeta, schema_of};
pub use name::{MAX_NAME_LEN, NameError, closest_names, validate_name};
pub use policy::{
    AnswerRefusal, AnsweredBy, Answerer, Approvers, CallFacts, Change, ChangeGroup, Considered,
    Decision, EffectDecisions, Explanation, FLOW_ORIGIN_META, Fingerprints, Labels, OutputLabel,
    Policy, PolicyRule, Replay, RuleMode, RuleOfTwo, Seen, SeenLabel, Shadowed, Sighting,
    Simulation, ToolOutput, Verdict, WORDS_NAMED, acts_on_world, flow_origin,
    untrusted_contributors,
};
pub use principal::{Claims, Principal, PrincipalSpec, scope_matches};
pub use redact::{
    REDACTED, is_secret_header, is_secret_key, redact_arguments, redact_headers,
    schema_marks_secrets,
};
pub use sanitize::{
    DESCRIPTION_FENCE, OUTPUT_FENCE, SanitizeOptions, Sanitized, fence_description,
    sanitize_description, sanitize_output, sanitize_value, sanitize_value_with,
};
pub use schema_text::{UntrustedSchemaError, mentions_mcp_keywords, sanitize_schema};
pub use terminal::{escape_for_terminal, escape_json_for_terminal, is_unsafe_for_terminal};
pub use usage::ToolUsage;

/// Re-exported so generated and user code can name them through toolgate.
pub use schemars;
pub use serde_json;
