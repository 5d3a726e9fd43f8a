//! An operation's parameters and request body merged into one arguments schema.
//!
//! Path, query, header and cookie parameters come first, in that order, then the
//! body: an object body's properties become arguments of their own (flattened), any
//! other body (an array, a union, an open map) is one argument named `body`. A name
//! that is taken already is given its location as a prefix (`query_id`,
//! `body_name`), with a note; a name a placeholder cannot spell (`user.name`,
//! `filter[tag]`) is spelled with `_`. Required-ness, defaults, enums, formats and
//! descriptions travel with each schema.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::document::OpenApiVersion;
use super::operations::Operation;
use super::refs::Resolver;
use super::request::{BodyChoice, Location};
use super::schema::{Converter, Direction, SchemaNotes};

/// Where an argument goes in the request.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Source {
    Param {
        location: Location,
        name: String,
        style: Option<String>,
        explode: Option<bool>,
        allow_reserved: bool,
    },
    /// A property of an object body.
    BodyProperty(String),
    /// The whole body.
    Body,
}

/// One argument of the tool and where it goes.
#[derive(Debug, Clone)]
pub(super) struct Arg {
    pub name: String,
    pub source: Source,
}

/// The arguments schema and the arguments' places.
pub(super) struct Arguments {
    pub schema: Value,
    pub args: Vec<Arg>,
    /// The body's media type, when there is a body.
    pub media_type: Option<String>,
    /// Name collisions and respellings, as messages.
    pub renames: Vec<String>,
    pub schema_notes: SchemaNotes,
}

/// Headers OpenAPI says a parameter may not declare (the binding sets them).
const RESERVED_HEADERS: [&str; 3] = ["accept", "content-type", "authorization"];

pub(super) fn arguments(
    resolver: &mut Resolver<'_>,
    version: OpenApiVersion,
    op: &Operation,
) -> Arguments {
    let mut converter = Converter::new(resolver, version, Direction::Input);
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut args = Vec::new();
    let mut renames = Vec::new();
    let mut used = HashSet::new();
    let mut params: Vec<_> = op.params.iter().collect();
    params.sort_by_key(|p| p.location);
    for p in params {
        if p.location == Location::Header
            && RESERVED_HEADERS.contains(&p.name.to_ascii_lowercase().as_str())
        {
            continue;
        }
        let mut schema = converter.convert(&p.schema, &p.base);
        if let (Some(d), Value::Object(map)) = (&p.description, &mut schema) {
            map.insert("description".into(), d.clone().into());
        }
        if p.deprecated
            && let Value::Object(map) = &mut schema
        {
            map.insert("deprecated".into(), true.into());
        }
        let name = unique(&p.name, p.location.as_str(), &mut used, &mut renames);
        if p.required {
            required.push(Value::from(name.clone()));
        }
        properties.insert(name.clone(), schema);
        args.push(Arg {
            name,
            source: Source::Param {
                location: p.location,
                name: p.name.clone(),
                style: p.style.clone(),
                explode: p.explode,
                allow_reserved: p.allow_reserved,
            },
        });
    }
    let mut media_type = None;
    if let BodyChoice::Chosen(body) = &op.body {
        media_type = Some(body.media_type.clone());
        let schema = converter.convert(&body.schema, &body.base);
        match flattenable(&schema) {
            Some(fields) => {
                let body_required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for (field, sub) in fields {
                    let name = unique(field, "body", &mut used, &mut renames);
                    if body.required && body_required.contains(&field.as_str()) {
                        required.push(Value::from(name.clone()));
                    }
                    properties.insert(name.clone(), sub.clone());
                    args.push(Arg {
                        name,
                        source: Source::BodyProperty(field.clone()),
                    });
                }
            }
            None => {
                let name = unique("body", "request", &mut used, &mut renames);
                let mut schema = schema;
                if let (Some(d), Value::Object(map)) = (&body.description, &mut schema) {
                    map.entry("description").or_insert_with(|| d.clone().into());
                }
                if body.required {
                    required.push(Value::from(name.clone()));
                }
                properties.insert(name.clone(), schema);
                args.push(Arg {
                    name,
                    source: Source::Body,
                });
            }
        }
    }
    let mut root = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        root["required"] = Value::Array(required);
    }
    let (schema, schema_notes) = converter.finish(root);
    Arguments {
        schema,
        args,
        media_type,
        renames,
        schema_notes,
    }
}

/// The properties of an object body that can be arguments of their own; `None`
/// for a body that is not a plain object schema.
fn flattenable(schema: &Value) -> Option<&Map<String, Value>> {
    let object = schema.as_object()?;
    let composed = [
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "patternProperties",
    ]
    .iter()
    .any(|k| object.contains_key(*k));
    let open_map =
        matches!(object.get("additionalProperties"), Some(Value::Object(m)) if !m.is_empty());
    let is_object = match object.get("type") {
        Some(Value::String(t)) => t == "object",
        None => true,
        _ => false,
    };
    let properties = object.get("properties")?.as_object()?;
    (!composed && !open_map && is_object && !properties.is_empty()).then_some(properties)
}

/// `name` spelled for a placeholder and made unique: a taken name gets its
/// `location` as a prefix, then a number.
fn unique(
    name: &str,
    location: &str,
    used: &mut HashSet<String>,
    renames: &mut Vec<String>,
) -> String {
    let spelled = spell(name);
    if spelled != name {
        renames.push(format!(
            "{location} parameter `{name}` is the argument `{spelled}`"
        ));
    }
    if used.insert(spelled.clone()) {
        return spelled;
    }
    let prefixed = format!("{location}_{spelled}");
    let chosen = std::iter::once(prefixed.clone())
        .chain((2..).map(|k| format!("{prefixed}_{k}")))
        .find(|c| !used.contains(c))
        .unwrap_or(prefixed);
    renames.push(format!(
        "the {location} field `{name}` has the name of another argument: it is the argument `{chosen}`"
    ));
    used.insert(chosen.clone());
    chosen
}

/// A name with every character a placeholder cannot hold written `_`.
fn spell(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_') && !name.contains("__")) {
            out.push(c);
        }
    }
    let out = out.trim_matches('_').to_owned();
    if out.is_empty() {
        "arg".to_owned()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_placeholder_cannot_spell_are_respelled() {
        assert_eq!(spell("user.name"), "user_name");
        assert_eq!(spell("filter[tag]"), "filter_tag");
        assert_eq!(spell("X-Request-Id"), "X-Request-Id");
        assert_eq!(spell("$"), "arg");
    }

    #[test]
    fn a_taken_name_gets_its_location() {
        let mut used = HashSet::new();
        let mut notes = Vec::new();
        assert_eq!(unique("id", "path", &mut used, &mut notes), "id");
        assert_eq!(unique("id", "body", &mut used, &mut notes), "body_id");
        assert_eq!(unique("id", "body", &mut used, &mut notes), "body_id_2");
        assert_eq!(notes.len(), 2);
    }
}
