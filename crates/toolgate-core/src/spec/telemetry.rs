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
    /// Whether nothing is set, so the section is left out when serialized.
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

/// Warns where `span_arguments` opts in an argument that spans record as
/// `[redacted]` (marked secret in the tool's schema, or named like a secret):
/// the opt-in shows nothing, and the operator should know why.
pub(super) fn check_span_arguments(
    doc: &super::document::Document,
    spec: &super::model::SpecFile,
) -> Vec<super::diagnostic::Diagnostic> {
    use super::diagnostic::Diagnostic;
    use super::document::pointer_segment;
    let entries = &spec.telemetry.span_arguments;
    let mut out = Vec::new();
    for (key, names) in entries {
        // `*` stands for every tool without an entry of its own.
        let tools = spec
            .tools
            .iter()
            .filter(|t| (key == "*" && !entries.contains_key(&t.name)) || &t.name == key);
        for tool in tools {
            let schema = tool.input_schema();
            let secret = |arg: &str| {
                let probe = serde_json::json!({ arg: "probe" });
                crate::redact_arguments(&probe, &schema)[arg] == crate::REDACTED
            };
            for (i, name) in names.iter().enumerate() {
                let path = format!("/telemetry/span_arguments/{}/{i}", pointer_segment(key));
                let d = if name == "*" {
                    let secrets: Vec<String> = schema
                        .get("properties")
                        .and_then(serde_json::Value::as_object)
                        .into_iter()
                        .flat_map(|p| p.keys())
                        .filter(|arg| secret(arg))
                        .map(|arg| format!("`{arg}`"))
                        .collect();
                    if secrets.is_empty() {
                        continue;
                    }
                    Diagnostic::warning(
                        &path,
                        format!(
                            "`*` opts in every argument of `{}`, but spans record its secret {} {} as `[redacted]`",
                            tool.name,
                            if secrets.len() == 1 { "argument" } else { "arguments" },
                            secrets.join(", ")
                        ),
                    )
                    .with_help(format!(
                        "list the arguments spans should carry instead of `*`, e.g. `{}: [NAME, ...]`; a secret never reaches a span",
                        tool.name
                    ))
                } else if secret(name) {
                    let why = if crate::is_secret_key(name) {
                        "is named like a secret"
                    } else {
                        "is marked secret in its schema"
                    };
                    let fix = if crate::is_secret_key(name) {
                        "if it is not a secret, only another name lets it into spans (names like `password`, `token` or `api_key` are always redacted)"
                    } else {
                        "if it is not a secret, remove its mark (`writeOnly`, `x-secret` or `format: password`) under `parameters`"
                    };
                    Diagnostic::warning(
                        &path,
                        format!(
                            "argument `{name}` of `{}` {why}, so spans record it as `[redacted]`",
                            tool.name
                        ),
                    )
                    .with_help(format!(
                        "remove `{name}` from the list: a secret never reaches a span; {fix}"
                    ))
                } else {
                    continue;
                };
                let span = doc.value_span(&d.path);
                out.push(d.with_span(span));
            }
        }
    }
    out
}
