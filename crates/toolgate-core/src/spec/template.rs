//! Placeholders in spec strings: `{args.NAME}` and `{state.KEY}`.
//!
//! A string that is exactly one placeholder takes the referenced JSON value as is
//! (`"{state.last_order}"` can be an object); elsewhere placeholders are spliced in as
//! text. A dotted path reads into objects (`{args.address.city}`). `${env.NAME}` is not
//! a placeholder here (HTTP headers resolve it), and no other braces are special.

use serde_json::{Map, Value};

use super::document::pointer_segment;

/// Which map a placeholder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `{args.NAME}`: the call's arguments.
    Args,
    /// `{state.KEY}`: the conversation's state.
    State,
}

/// One placeholder found in a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// Which map it reads.
    pub scope: Scope,
    /// The path below the scope: `["address", "city"]`.
    pub path: Vec<String>,
    /// Byte range of the whole `{...}` in the string.
    pub range: std::ops::Range<usize>,
}

impl Placeholder {
    /// The top-level name it reads: an argument or a state key.
    pub fn name(&self) -> &str {
        &self.path[0]
    }
}

/// Every placeholder in `s`, in order.
pub fn placeholders(s: &str) -> Vec<Placeholder> {
    let mut found = Vec::new();
    let mut rest = 0;
    while let Some(open) = s[rest..].find('{').map(|i| rest + i) {
        rest = open + 1;
        if s[..open].ends_with('$') {
            continue;
        }
        let Some(close) = s[open..].find('}').map(|i| open + i) else {
            break;
        };
        let inner = &s[open + 1..close];
        let (scope, path) = match inner.split_once('.') {
            Some(("args", path)) => (Scope::Args, path),
            Some(("state", path)) => (Scope::State, path),
            _ => continue,
        };
        let path: Vec<String> = path.split('.').map(str::to_owned).collect();
        if path.iter().any(|p| {
            p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
        }) {
            continue;
        }
        found.push(Placeholder {
            scope,
            path,
            range: open..close + 1,
        });
        rest = close + 1;
    }
    found
}

/// Every placeholder in every string of `value` (object keys are not templates).
pub fn placeholders_in(value: &Value) -> Vec<Placeholder> {
    let mut strings = Vec::new();
    strings_in(value, String::new(), &mut strings);
    strings
        .into_iter()
        .flat_map(|(_, s)| placeholders(s))
        .collect()
}

/// Every string in `value`, each with its JSON pointer below `pointer`: the texts a
/// template holds (object keys are not templates).
pub(crate) fn strings_in<'v>(value: &'v Value, pointer: String, out: &mut Vec<(String, &'v str)>) {
    match value {
        Value::String(s) => out.push((pointer, s)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings_in(item, format!("{pointer}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                strings_in(item, format!("{pointer}/{}", pointer_segment(key)), out);
            }
        }
        _ => {}
    }
}

/// Fills the placeholders of every string in `value`.
pub fn render(value: &Value, args: &Value, state: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) => render_str(s, args, state),
        Value::Array(items) => Value::Array(items.iter().map(|v| render(v, args, state)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render(v, args, state)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn render_str(s: &str, args: &Value, state: &Map<String, Value>) -> Value {
    let found = placeholders(s);
    if found.is_empty() {
        return Value::String(s.to_owned());
    }
    let lookup = |p: &Placeholder| -> Value {
        let root = match p.scope {
            Scope::Args => args.get(p.name()),
            Scope::State => state.get(p.name()),
        };
        p.path[1..]
            .iter()
            .fold(root, |v, key| v.and_then(|v| v.get(key)))
            .cloned()
            .unwrap_or(Value::Null)
    };
    if let [only] = found.as_slice()
        && only.range == (0..s.len())
    {
        return lookup(only);
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for p in &found {
        out.push_str(&s[last..p.range.start]);
        match lookup(p) {
            Value::Null => {}
            Value::String(text) => out.push_str(&text),
            other => out.push_str(&other.to_string()),
        }
        last = p.range.end;
    }
    out.push_str(&s[last..]);
    Value::String(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> Map<String, Value> {
        json!({"order": {"id": "A-1", "total": 1200}, "verified": true})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn a_lone_placeholder_keeps_the_json_type() {
        assert_eq!(
            render(&json!("{state.order}"), &json!({}), &state()),
            json!({"id": "A-1", "total": 1200})
        );
        assert_eq!(
            render(&json!("{args.n}"), &json!({"n": 3}), &state()),
            json!(3)
        );
    }

    #[test]
    fn placeholders_inside_text_are_spliced_as_text() {
        let out = render(
            &json!({"msg": "Order {state.order.id} for {args.who}: {state.order.total}"}),
            &json!({"who": "Ada"}),
            &state(),
        );
        assert_eq!(out, json!({"msg": "Order A-1 for Ada: 1200"}));
    }

    #[test]
    fn a_missing_value_is_null_alone_and_empty_in_text() {
        assert_eq!(
            render(&json!("{args.absent}"), &json!({}), &state()),
            Value::Null
        );
        assert_eq!(
            render(&json!("x{args.absent}y"), &json!({}), &state()),
            json!("xy")
        );
    }

    #[test]
    fn env_references_and_other_braces_are_left_alone() {
        assert!(placeholders("Bearer ${env.TOKEN}").is_empty());
        assert!(placeholders("{not a placeholder} {args.} {other.x}").is_empty());
        assert_eq!(
            render(&json!("{\"a\": 1}"), &json!({}), &state()),
            json!("{\"a\": 1}")
        );
    }

    #[test]
    fn placeholders_are_found_with_scope_and_path() {
        let found = placeholders("{args.a.b} and {state.k}");
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].scope, found[0].path.clone()),
            (Scope::Args, vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!((found[1].scope, found[1].name()), (Scope::State, "k"));
    }
}
