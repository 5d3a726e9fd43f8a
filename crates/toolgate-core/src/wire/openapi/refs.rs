//! `$ref`s inlined: a local reference is replaced by its target (the siblings win),
//! a recursive one is unrolled [`RECURSION_LIMIT`] times and then cut, and one that
//! points outside the schema or nowhere is dropped with a problem.

use serde_json::{Map, Value};

use super::merge::{Prefer, merge};
use super::{MAX_EXPANSIONS, RECURSION_LIMIT, Transform};
use crate::wire::pointer::percent_decode;

impl Transform<'_> {
    /// Inlines a `$ref` (its siblings win over the target's keywords).
    pub(super) fn reference(
        &mut self,
        object: &Map<String, Value>,
        reference: &Value,
        src: &str,
        depth: usize,
    ) -> Option<Map<String, Value>> {
        let mut siblings = object.clone();
        siblings.remove("$ref");
        let ref_src = format!("{src}/$ref");
        let Some(pointer) = reference
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .map(percent_decode)
        else {
            self.problem(
                ref_src,
                "only references inside this schema (`#/...`) can be inlined; `$ref` dropped",
            );
            return self.node(&Value::Object(siblings), src, depth);
        };
        let Some(target) = self.root.pointer(&pointer) else {
            self.problem(
                ref_src,
                format!("`#{pointer}` points nowhere in this schema; `$ref` dropped"),
            );
            return self.node(&Value::Object(siblings), src, depth);
        };
        if self.refs.iter().filter(|r| **r == pointer).count() >= RECURSION_LIMIT {
            self.change(
                src,
                format!("recursive `$ref` to `#{pointer}` cut after {RECURSION_LIMIT} levels"),
            );
            return None;
        }
        if self.expansions >= MAX_EXPANSIONS {
            self.change(
                src,
                format!("more than {MAX_EXPANSIONS} `$ref` expansions; cut here"),
            );
            return None;
        }
        self.expansions += 1;
        let merged = match target {
            Value::Object(target) => {
                let mut merged = target.clone();
                merge(&mut merged, &siblings, Prefer::Extra);
                Value::Object(merged)
            }
            Value::Bool(true) => Value::Object(siblings),
            other => other.clone(),
        };
        self.refs.push(pointer.clone());
        let out = self.node(&merged, &pointer, depth + 1);
        self.refs.pop();
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::RECURSION_LIMIT;
    use super::super::tests::{convert, messages};

    #[test]
    fn a_recursive_ref_is_unrolled_to_the_limit_and_then_cut() {
        let out = convert(json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }}}
        }));
        let mut node = &out.schema["properties"]["root"];
        for _ in 0..RECURSION_LIMIT - 1 {
            assert_eq!(node["properties"]["name"]["type"], "STRING");
            node = &node["properties"]["children"]["items"];
        }
        assert_eq!(node["properties"]["name"]["type"], "STRING");
        assert!(node["properties"].get("children").is_none(), "{node}");
        let changes = messages(&out.changes);
        assert!(changes.contains(&"/$defs/Node/properties/children/items: recursive `$ref` to `#/$defs/Node` cut after 3 levels".to_owned()), "{changes:#?}");
        assert!(changes.contains(&"/$defs/Node/properties/children: property `children` left out (its schema was cut)".to_owned()));
        assert!(out.problems.is_empty(), "{:?}", out.problems);
    }

    #[test]
    fn a_self_referencing_root_does_not_loop() {
        let out = convert(json!({"$ref": "#"}));
        assert!(!out.problems.is_empty());
        let out = convert(
            json!({"type": "object", "properties": {"next": {"$ref": "#"}, "value": {"type": "number"}}}),
        );
        assert_eq!(
            out.schema["properties"]["next"]["properties"]["value"]["type"],
            "NUMBER"
        );
    }
}
