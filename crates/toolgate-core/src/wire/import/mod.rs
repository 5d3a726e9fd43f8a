//! Importing tool lists written for other APIs — and BFCL's function corpus — as
//! spec tools.
//!
//! Each dialect's list is found where its request bodies and listings keep it;
//! each entry becomes a [`ToolSpec`] and each schema becomes valid JSON Schema
//! 2020-12: pseudo-types (`dict`, `float`, `tuple`, `any`, Java and JavaScript type
//! names) take their JSON Schema names, Gemini's upper-case types and `nullable`
//! are rewritten, BFCL's `optional` marks, defaults of the wrong type and `required`
//! entries that name no property are fixed. Every change is a [`Note`]; what
//! cannot be made valid is dropped, with a note saying why. Names keep their
//! canonical form (dots allowed); a name that is not canonical is sanitized, and
//! a name met again gets a `_2`, `_3`... suffix, so every definition imports.
//!
//! Each step is in a file of its own: `entries` finds a dialect's list and reads
//! each entry as a [`Draft`], `names` makes the names canonical and unique,
//! `build` makes each draft a spec tool, `normalize` rewrites its schemas into
//! JSON Schema 2020-12, `valid` fixes what still breaks the meta-schema, and
//! `notes` gathers the notes on the way.

mod build;
mod entries;
mod names;
mod normalize;
mod notes;
mod valid;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::Note;
use crate::Effect;
use crate::spec::ToolSpec;
use build::build;
use entries::{draft, parse_text, tool_entries};
use names::final_names;
use notes::{Rewrites, Sink};

/// A foreign tool-list dialect, named as on the command line (`--from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportFormat {
    /// OpenAI Chat Completions `tools` (or the legacy `functions`).
    OpenAiChat,
    /// OpenAI Responses `tools`.
    OpenAiResponses,
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `tools[].functionDeclarations`, or a list of declarations.
    Gemini,
    /// An MCP `tools/list` result.
    Mcp,
    /// BFCL function definitions: JSON Lines, one function a line, or a JSON array.
    Bfcl,
}

impl ImportFormat {
    /// Every format, in the order `--from` lists them.
    pub const ALL: [ImportFormat; 6] = [
        ImportFormat::OpenAiChat,
        ImportFormat::OpenAiResponses,
        ImportFormat::Anthropic,
        ImportFormat::Gemini,
        ImportFormat::Mcp,
        ImportFormat::Bfcl,
    ];

    /// The `--from` name (`openai-chat`).
    pub fn as_str(self) -> &'static str {
        match self {
            ImportFormat::OpenAiChat => "openai-chat",
            ImportFormat::OpenAiResponses => "openai-responses",
            ImportFormat::Anthropic => "anthropic",
            ImportFormat::Gemini => "gemini",
            ImportFormat::Mcp => "mcp",
            ImportFormat::Bfcl => "bfcl",
        }
    }

    /// Where this dialect keeps its tools, for error messages.
    fn expected(self) -> &'static str {
        match self {
            ImportFormat::OpenAiChat => {
                "a JSON array of `{type: function, function: {...}}` tools, or a request body with `tools`"
            }
            ImportFormat::OpenAiResponses => {
                "a JSON array of `{type: function, name, parameters}` tools, or a request body with `tools`"
            }
            ImportFormat::Anthropic => {
                "a JSON array of `{name, input_schema}` tools, or a request body with `tools`"
            }
            ImportFormat::Gemini => {
                "a `[{functionDeclarations: [...]}]` list, a list of declarations, or a request body with `tools`"
            }
            ImportFormat::Mcp => {
                "a `tools/list` result `{tools: [...]}` (or the whole JSON-RPC response)"
            }
            ImportFormat::Bfcl => {
                "JSON Lines with one function a line, or a JSON array of functions"
            }
        }
    }
}

impl fmt::Display for ImportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--from` value that names no import format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown import format `{0}`: expected one of openai-chat, openai-responses, anthropic, gemini, mcp, bfcl"
)]
pub struct UnknownImportFormat(pub String);

impl FromStr for ImportFormat {
    type Err = UnknownImportFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ImportFormat::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownImportFormat(s.to_owned()))
    }
}

/// The imported tools, and everything that was changed or left out on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    /// The tools as spec entries, in input order.
    pub tools: Vec<ToolSpec>,
    /// Notes name the imported tool; paths point into the spec tool (`/parameters/...`).
    pub notes: Vec<Note>,
}

/// Input that holds no tool list at all. (Tools that cannot be imported are
/// skipped with a note instead.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The input is neither JSON nor JSON Lines.
    #[error(
        "the input is not JSON ({0}); give a JSON document, or JSON Lines with one tool a line"
    )]
    NotJson(String),
    /// One line of JSON Lines input does not parse.
    #[error("line {line} is not JSON ({message}); in JSON Lines every line holds one whole tool")]
    BadLine {
        /// The line's number, from 1.
        line: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// The JSON holds nothing where `format` keeps its tools.
    #[error("no {format} tool list found: expected {expected}")]
    NoToolList {
        /// The format asked for.
        format: ImportFormat,
        /// Where that format keeps its tools, in words.
        expected: &'static str,
    },
}

/// Imports the tools of `text`, written in the `from` dialect.
///
/// ```
/// use toolgate_core::wire::{ImportFormat, import_tools};
/// let text = r#"{"name": "math.factorial", "description": "n!",
///     "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}"#;
/// let imported = import_tools(ImportFormat::Bfcl, text).unwrap();
/// assert_eq!(imported.tools[0].name, "math.factorial");
/// assert_eq!(imported.tools[0].parameters.as_ref().unwrap()["type"], "object");
/// ```
pub fn import_tools(from: ImportFormat, text: &str) -> Result<Imported, ImportError> {
    let document = parse_text(text)?;
    let mut notes = Vec::new();
    let entries = tool_entries(from, &document, &mut notes)?;
    let drafts: Vec<Draft> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| draft(from, i, e, &mut notes))
        .collect();
    let names = final_names(&drafts);
    let mut tools = Vec::with_capacity(drafts.len());
    let mut rewrites = Rewrites::default();
    for (draft, (name, name_notes)) in drafts.into_iter().zip(names) {
        let mut sink = Sink::new(&name, &mut rewrites);
        for message in name_notes.into_iter().chain(draft.notes.iter().cloned()) {
            sink.at("", message);
        }
        if let Some(tool) = build(draft, name.clone(), &mut sink) {
            tools.push(tool);
        }
        notes.extend(sink.finish());
    }
    notes.extend(rewrites.notes());
    if from != ImportFormat::Mcp && !tools.is_empty() {
        let count = match tools.len() {
            1 => "the imported tool has none, so it counts".to_owned(),
            n => format!("none of the {n} imported tools has one, so each counts"),
        };
        notes.push(Note::request(format!(
            "{from} tools declare no effect: {count} as `write` (the spec default); \
             add `effect:` (read, idempotent, write, execute, destructive or external) to say what it does"
        )));
    }
    Ok(Imported { tools, notes })
}

/// Which schema dialect a schema is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    JsonSchema,
    /// Gemini's `Schema`: the OpenAPI 3.0 subset, upper-case types, `nullable`.
    GeminiOpenApi,
}

/// One entry, read but not yet normalized.
struct Draft {
    name: String,
    title: Option<String>,
    description: Option<String>,
    parameters: Option<(Value, Dialect)>,
    returns: Option<(Value, Dialect)>,
    effect: Option<Effect>,
    background: bool,
    examples: Vec<Value>,
    /// Notes on the entry itself, attached once the name is final.
    notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    pub(super) fn import(from: ImportFormat, text: &str) -> Imported {
        import_tools(from, text).unwrap()
    }

    pub(super) fn parameters(imported: &Imported, i: usize) -> &Value {
        imported.tools[i].parameters.as_ref().unwrap()
    }

    pub(super) fn messages(imported: &Imported) -> Vec<String> {
        imported
            .notes
            .iter()
            .map(|n| {
                format!(
                    "{} {}: {}",
                    n.tool.as_deref().unwrap_or("*"),
                    n.path,
                    n.message
                )
            })
            .collect()
    }

    pub(super) fn assert_valid_json_schema(schema: &Value) {
        let meta = jsonschema::draft202012::meta::validator();
        let errors: Vec<String> = meta.iter_errors(schema).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{schema}: {errors:?}");
        assert!(jsonschema::draft202012::new(schema).is_ok(), "{schema}");
    }

    pub(super) fn snapshot(imported: &Imported) -> Value {
        json!({"tools": imported.tools, "notes": messages(imported)})
    }

    #[test]
    fn format_names_round_trip_and_an_unknown_one_lists_the_valid_ones() {
        for format in ImportFormat::ALL {
            assert_eq!(format.as_str().parse::<ImportFormat>(), Ok(format));
        }
        let err = "openai".parse::<ImportFormat>().unwrap_err().to_string();
        assert!(
            err.contains("`openai`") && err.contains("openai-chat"),
            "{err}"
        );
    }

    #[test]
    fn tools_without_an_effect_are_reported_once() {
        let imported = import(
            ImportFormat::OpenAiResponses,
            r#"[{"type": "function", "name": "a", "description": "A."}]"#,
        );
        let effect_notes = imported
            .notes
            .iter()
            .filter(|n| n.message.contains("declare no effect"))
            .count();
        assert_eq!(effect_notes, 1);
        assert_eq!(imported.tools[0].effect, None);
    }
}
