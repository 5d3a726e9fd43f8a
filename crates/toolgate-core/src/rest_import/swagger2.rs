//! Swagger 2.0's shapes read into the OpenAPI 3 model: a parameter's type written
//! on the parameter, `collectionFormat`, the `body` parameter and `formData`
//! parameters with `consumes`, response schemas with `produces`, and the server from
//! `schemes`, `host` and `basePath`.

use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::refs::Resolver;
use super::request::{Body, BodyChoice, Location, Param, ReadParam, body_rank, is_json};

/// Keywords of a 2.0 parameter that belong to its schema.
const SCHEMA_KEYS: [&str; 17] = [
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
    "x-nullable",
];

/// A non-body 2.0 parameter.
pub(super) fn param(
    name: &str,
    location: Location,
    p: &Map<String, Value>,
    base: &Rc<str>,
) -> Param {
    let (style, explode) = match p.get("collectionFormat").and_then(Value::as_str) {
        Some("multi") => (Some("form"), Some(true)),
        Some("ssv") => (Some("spaceDelimited"), Some(false)),
        Some("pipes") => (Some("pipeDelimited"), Some(false)),
        // `csv` is the default; `tsv` has no OpenAPI 3 style, and is sent as csv.
        _ if location == Location::Query => (Some("form"), Some(false)),
        _ => (None, None),
    };
    Param {
        name: name.to_owned(),
        location,
        required: location == Location::Path || p.get("required") == Some(&Value::Bool(true)),
        description: p
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        deprecated: false,
        schema: schema_of(p),
        base: base.clone(),
        style: style.map(str::to_owned),
        explode,
        allow_reserved: false,
    }
}

fn schema_of(p: &Map<String, Value>) -> Value {
    let mut schema = Map::new();
    for key in SCHEMA_KEYS {
        if let Some(v) = p.get(key) {
            schema.insert(key.to_owned(), v.clone());
        }
    }
    Value::Object(schema)
}

/// The media types an operation consumes (its own, else the document's).
fn media_types(root: &Value, op: &Map<String, Value>, key: &str) -> Vec<String> {
    op.get(key)
        .or_else(|| root.get(key))
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The body of a 2.0 operation, from its `body` parameter or its `formData`
/// parameters, and the other parameters.
pub(super) fn body(
    root: &Value,
    op: &Map<String, Value>,
    params: Vec<ReadParam>,
    base: &Rc<str>,
) -> (BodyChoice, Vec<Param>) {
    let consumes = media_types(root, op, "consumes");
    let mut kept = Vec::new();
    let mut body = None;
    let mut form = Map::new();
    let mut form_required = Vec::new();
    let mut has_file = false;
    for (param, raw) in params {
        if let Some(param) = param {
            kept.push(param);
            continue;
        }
        let Some(raw) = raw.as_ref().and_then(Value::as_object) else {
            continue;
        };
        let name = raw.get("name").and_then(Value::as_str).unwrap_or_default();
        if raw.get("in").and_then(Value::as_str) == Some("body") {
            body = Some(Body {
                media_type: String::new(),
                schema: raw.get("schema").cloned().unwrap_or_else(|| json!({})),
                base: base.clone(),
                required: raw.get("required") == Some(&Value::Bool(true)),
                description: raw
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        } else {
            let mut schema = schema_of(raw);
            has_file |= schema.get("type") == Some(&json!("file"));
            if let Some(d) = raw.get("description") {
                schema["description"] = d.clone();
            }
            if raw.get("required") == Some(&Value::Bool(true)) {
                form_required.push(Value::from(name));
            }
            form.insert(name.to_owned(), schema);
        }
    }
    let choice = if let Some(mut body) = body {
        let media = if consumes.is_empty() {
            Some("application/json".to_owned())
        } else {
            consumes
                .iter()
                .filter(|m| body_rank(m).is_some_and(|r| r != 2 && r != 3))
                .min_by_key(|m| body_rank(m))
                .cloned()
        };
        match media {
            Some(media) => {
                body.media_type = media;
                BodyChoice::Chosen(body)
            }
            None => BodyChoice::Unsupported(consumes),
        }
    } else if !form.is_empty() {
        let multipart = has_file
            || consumes
                .iter()
                .any(|m| m.starts_with("multipart/form-data"));
        let media = if multipart {
            "multipart/form-data"
        } else {
            "application/x-www-form-urlencoded"
        };
        let mut schema = json!({"type": "object", "properties": form});
        if !form_required.is_empty() {
            schema["required"] = Value::Array(form_required.clone());
        }
        BodyChoice::Chosen(Body {
            media_type: media.to_owned(),
            schema,
            base: base.clone(),
            required: !form_required.is_empty(),
            description: None,
        })
    } else {
        BodyChoice::None
    };
    (choice, kept)
}

/// The first 2xx response's schema (when the operation produces JSON) and the media
/// types it produces.
pub(super) fn returns(
    resolver: &mut Resolver<'_>,
    root: &Value,
    op: &Map<String, Value>,
    base: &Rc<str>,
    problems: &mut Vec<String>,
) -> (Option<(Value, Rc<str>)>, Vec<String>) {
    let produces = media_types(root, op, "produces");
    let json = produces.is_empty() || produces.iter().any(|m| is_json(m));
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return (None, produces);
    };
    let mut statuses: Vec<(&String, &Value)> = responses
        .iter()
        .filter(|(code, _)| code.starts_with('2'))
        .collect();
    statuses.sort_by_key(|(code, _)| code.to_owned());
    for (code, response) in statuses {
        match resolver.follow(base, response) {
            Ok((base, response)) => {
                if json && let Some(schema) = response.get("schema") {
                    return (Some((schema.clone(), base)), produces);
                }
            }
            Err(why) => problems.push(format!("response {code}: {why}")),
        }
    }
    (None, produces)
}

/// The server a 2.0 document names: `schemes[0]://host/basePath`, or `None`
/// without a host.
pub(super) fn server(root: &Value) -> Option<String> {
    let host = root.get("host").and_then(Value::as_str)?;
    let scheme = root
        .get("schemes")
        .and_then(Value::as_array)
        .and_then(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .find(|s| *s == "https")
                .or_else(|| s.iter().filter_map(Value::as_str).next())
        })
        .unwrap_or("https");
    let base_path = root.get("basePath").and_then(Value::as_str).unwrap_or("");
    Some(format!(
        "{scheme}://{host}{}",
        base_path.trim_end_matches('/')
    ))
}

/// The security schemes of a 2.0 document, written as OpenAPI 3's.
pub(super) fn security_schemes(root: &Value) -> Map<String, Value> {
    let Some(defs) = root.get("securityDefinitions").and_then(Value::as_object) else {
        return Map::new();
    };
    defs.iter()
        .map(|(name, def)| {
            let upgraded = match def.get("type").and_then(Value::as_str) {
                Some("basic") => json!({"type": "http", "scheme": "basic"}),
                _ => def.clone(),
            };
            (name.clone(), upgraded)
        })
        .collect()
}
