//! The operations of a description, read into one model whatever its version.
//!
//! Paths are read in document order, path items through their `$ref`, and each
//! method's operation gets the path item's parameters under its own (an operation's
//! parameter of the same name and location wins). Swagger 2.0's shapes — `body`
//! and `formData` parameters, parameter types written on the parameter,
//! `collectionFormat`, `consumes` and `produces` — are read by [`super::swagger2`]
//! into the same model.

use std::rc::Rc;

use serde_json::{Map, Value};

use super::document::OpenApiVersion;
use super::refs::Resolver;
use super::request::{Body, BodyChoice, Location, Param, ReadParam, body_rank, is_json};
use super::swagger2;

/// Methods an operation may have, in the order OpenAPI lists them.
pub(super) const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// One operation.
#[derive(Debug, Clone)]
pub(super) struct Operation {
    pub method: &'static str,
    pub path: String,
    pub id: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub deprecated: bool,
    pub params: Vec<Param>,
    pub body: BodyChoice,
    /// The 2xx JSON response schema.
    pub returns: Option<(Value, Rc<str>)>,
    /// The media types of the 2xx responses.
    pub produces: Vec<String>,
    /// Security requirement alternatives; `None` means the document's.
    pub security: Option<Vec<Map<String, Value>>>,
    /// Servers the path item or operation names (3.x).
    pub servers: Vec<Value>,
    pub effect_extension: Option<Value>,
    /// Problems met reading it (broken references), as notes.
    pub problems: Vec<String>,
}

impl Operation {
    /// `GET /pets/{id}`, for messages.
    pub(super) fn label(&self) -> String {
        format!("{} {}", self.method.to_ascii_uppercase(), self.path)
    }
}

/// Every operation of the root document, in order, with problems met on the way.
pub(super) fn operations(
    resolver: &mut Resolver<'_>,
    version: OpenApiVersion,
    root: &Value,
) -> (Vec<Operation>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let base = resolver.root();
    let Some(paths) = root.get("paths").and_then(Value::as_object) else {
        return (out, problems);
    };
    for (path, item) in paths {
        if !path.starts_with('/') {
            continue;
        }
        let (item_base, item) = match resolver.follow(&base, item) {
            Ok(found) => found,
            Err(why) => {
                problems.push(format!("path `{path}` left out: {why}"));
                continue;
            }
        };
        let Some(item) = item.as_object() else {
            continue;
        };
        let shared = item.get("parameters").cloned().unwrap_or(Value::Null);
        let item_servers = servers_of(item);
        for method in METHODS {
            let Some(Value::Object(op)) = item.get(method) else {
                continue;
            };
            let mut problems = Vec::new();
            let mut params = read_params(resolver, version, &item_base, &shared, &mut problems);
            let own = read_params(
                resolver,
                version,
                &item_base,
                op.get("parameters").unwrap_or(&Value::Null),
                &mut problems,
            );
            for p in own {
                params.retain(|q| param_key(q) != param_key(&p));
                params.push(p);
            }
            let (body, params) = match version {
                OpenApiVersion::Swagger2 => swagger2::body(root, op, params, &item_base),
                _ => (
                    request_body(resolver, &item_base, op, &mut problems),
                    params.into_iter().filter_map(|(p, _)| p).collect(),
                ),
            };
            let (returns, produces) = match version {
                OpenApiVersion::Swagger2 => {
                    swagger2::returns(resolver, root, op, &item_base, &mut problems)
                }
                _ => returns(resolver, &item_base, op, &mut problems),
            };
            let mut params = params;
            for name in template_names(path) {
                if !params
                    .iter()
                    .any(|p| p.location == Location::Path && p.name == name)
                {
                    problems.push(format!(
                        "the path names `{{{name}}}`, which no parameter declares: taken as a required string"
                    ));
                    params.push(Param {
                        name,
                        location: Location::Path,
                        required: true,
                        description: None,
                        deprecated: false,
                        schema: serde_json::json!({"type": "string"}),
                        base: item_base.clone(),
                        style: None,
                        explode: None,
                        allow_reserved: false,
                    });
                }
            }
            let mut servers = item_servers.clone();
            if let Some(own) = servers_of(op).into_iter().next() {
                servers = vec![own];
            }
            out.push(Operation {
                method,
                path: path.clone(),
                id: op
                    .get("operationId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                summary: text(op.get("summary")),
                description: text(op.get("description")),
                tags: op
                    .get("tags")
                    .and_then(Value::as_array)
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                deprecated: op.get("deprecated") == Some(&Value::Bool(true)),
                params,
                body,
                returns,
                produces,
                security: op
                    .get("security")
                    .and_then(Value::as_array)
                    .map(|alts| alts.iter().filter_map(Value::as_object).cloned().collect()),
                servers,
                effect_extension: op.get("x-toolgate-effect").cloned(),
                problems,
            });
        }
    }
    (out, problems)
}

/// The `{name}`s of a path template.
fn template_names(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + len];
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
        rest = &rest[open + len + 1..];
    }
    out
}

fn servers_of(object: &Map<String, Value>) -> Vec<Value> {
    object
        .get("servers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn text(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A parameter's name and location, which identify it within an operation.
fn param_key(p: &ReadParam) -> (String, String) {
    match p {
        (Some(p), _) => (p.name.clone(), p.location.as_str().to_owned()),
        (None, Some(raw)) => (
            raw.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            raw.get("in")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        (None, None) => Default::default(),
    }
}

fn read_params(
    resolver: &mut Resolver<'_>,
    version: OpenApiVersion,
    base: &Rc<str>,
    list: &Value,
    problems: &mut Vec<String>,
) -> Vec<ReadParam> {
    let Some(list) = list.as_array() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in list {
        let (base, p) = match resolver.follow(base, entry) {
            Ok(found) => found,
            Err(why) => {
                problems.push(format!("a parameter left out: {why}"));
                continue;
            }
        };
        let Some(p) = p.as_object() else { continue };
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            problems.push("a parameter without a `name` left out".into());
            continue;
        };
        let location = p.get("in").and_then(Value::as_str).unwrap_or_default();
        if version == OpenApiVersion::Swagger2 && matches!(location, "body" | "formData") {
            out.push((None, Some(Value::Object(p.clone()))));
            continue;
        }
        let Some(location) = Location::parse(location) else {
            problems.push(format!(
                "parameter `{name}` left out: `in: {location}` is not path, query, header or cookie"
            ));
            continue;
        };
        let param = match version {
            OpenApiVersion::Swagger2 => swagger2::param(name, location, p, &base),
            _ => {
                let schema = p
                    .get("schema")
                    .cloned()
                    .or_else(|| {
                        p.get("content")
                            .and_then(Value::as_object)
                            .and_then(|c| c.values().next())
                            .and_then(|m| m.get("schema"))
                            .cloned()
                    })
                    .unwrap_or_else(|| Value::Object(Map::new()));
                Param {
                    name: name.to_owned(),
                    location,
                    required: location == Location::Path
                        || p.get("required") == Some(&Value::Bool(true)),
                    description: text(p.get("description")),
                    deprecated: p.get("deprecated") == Some(&Value::Bool(true)),
                    schema,
                    base: base.clone(),
                    style: p.get("style").and_then(Value::as_str).map(str::to_owned),
                    explode: p.get("explode").and_then(Value::as_bool),
                    allow_reserved: p.get("allowReserved") == Some(&Value::Bool(true)),
                }
            }
        };
        out.push((Some(param), None));
    }
    out
}

fn request_body(
    resolver: &mut Resolver<'_>,
    base: &Rc<str>,
    op: &Map<String, Value>,
    problems: &mut Vec<String>,
) -> BodyChoice {
    let Some(body) = op.get("requestBody") else {
        return BodyChoice::None;
    };
    let (base, body) = match resolver.follow(base, body) {
        Ok(found) => found,
        Err(why) => {
            problems.push(format!("the request body: {why}"));
            return BodyChoice::None;
        }
    };
    let Some(content) = body.get("content").and_then(Value::as_object) else {
        return BodyChoice::None;
    };
    let chosen = content
        .iter()
        .filter_map(|(media, m)| body_rank(media).map(|rank| (rank, media, m)))
        .min_by_key(|(rank, _, _)| *rank);
    match chosen {
        Some((_, media, m)) => BodyChoice::Chosen(Body {
            media_type: if media == "*/*" || media == "application/*" {
                "application/json".into()
            } else {
                media.clone()
            },
            schema: m
                .get("schema")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
            base,
            required: body.get("required") == Some(&Value::Bool(true)),
            description: text(body.get("description")),
        }),
        None if content.is_empty() => BodyChoice::None,
        None => BodyChoice::Unsupported(content.keys().cloned().collect()),
    }
}

/// The first 2xx response (by status) with a JSON schema, and every 2xx media type.
fn returns(
    resolver: &mut Resolver<'_>,
    base: &Rc<str>,
    op: &Map<String, Value>,
    problems: &mut Vec<String>,
) -> (Option<(Value, Rc<str>)>, Vec<String>) {
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return (None, Vec::new());
    };
    let mut statuses: Vec<(&String, &Value)> = responses
        .iter()
        .filter(|(code, _)| code.starts_with('2'))
        .collect();
    statuses.sort_by_key(|(code, _)| code.to_ascii_uppercase());
    let mut found = None;
    let mut produces = Vec::new();
    for (code, response) in statuses {
        let (base, response) = match resolver.follow(base, response) {
            Ok(r) => r,
            Err(why) => {
                problems.push(format!("response {code}: {why}"));
                continue;
            }
        };
        let Some(content) = response.get("content").and_then(Value::as_object) else {
            continue;
        };
        for (media, m) in content {
            if !produces.contains(media) {
                produces.push(media.clone());
            }
            if found.is_none()
                && is_json(media)
                && let Some(schema) = m.get("schema")
            {
                found = Some((schema.clone(), base.clone()));
            }
        }
    }
    (found, produces)
}
