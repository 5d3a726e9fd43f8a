//! `telemetry:` what a call's span may carry beyond its names and outcome.
//!
//! Arguments stay out of spans unless the spec names them, because they may
//! hold secrets or personal data; even then, secrets are `[redacted]` as in
//! the audit log and every value is cut to a bound.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the gate's spans may record of a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    /// Arguments put in a call's `execute_tool` span as
    /// `gen_ai.tool.call.arguments`, by tool name (`"*"`: every tool): the
    /// argument names, `"*"` for all of them. Secrets (marked in the schema or
    /// named like one) are `[redacted]`; each value is cut at 256 characters.
    /// Default: no arguments in spans.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub span_arguments: IndexMap<String, Vec<String>>,
}

impl TelemetrySection {
    pub fn is_default(&self) -> bool {
        self == &TelemetrySection::default()
    }

    /// The argument names `tool`'s span may record (its own entry, else `"*"`'s).
    pub fn span_arguments_of(&self, tool: &str) -> Option<&[String]> {
        self.span_arguments
            .get(tool)
            .or_else(|| self.span_arguments.get("*"))
            .map(Vec::as_slice)
    }
}
