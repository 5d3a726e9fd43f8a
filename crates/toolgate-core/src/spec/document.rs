//! A parsed spec document: its JSON value plus where every node stands in the text.
//!
//! YAML and JSON are parsed by serde-saphyr (JSON is YAML's flow style), under its
//! budget against alias bombs and deep nesting. Each node's position is indexed by
//! JSON pointer, so any later check that names a path can point at the text.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::{Location, Spanned};

use super::diagnostic::{Diagnostic, Span};

/// The largest spec file toolgate reads.
pub const MAX_SPEC_BYTES: usize = 8 * 1024 * 1024;

/// A spec document with positions.
#[derive(Debug, Clone)]
pub struct Document {
    /// The document as JSON.
    pub value: Value,
    text: String,
    spans: BTreeMap<String, NodeSpans>,
    line_starts: Vec<usize>,
}

#[derive(Debug, Clone, Copy)]
struct NodeSpans {
    key: Option<Span>,
    value: Span,
}

impl Document {
    /// Parses YAML (or JSON) text. Refuses with one diagnostic what is not a document.
    pub fn parse(text: &str) -> Result<Document, Diagnostic> {
        if text.len() > MAX_SPEC_BYTES {
            return Err(Diagnostic::error(
                "",
                format!(
                    "the file is {} bytes, more than a spec file may hold ({} MiB)",
                    thousands(text.len()),
                    MAX_SPEC_BYTES / (1024 * 1024)
                ),
            )
            .with_help("check that this is the file you meant; spec files are usually a few KiB"));
        }
        if text.trim().is_empty() {
            return Err(Diagnostic::error("", "the file is empty")
                .with_help("declare at least `tools:`; `toolgate schema` prints the format"));
        }
        let root = parse_nodes(text).map_err(|e| syntax_diagnostic(text, &e))?;
        let mut spans = BTreeMap::new();
        let value = index(text, &root, None, String::new(), &mut spans);
        if !value.is_object() {
            let span = spans.get("").map(|s: &NodeSpans| s.value);
            let (what, help) = match &value {
                Value::Array(_) => (
                    "a list",
                    "if these are tools, put `tools:` on the first line and indent the list under it",
                ),
                Value::String(_) => (
                    "a single string",
                    "start the file with `tools:` followed by a list of tools",
                ),
                Value::Null => (
                    "empty (only comments or `null`)",
                    "declare at least `tools:`; `toolgate schema` prints the format",
                ),
                _ => (
                    "a single value",
                    "start the file with `tools:` followed by a list of tools",
                ),
            };
            return Err(Diagnostic::error(
                "",
                format!(
                    "the file is {what}, but a spec file must be a mapping with a `tools:` key"
                ),
            )
            .with_span(span)
            .with_help(help));
        }
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Ok(Document {
            value,
            text: text.to_owned(),
            spans,
            line_starts,
        })
    }

    /// Where the value at `pointer` stands, or the closest ancestor that has a position.
    pub fn value_span(&self, pointer: &str) -> Option<Span> {
        self.closest(pointer).map(|s| s.value)
    }

    /// Where the key of the entry at `pointer` stands (falls back to its value).
    pub fn key_span(&self, pointer: &str) -> Option<Span> {
        self.closest(pointer).map(|s| s.key.unwrap_or(s.value))
    }

    /// The source text a span covers, when the span lies within the text.
    pub fn text_of(&self, span: Span) -> Option<&str> {
        self.text
            .get(span.offset..span.offset.checked_add(span.len)?)
    }

    /// The 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&start| start <= offset)
    }

    fn closest(&self, pointer: &str) -> Option<&NodeSpans> {
        let mut p = pointer;
        loop {
            if let Some(s) = self.spans.get(p) {
                return Some(s);
            }
            let cut = p.rfind('/')?;
            p = &p[..cut];
        }
    }
}

/// Escapes one JSON pointer segment.
pub(crate) fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A YAML node as parsed, each child with its position.
enum Node {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a YAML node")
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_none<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::I64(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(Node::U64(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
                Ok(Node::F64(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Node, E> {
                Ok(Node::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Spanned<Node>>()? {
                    items.push(item);
                }
                Ok(Node::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<Spanned<String>, Spanned<Node>>()? {
                    entries.push(entry);
                }
                Ok(Node::Map(entries))
            }
        }
        d.deserialize_any(NodeVisitor)
    }
}

/// Converts a node to JSON, recording the spans of it and its children.
fn index(
    text: &str,
    node: &Spanned<Node>,
    key: Option<Span>,
    pointer: String,
    out: &mut BTreeMap<String, NodeSpans>,
) -> Value {
    let value_span = location_span(text, &node.referenced);
    let value = match &node.value {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::I64(n) => Value::Number((*n).into()),
        Node::U64(n) => Value::Number((*n).into()),
        Node::F64(f) => Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Node::Str(s) => Value::String(s.clone()),
        Node::Seq(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| index(text, item, None, format!("{pointer}/{i}"), out))
                .collect(),
        ),
        Node::Map(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let child = format!("{pointer}/{}", pointer_segment(&k.value));
                let key_span = location_span(text, &k.referenced);
                map.insert(k.value.clone(), index(text, v, key_span, child, out));
            }
            Value::Object(map)
        }
    };
    if let Some(value_span) = value_span {
        out.insert(
            pointer,
            NodeSpans {
                key,
                value: value_span,
            },
        );
    }
    value
}

/// A location's byte span; locations with only line and column are converted.
fn location_span(text: &str, location: &Location) -> Option<Span> {
    if *location == Location::UNKNOWN {
        return None;
    }
    let span = location.span();
    let offset = match span.byte_offset() {
        Some(offset) => usize::try_from(offset).ok()?,
        None => byte_offset(text, location.line() as usize, location.column() as usize)?,
    };
    // The parser's offsets can land inside a character (a one-byte guess at a
    // multi-byte one): widen to whole characters, within the text.
    let offset = text.floor_char_boundary(offset.min(text.len()));
    let len = span
        .byte_len()
        .and_then(|l| usize::try_from(l).ok())
        .unwrap_or(1)
        .max(1);
    let end = text.ceil_char_boundary(offset.saturating_add(len).min(text.len()));
    Some(Span {
        offset,
        len: end - offset,
    })
}

/// 1-based line and character column to a byte offset.
fn byte_offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1)?
    };
    let rest = text[start..].split('\n').next().unwrap_or("");
    rest.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(rest.len()))
        .nth(column.saturating_sub(1))
        .map(|i| start + i)
}

/// How deep a spec file may nest.
const MAX_DEPTH: usize = 64;
/// How many nodes a spec file may hold, aliases expanded.
const MAX_NODES: usize = 200_000;
/// How many aliases (`*name`) a spec file may use.
const MAX_ALIASES: usize = 1_000;
/// The parser recurses once per level, with large frames in debug builds (about
/// 40 KiB a level): it runs on a thread of its own whose stack fits `MAX_DEPTH`
/// levels many times over, whatever the caller's stack.
const PARSER_STACK_BYTES: usize = 16 * 1024 * 1024;

fn parse_nodes(text: &str) -> Result<Spanned<Node>, serde_saphyr::Error> {
    let parse = || {
        let options = serde_saphyr::options! {
            with_snippet: false,
            strict_booleans: true,
            budget: serde_saphyr::budget! {
                max_depth: MAX_DEPTH,
                max_nodes: MAX_NODES,
                max_aliases: MAX_ALIASES,
            },
        };
        serde_saphyr::from_str_with_options(text, options)
    };
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("toolgate-spec-parser".into())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(scope, parse);
        match spawned {
            Ok(parser) => parser
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No threads here (e.g. wasm): parse on the caller's stack.
            Err(_) => parse(),
        }
    })
}

/// `200000` as `200,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The error itself, beneath the wrappers that add a snippet or an alias's location.
fn original_error(mut error: &serde_saphyr::Error) -> &serde_saphyr::Error {
    while let serde_saphyr::Error::WithSnippet { error: inner, .. }
    | serde_saphyr::Error::AliasError { error: inner, .. } = error
    {
        error = inner;
    }
    error
}

/// One diagnostic for text that is not a YAML/JSON document.
fn syntax_diagnostic(text: &str, error: &serde_saphyr::Error) -> Diagnostic {
    use serde_saphyr::Error;
    use serde_saphyr::budget::BudgetBreach;
    let span = error.location().and_then(|l| location_span(text, &l));
    let original = original_error(error);
    let mut message = original.to_string();
    // The parser's message repeats the position we show as a label.
    if let Some(cut) = message.find(" at line ") {
        message.truncate(cut);
    }
    let (message, help) = match original {
        Error::Budget { breach, .. } => {
            if let BudgetBreach::Depth { .. } = breach {
                let message = format!(
                    "the document nests more than {MAX_DEPTH} levels deep, which no spec file needs"
                );
                return Diagnostic::error("", message).with_span(span).with_help(
                    "flatten the marked value; a `$ref` to a schema under `$defs` avoids repeating deep schemas",
                );
            }
            let what = match breach {
                BudgetBreach::Aliases { .. } => {
                    format!("uses more than {} aliases", thousands(MAX_ALIASES))
                }
                BudgetBreach::Nodes { .. } => format!(
                    "holds more than {} values once its aliases are expanded",
                    thousands(MAX_NODES)
                ),
                other => format!("exceeds the parser's limits ({other:?})"),
            };
            (
                format!("the document {what}, which no spec file needs"),
                "each alias (`*a`) repeats its anchor's whole value (`&a`), so aliases of aliases multiply; use fewer",
            )
        }
        Error::DuplicateMappingKey { key, .. } => (
            match key {
                Some(key) => format!("`{key}` appears twice in the same mapping"),
                None => "a key appears twice in the same mapping".to_owned(),
            },
            "each key may appear once in a mapping; remove or rename one",
        ),
        _ => {
            let help = if message.contains("tab") || text.contains('\t') {
                "fix the syntax at the marked position; YAML indents with spaces, never tabs"
            } else if message.contains("unclosed quote") {
                "add the closing quote; a quoted string runs until its matching quote"
            } else if message.contains("expected ',' or") {
                "separate the entries with `,`: the one before the marked position probably lacks it"
            } else {
                "fix the syntax at the marked position"
            };
            (format!("this is not valid YAML or JSON: {message}"), help)
        }
    };
    Diagnostic::error("", message)
        .with_span(span)
        .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_is_indexed_by_pointer() {
        let text = "tools:\n  - name: ping\n    description: Check.\n";
        let doc = Document::parse(text).unwrap();
        let span = doc.value_span("/tools/0/name").unwrap();
        assert_eq!(&text[span.offset..span.offset + span.len], "ping");
        let key = doc.key_span("/tools/0/name").unwrap();
        assert_eq!(&text[key.offset..key.offset + key.len], "name");
        // A path below a scalar falls back to the scalar.
        assert_eq!(doc.value_span("/tools/0/name/x"), Some(span));
    }

    #[test]
    fn json_is_read_like_yaml() {
        let doc =
            Document::parse(r#"{"tools": [{"name": "ping", "description": "Check."}]}"#).unwrap();
        assert_eq!(doc.value["tools"][0]["name"], "ping");
    }

    #[test]
    fn yes_and_no_stay_strings() {
        let doc = Document::parse("tools: []\nstate: {answer: {default: no}}\n").unwrap();
        assert_eq!(doc.value["state"]["answer"]["default"], "no");
    }

    #[test]
    fn empty_huge_and_scalar_documents_are_one_clear_error() {
        assert_eq!(
            Document::parse("  \n").unwrap_err().message,
            "the file is empty"
        );
        let huge = "a".repeat(MAX_SPEC_BYTES + 1);
        assert!(
            Document::parse(&huge)
                .unwrap_err()
                .message
                .contains("more than a spec file may hold")
        );
        assert!(
            Document::parse("just text")
                .unwrap_err()
                .message
                .contains("must be a mapping")
        );
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let prev = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let err = Document::parse(&text).unwrap_err();
        assert!(
            err.message.contains("once its aliases are expanded"),
            "{}",
            err.message
        );
    }
}
