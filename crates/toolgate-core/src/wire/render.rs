//! Rendering a catalog for one API: the declarations, what changed, what broke a rule,
//! and what is needed to read the API's calls back.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::{HostedTool, NameMap, ParamNames, Target};
use crate::ToolDescriptor;

/// How to render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Ask for strict schemas where the API has a strict mode (OpenAI, Anthropic).
    pub strict: bool,
    /// Gemini and Vertex: send full JSON Schema (`parametersJsonSchema`) instead of
    /// the OpenAPI subset (`parameters`).
    pub json_schema: bool,
}

/// Something the renderer changed, dropped or could not carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// The canonical tool (or hosted tool type) it concerns; `None` for the whole request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Where in the tool's schema, as a JSON pointer, when it concerns the schema.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// What happened and why, in words.
    pub message: String,
}

impl Note {
    /// A note about a tool as a whole.
    pub fn tool(tool: &str, message: impl Into<String>) -> Self {
        Note {
            tool: Some(tool.to_owned()),
            path: String::new(),
            message: message.into(),
        }
    }

    /// A note about the place `path` in a tool's schema.
    pub fn at(tool: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Note {
            tool: Some(tool.to_owned()),
            path: path.into(),
            message: message.into(),
        }
    }

    /// A note about the whole request, not one tool.
    pub fn request(message: impl Into<String>) -> Self {
        Note {
            tool: None,
            path: String::new(),
            message: message.into(),
        }
    }
}

/// A catalog rendered for one target.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The API it was rendered for.
    pub target: Target,
    /// The `tools` value of the request body, in catalog order (hosted tools last).
    pub tools: Vec<Value>,
    /// Changes made to fit the API (schema transforms, renamed tools, dropped fields).
    pub changes: Vec<Note>,
    /// Rules of the API this catalog breaks; a request with these would be refused.
    pub problems: Vec<Note>,
    /// What reading calls back needs.
    pub reader: CallReader,
}

/// Reads an API's calls back into canonical form: wire names to canonical names,
/// renamed parameters to their own names, and `null`s the model sent for fields that
/// were optional before a strict transform made them required-but-nullable, dropped
/// again.
#[derive(Debug, Clone, Default)]
pub struct CallReader {
    /// The wire name of each tool, and back.
    pub names: NameMap,
    /// Per canonical tool, the property paths (object keys from the root) that were optional.
    pub nullable_optionals: HashMap<String, Vec<Vec<String>>>,
    /// Per canonical tool whose parameters were renamed to fit the API, the map.
    pub parameters: HashMap<String, ParamNames>,
    /// Per canonical tool whose output schema was declared with renamed
    /// properties, the map (results are sent under those names).
    pub results: HashMap<String, ParamNames>,
}

impl CallReader {
    /// A reader that only maps names.
    pub fn new(names: NameMap) -> Self {
        CallReader {
            names,
            ..CallReader::default()
        }
    }

    /// Renames the arguments of a call to `tool` from the API's names to the schema's.
    pub fn restore_parameters(&self, tool: &str, arguments: &mut Value) {
        if let Some(names) = self.parameters.get(tool) {
            names.to_original(arguments);
        }
    }

    /// Drops `null` at every path that was optional before the strict transform.
    pub fn restore_optionals(&self, tool: &str, arguments: &mut Value) {
        for path in self.nullable_optionals.get(tool).into_iter().flatten() {
            drop_null_at(arguments, path);
        }
    }
}

fn drop_null_at(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = value;
    for key in parents {
        match node.get_mut(key) {
            Some(child) => node = child,
            None => return,
        }
    }
    if let Some(object) = node.as_object_mut()
        && object.get(last).is_some_and(Value::is_null)
    {
        object.remove(last);
    }
}

/// Everything a target renderer receives.
pub struct RenderInput<'a> {
    /// The catalog's tools, in catalog order.
    pub tools: &'a [ToolDescriptor],
    /// Tools the provider runs itself, rendered after the catalog's.
    pub hosted: &'a [HostedTool],
    /// What the target's renderer may change.
    pub options: RenderOptions,
    /// Load only these tools up front and the rest through the API's tool search
    /// (see [`super::render_deferred`]); `None` loads every tool.
    pub defer: Option<&'a DeferSet>,
}

/// Which tools a request loads up front; every other tool is deferred, found
/// through tool search when the model needs it.
///
/// ```
/// use toolgate_core::wire::DeferSet;
/// let defer = DeferSet::always_loading(["help", "orders.lookup"]);
/// assert!(!defer.is_deferred("help"));
/// assert!(defer.is_deferred("orders.refund"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeferSet {
    always_loaded: BTreeSet<String>,
}

impl DeferSet {
    /// Defers every tool but `names`.
    pub fn always_loading<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        DeferSet {
            always_loaded: names.into_iter().map(Into::into).collect(),
        }
    }

    /// Defers every tool of `spec` that is not marked `always_loaded: true`.
    pub fn from_spec(spec: &crate::spec::SpecFile) -> Self {
        DeferSet::always_loading(
            spec.tools
                .iter()
                .filter(|t| t.always_loaded)
                .map(|t| t.name.clone()),
        )
    }

    /// Also loads `names` up front (tools a search has found, say).
    pub fn load<S: Into<String>>(&mut self, names: impl IntoIterator<Item = S>) {
        self.always_loaded.extend(names.into_iter().map(Into::into));
    }

    /// Whether `tool` waits for a search.
    pub fn is_deferred(&self, tool: &str) -> bool {
        !self.always_loaded.contains(tool)
    }

    /// The tools loaded up front, sorted by name.
    pub fn always_loaded(&self) -> impl Iterator<Item = &str> {
        self.always_loaded.iter().map(String::as_str)
    }
}
