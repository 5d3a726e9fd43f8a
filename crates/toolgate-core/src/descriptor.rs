//! The serializable description of any tool, whatever implements it.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::{Effect, Safety, ToolUsage};

/// How a background tool's result is delivered (Gemini's `scheduling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scheduling {
    /// Interrupt the model with the result.
    Interrupt,
    /// Deliver the result when the model is idle.
    WhenIdle,
    /// Record the result without prompting the model.
    Silent,
}

impl Scheduling {
    /// The spelling in spec files and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheduling::Interrupt => "interrupt",
            Scheduling::WhenIdle => "when_idle",
            Scheduling::Silent => "silent",
        }
    }
}

/// Where a tool came from. Shown in errors (a duplicate names both sources) and
/// in descriptors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSource {
    /// A Rust type registered in code.
    Native {
        /// The Rust type's name, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        type_name: Option<String>,
    },
    /// A declaration in a spec file.
    Spec {
        /// The spec file's path, as given.
        file: String,
    },
    /// A tool on an MCP server, under a namespace.
    Mcp {
        /// The server's namespace.
        server: String,
    },
    /// Built into toolgate.
    Builtin,
}

impl fmt::Display for ToolSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolSource::Native { type_name: Some(t) } => write!(f, "native tool `{t}`"),
            ToolSource::Native { type_name: None } => f.write_str("a native tool"),
            ToolSource::Spec { file } => write!(f, "spec file {file}"),
            ToolSource::Mcp { server } => write!(f, "MCP server `{server}`"),
            ToolSource::Builtin => f.write_str("toolgate's built-in tools"),
        }
    }
}

/// Everything a model, an operator or a policy needs to know about a tool, as data.
///
/// Serialized, it also carries the fields derived from `effect` (`safety`: tier,
/// retry and MCP annotations); `usage`, `input_examples` and `tags` are left out
/// when empty.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolDescriptor {
    /// The canonical name models call the tool by.
    pub name: String,
    /// A human-readable name for listings; the name stands in when absent.
    #[serde(default)]
    pub title: Option<String>,
    /// What the tool does, for the model that picks it.
    pub description: String,
    /// The JSON Schema its arguments must satisfy.
    pub input_schema: Value,
    /// The JSON Schema of what it returns, when it declares one.
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// What running it can do, which the policy decides on.
    pub effect: Effect,
    /// Where it came from.
    pub source: ToolSource,
    /// Guidance for the model choosing tools.
    #[serde(default)]
    pub usage: crate::ToolUsage,
    /// Example arguments, shown to models whose API takes them.
    #[serde(default)]
    pub input_examples: Vec<Value>,
    /// Free-form labels, matched by tool search.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How a background tool's result is delivered; `None` for a tool the model waits on.
    #[serde(default)]
    pub background: Option<Scheduling>,
    /// What its result brings into a conversation (untrusted content, private
    /// data), which the rule of two and `seen:` rules read.
    #[serde(default, skip_serializing_if = "crate::Labels::is_empty")]
    pub output: crate::Labels,
    /// It sends data out even though it changes nothing (a URL fetcher): the
    /// rule of two counts it as an act, whatever its effect.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sends: bool,
    /// The arguments the MCP host must send apart from the model's
    /// (`secureArguments`, as SEP-3221 drafts it), as a JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_input_schema: Option<Value>,
    /// What one call costs, for the budgets that count cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::spec::Cost>,
}

impl ToolDescriptor {
    /// A descriptor with the required fields; the rest start empty.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        effect: Effect,
        source: ToolSource,
    ) -> Self {
        ToolDescriptor {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            effect,
            source,
            usage: ToolUsage::default(),
            input_examples: Vec::new(),
            tags: Vec::new(),
            background: None,
            output: crate::Labels::default(),
            sends: false,
            secure_input_schema: None,
            cost: None,
        }
    }

    /// Tier, retry rule and MCP annotations, read off the effect.
    pub fn safety(&self) -> Safety {
        self.effect.safety()
    }
}

/// The serialized form: the descriptor's fields in a stable order plus `safety`.
#[derive(Serialize)]
struct DescriptorView<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    effect: Effect,
    safety: Safety,
    source: &'a ToolSource,
    #[serde(skip_serializing_if = "ToolUsage::is_empty")]
    usage: &'a ToolUsage,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    input_examples: &'a [Value],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    background: Option<Scheduling>,
}

impl Serialize for ToolDescriptor {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        DescriptorView {
            name: &self.name,
            title: self.title.as_deref(),
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: self.output_schema.as_ref(),
            effect: self.effect,
            safety: self.safety(),
            source: &self.source,
            usage: &self.usage,
            input_examples: &self.input_examples,
            tags: &self.tags,
            background: self.background,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_descriptor_round_trips_and_skips_empty_guidance() {
        let d = ToolDescriptor::new(
            "ping",
            "Check liveness.",
            json!({"type": "object"}),
            Effect::Read,
            ToolSource::Builtin,
        );
        let value = serde_json::to_value(&d).unwrap();
        assert!(value.get("usage").is_none());
        assert!(value.get("tags").is_none());
        assert_eq!(value["safety"]["tier"], "read");
        assert_eq!(value["safety"]["annotations"]["readOnlyHint"], true);
        let back: ToolDescriptor = serde_json::from_value(value).unwrap();
        assert_eq!(back, d);
    }
}
