//! An operation's `http:` binding: the server and path template, each parameter
//! where the document puts it (path and query values in their `style` and
//! `explode`, query values with `allowReserved`), the body as its media type, and
//! the credentials of its security requirement.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::arguments::{Arguments, Source};
use super::operations::Operation;
use super::request::{Location, is_json};
use super::security::Auth;
use crate::spec::{
    HttpBinding, HttpMethod, PathStyle, QueryStyle, QueryValue, StyledPath, StyledQuery,
};

/// The binding, and notes on what it sends in part only.
pub(super) fn binding(
    op: &Operation,
    args: &Arguments,
    server: &str,
    auth: Auth,
) -> (HttpBinding, Vec<String>) {
    let mut notes = Vec::new();
    let mut path = op.path.clone();
    let mut path_styles = IndexMap::new();
    let mut query = IndexMap::new();
    let mut headers = IndexMap::new();
    let mut explode_headers = Vec::new();
    let mut cookies = IndexMap::new();
    let mut body_fields = Map::new();
    let mut whole_body = None;
    for arg in &args.args {
        let placeholder = format!("{{args.{}}}", arg.name);
        match &arg.source {
            Source::Param {
                location,
                name,
                style,
                explode,
                allow_reserved,
            } => match location {
                Location::Path => {
                    if let Some(styled) =
                        path_style(style.as_deref(), *explode, name, &arg.name, &mut notes)
                    {
                        path_styles.insert(arg.name.clone(), styled);
                    }
                    path = path.replace(&format!("{{{name}}}"), &placeholder);
                }
                Location::Query => {
                    let mut value =
                        query_value(placeholder, style.as_deref(), *explode, name, &mut notes);
                    if *allow_reserved {
                        value = allowing_reserved(value);
                    }
                    query.insert(name.clone(), value);
                }
                Location::Header => {
                    // Headers take only `simple`, unexploded unless it says so.
                    if explode == &Some(true) {
                        explode_headers.push(name.clone());
                    }
                    headers.insert(name.clone(), placeholder);
                }
                Location::Cookie => {
                    cookies.insert(name.clone(), placeholder);
                }
            },
            Source::BodyProperty(field) => {
                body_fields.insert(field.clone(), placeholder.into());
            }
            Source::Body => whole_body = Some(Value::String(placeholder)),
        }
    }
    for (name, value) in auth.headers {
        headers.insert(name, value);
    }
    for (name, value) in auth.query {
        query.insert(name, QueryValue::Template(value));
    }
    for (name, value) in auth.cookies {
        cookies.insert(name, value);
    }
    let method = match op.method {
        "put" => HttpMethod::Put,
        "post" => HttpMethod::Post,
        "delete" => HttpMethod::Delete,
        "patch" => HttpMethod::Patch,
        "head" => HttpMethod::Head,
        "options" => HttpMethod::Options,
        _ => HttpMethod::Get,
    };
    let body = match (whole_body, body_fields.is_empty()) {
        (Some(body), _) => Some(body),
        (None, false) => Some(Value::Object(body_fields)),
        (None, true) => None,
    };
    let writes = matches!(
        method,
        HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch
    );
    let media = args.media_type.as_deref();
    let content_type = media
        .filter(|m| *m != "application/json")
        .map(str::to_owned);
    // A body schema with no properties still sends a body (`{}`) when one is declared.
    let body = match (body, media) {
        (None, Some(m)) if is_json(m) => Some(Value::Object(Map::new())),
        (body, _) => body,
    };
    let no_body = writes && body.is_none();
    if !op.produces.is_empty() && !op.produces.iter().any(|m| is_json(m)) {
        headers
            .entry("Accept".into())
            .or_insert_with(|| op.produces.join(", "));
    }
    let binding = HttpBinding {
        method,
        url: format!("{server}{path}"),
        headers,
        explode_headers,
        query,
        path: path_styles,
        cookies,
        basic_auth: auth.basic,
        body,
        content_type: content_type.filter(|_| !no_body),
        no_body,
        max_response_bytes: None,
        max_redirects: None,
        idempotency_header: None,
    };
    (binding, notes)
}

/// How a path parameter is written, when it is not plain `simple`: `label` and
/// `matrix` (named as the document names it, when the argument is spelled
/// otherwise), and `simple` exploded.
fn path_style(
    style: Option<&str>,
    explode: Option<bool>,
    name: &str,
    arg: &str,
    notes: &mut Vec<String>,
) -> Option<StyledPath> {
    let style = match style.unwrap_or("simple") {
        "simple" => PathStyle::Simple,
        "label" => PathStyle::Label,
        "matrix" => PathStyle::Matrix,
        other => {
            notes.push(format!(
                "path parameter `{name}` is in `{other}` style, which toolgate sends as `simple`"
            ));
            PathStyle::Simple
        }
    };
    let explode = explode.unwrap_or(false);
    if style == PathStyle::Simple && !explode {
        return None;
    }
    Some(StyledPath {
        style,
        explode,
        name: (style == PathStyle::Matrix && name != arg).then(|| name.to_owned()),
    })
}

/// A query value with `allow_reserved` set.
fn allowing_reserved(value: QueryValue) -> QueryValue {
    let mut styled = match value {
        QueryValue::Template(value) => StyledQuery {
            value,
            style: QueryStyle::Form,
            explode: true,
            allow_reserved: false,
        },
        QueryValue::Styled(s) => s,
    };
    styled.allow_reserved = true;
    QueryValue::Styled(styled)
}

fn query_value(
    placeholder: String,
    style: Option<&str>,
    explode: Option<bool>,
    name: &str,
    notes: &mut Vec<String>,
) -> QueryValue {
    let style = match style.unwrap_or("form") {
        "form" => QueryStyle::Form,
        "spaceDelimited" => QueryStyle::SpaceDelimited,
        "pipeDelimited" => QueryStyle::PipeDelimited,
        "deepObject" => QueryStyle::DeepObject,
        other => {
            notes.push(format!(
                "query parameter `{name}` is in `{other}` style, which toolgate sends as `form`"
            ));
            QueryStyle::Form
        }
    };
    // OpenAPI: `explode` defaults to true for `form` only.
    let explode = explode.unwrap_or(style == QueryStyle::Form);
    if style == QueryStyle::Form && explode {
        QueryValue::Template(placeholder)
    } else {
        QueryValue::Styled(StyledQuery {
            value: placeholder,
            style,
            explode,
            allow_reserved: false,
        })
    }
}
