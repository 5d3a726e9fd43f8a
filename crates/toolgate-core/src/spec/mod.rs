//! Spec files: tools declared in YAML or JSON, their validation and their shapes.
//!
//! [`check`] turns text into a [`SpecFile`] plus every problem found, each located
//! in the text. Structural problems (syntax, unknown or missing keys, wrong types)
//! come first; semantic ones (names, schemas, responses, bindings, state keys,
//! placeholders) are checked on every part the structural problems leave intact.

mod address;
mod allow_entry;
mod auth;
mod budgets;
mod code_mode;
mod diagnostic;
mod document;
mod http_basic;
mod http_checks;
mod http_styles;
pub mod inject;
mod label_report;
mod limits;
mod mcp_servers;
mod model;
mod network;
mod network_checks;
mod policy_checks;
mod rate_limits;
mod rules;
mod salvage;
mod search;
mod shape;
mod skills;
mod structure;
mod telemetry;
pub mod template;

pub use crate::Scheduling;
pub use auth::{
    ApiKeysSection, AuthSection, DEFAULT_TOKEN_ALGORITHMS, OAuthSection, TOKEN_ALGORITHMS,
    is_https_or_loopback, is_jwks_url,
};
pub use budgets::{Budget, Charge, Cost, OverBudget, charges};
pub use code_mode::{CodeModeSection, MIN_CODE_MEMORY_BYTES};
pub(crate) use diagnostic::did_you_mean;
pub use diagnostic::{Diagnostic, Severity, Span};
pub(crate) use document::pointer_segment;
pub use document::{Document, MAX_SPEC_BYTES};
pub use http_basic::BasicAuth;
pub use http_styles::{PathStyle, StyledPath};
pub use label_report::{CallerLegs, LabelReport, Legs, label_report};
pub use limits::{LimitsSection, MAX_ARGUMENT_BYTES_CEILING, check_max_argument_bytes};
pub use mcp_servers::{
    EnvRef, McpServerSpec, McpTimeouts, URL_READS_ENV, UpstreamRevision, env_references,
    expand_env, is_namespace,
};
pub use model::{
    BindingKind, DEFAULT_SPEC_EFFECT, HttpBinding, HttpMethod, McpBinding, McpServerRef,
    QueryStyle, QueryValue, SpecFile, StateKey, StateType, StyledQuery, ToolSpec,
};
pub use network::{
    AddressClass, AllowEntry, AllowTarget, IpCidr, METADATA_ADDRESSES, METADATA_HOSTS,
    NetworkPolicy, NetworkRefusal, NetworkSection, classify, default_port, is_metadata_address,
    is_private_name, literal_authority,
};
pub use rate_limits::RateLimit;
pub use search::SearchSection;
pub use shape::{returns_shape, schema_shape, value_shape};
pub use skills::{SkillPlace, SkillsDir, SkillsEntry, SkillsSection};
pub use structure::spec_file_schema;
pub use telemetry::TelemetrySection;

/// The result of checking a spec file.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The file's model, when its structure is sound (it may still have errors).
    pub spec: Option<SpecFile>,
    /// Every problem, in the order they appear in the text.
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// True when nothing is an error (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.spec.is_some() && !self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Parses and checks spec text (YAML or JSON).
pub fn check(text: &str) -> Checked {
    let doc = match Document::parse(text) {
        Ok(doc) => doc,
        Err(diagnostic) => {
            return Checked {
                spec: None,
                diagnostics: vec![diagnostic],
            };
        }
    };
    let mut diagnostics = structure::check_structure(&doc);
    let spec = if diagnostics.is_empty() {
        match serde_json::from_value::<SpecFile>(doc.value.clone()) {
            Ok(spec) => {
                diagnostics.extend(rules::check_rules(&doc, &spec));
                Some(spec)
            }
            Err(e) => {
                diagnostics.push(Diagnostic::error(
                    "",
                    format!("the file does not fit the spec format: {e}"),
                ));
                None
            }
        }
    } else {
        // The parts that are sound are still checked, so one mistake hides no other.
        if let Some(part) = salvage::salvage(&doc, &diagnostics) {
            diagnostics.extend(rules::check_rules_at(&doc, &part));
        }
        None
    };
    diagnostics.sort_by_key(|d| {
        (
            d.span.map_or(usize::MAX, |s| s.offset),
            std::cmp::Reverse(d.severity),
        )
    });
    Checked { spec, diagnostics }
}
