//! The per-dialect keyword tables: what the transform does with each keyword that
//! is not structural ([`keyword_action`]), the string formats each strict mode
//! supports, which keywords are annotations, and which keywords the checker
//! allows ([`allowed_keyword`]).

use serde_json::Value;

use super::StrictDialect;
use super::schema::compact;

/// What to do with a keyword that is not structural.
pub(super) enum Action {
    Keep,
    /// Removed; this text goes into the description.
    Fold(String),
    /// Removed, with this reason in the change note.
    Drop(&'static str),
    /// Removed without a note (it has no effect on what is accepted).
    Silent,
}

/// String formats each strict mode supports.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

pub(super) fn formats(dialect: StrictDialect) -> &'static [&'static str] {
    match dialect {
        StrictDialect::OpenAi => OPENAI_FORMATS,
        StrictDialect::Anthropic => ANTHROPIC_FORMATS,
    }
}

pub(super) fn keyword_action(dialect: StrictDialect, key: &str, value: &Value) -> Action {
    let openai = dialect == StrictDialect::OpenAi;
    let v = compact(value);
    match key {
        "pattern" if openai => Action::Keep,
        "pattern" => Action::Fold(format!(
            "matching the regular expression `{}`",
            value.as_str().unwrap_or(&v)
        )),
        "format"
            if value
                .as_str()
                .is_some_and(|f| formats(dialect).contains(&f)) =>
        {
            Action::Keep
        }
        "format" => Action::Fold(format!("format: {}", value.as_str().unwrap_or(&v))),
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
        | "minItems" | "maxItems"
            if openai =>
        {
            Action::Keep
        }
        "minItems" if value.as_u64().is_some_and(|n| n <= 1) => Action::Keep,
        "minimum" => Action::Fold(format!("at least {v}")),
        "maximum" => Action::Fold(format!("at most {v}")),
        "exclusiveMinimum" => Action::Fold(format!("greater than {v}")),
        "exclusiveMaximum" => Action::Fold(format!("less than {v}")),
        "multipleOf" => Action::Fold(format!("a multiple of {v}")),
        "minItems" => Action::Fold(format!("at least {v} items")),
        "maxItems" => Action::Fold(format!("at most {v} items")),
        "minLength" => Action::Fold(format!("at least {v} characters")),
        "maxLength" => Action::Fold(format!("at most {v} characters")),
        "minProperties" => Action::Fold(format!("at least {v} entries")),
        "maxProperties" => Action::Fold(format!("at most {v} entries")),
        "uniqueItems" if *value == Value::Bool(true) => {
            Action::Fold("no duplicate items".to_owned())
        }
        "contains" => Action::Fold(format!("containing an item matching {v}")),
        "minContains" => Action::Fold(format!("at least {v} matching items")),
        "maxContains" => Action::Fold(format!("at most {v} matching items")),
        "default" if !openai => Action::Keep,
        "default" if value.is_null() => {
            Action::Drop("a `null` default says nothing a nullable field does not")
        }
        "default" => Action::Fold(format!("default: {v}")),
        "examples" => match value.as_array() {
            Some(list) if !list.is_empty() => Action::Fold(format!(
                "for example: {}",
                list.iter().map(compact).collect::<Vec<_>>().join(", ")
            )),
            _ => Action::Silent,
        },
        "deprecated" if *value == Value::Bool(true) => Action::Fold("deprecated".to_owned()),
        "not" => Action::Fold(format!("not matching {v}")),
        "if" => Action::Fold(format!("conditional: if {v}")),
        "then" => Action::Fold(format!("then {v}")),
        "else" => Action::Fold(format!("otherwise {v}")),
        "dependentRequired" => Action::Fold(
            dependent_required(value).unwrap_or_else(|| format!("dependent required: {v}")),
        ),
        "dependentSchemas" => Action::Fold(format!("dependent schemas: {v}")),
        "contentEncoding" => Action::Fold(format!("encoded as {}", value.as_str().unwrap_or(&v))),
        "contentMediaType" => {
            Action::Fold(format!("content type {}", value.as_str().unwrap_or(&v)))
        }
        "$schema" | "$id" | "$anchor" | "$dynamicAnchor" | "$comment" | "$vocabulary" => {
            Action::Silent
        }
        "uniqueItems" | "deprecated" | "readOnly" | "writeOnly" => Action::Silent,
        "nullable" => Action::Drop("an OpenAPI keyword, not JSON Schema"),
        _ => Action::Drop("not supported in strict mode"),
    }
}

fn dependent_required(value: &Value) -> Option<String> {
    let parts: Vec<String> = value
        .as_object()?
        .iter()
        .map(|(k, v)| {
            let others: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| format!("`{}`", n.as_str().unwrap_or("?")))
                .collect();
            format!("when `{k}` is given, also give {}", others.join(", "))
        })
        .collect();
    Some(parts.join("; "))
}

/// Annotations: keywords that say something about a value but do not constrain it.
pub(super) fn is_annotation(key: &str) -> bool {
    matches!(
        key,
        "description"
            | "title"
            | "default"
            | "examples"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "$comment"
            | "$schema"
            | "$id"
            | "$defs"
            | "definitions"
    )
}

pub(super) fn allowed_keyword(dialect: StrictDialect, key: &str, is_root: bool) -> bool {
    let common = matches!(
        key,
        "type"
            | "description"
            | "title"
            | "enum"
            | "const"
            | "anyOf"
            | "properties"
            | "required"
            | "additionalProperties"
            | "items"
            | "$ref"
            | "format"
    );
    let defs = is_root && matches!(key, "$defs" | "definitions");
    let dialect_specific = match dialect {
        StrictDialect::OpenAi => matches!(
            key,
            "pattern"
                | "multipleOf"
                | "maximum"
                | "exclusiveMaximum"
                | "minimum"
                | "exclusiveMinimum"
                | "minItems"
                | "maxItems"
        ),
        StrictDialect::Anthropic => matches!(key, "default" | "minItems"),
    };
    common || defs || dialect_specific
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::wire::strict::tests::{messages, openai};
    use crate::wire::strict::{StrictDialect, make_strict};

    #[test]
    fn unsupported_keywords_are_folded_into_the_description() {
        let s = openai(json!({"type": "object", "properties": {
            "title": {"type": "string", "description": "Short title", "maxLength": 20, "minLength": 1},
            "site": {"type": "string", "format": "uri"}
        }, "required": ["title", "site"]}));
        assert_eq!(
            s.schema["properties"]["title"]["description"],
            "Short title (at most 20 characters; at least 1 characters)"
        );
        assert_eq!(
            s.schema["properties"]["site"],
            json!({"type": "string", "description": "(format: uri)"})
        );
        assert!(messages(&s).contains(&"/properties/title: removed `maxLength: 20` (not supported in strict mode); the description says it instead".to_owned()));
    }

    #[test]
    fn anthropic_keeps_optionals_optional_and_folds_numeric_bounds_and_patterns() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "code": {"type": "string", "pattern": "^[A-Z]+$"},
            "site": {"type": "string", "format": "uri"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}
        }, "required": ["n"]});
        let s = make_strict(&schema, StrictDialect::Anthropic).unwrap();
        assert_eq!(s.schema["required"], json!(["n"]));
        assert!(s.nullable_optionals.is_empty());
        assert_eq!(
            s.schema["properties"]["n"],
            json!({"type": "integer", "description": "(at least 1; at most 5)"})
        );
        assert_eq!(
            s.schema["properties"]["code"]["description"],
            "(matching the regular expression `^[A-Z]+$`)"
        );
        assert_eq!(
            s.schema["properties"]["site"],
            json!({"type": "string", "format": "uri"})
        );
        assert_eq!(
            s.schema["properties"]["tags"]["description"],
            "(at least 2 items)"
        );
    }
}
