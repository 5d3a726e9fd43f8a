//! A binding filled in for one call: URL, headers, body, and the secrets they hold.
//!
//! `${env.NAME}` is read only where the spec file wrote it (a header value, the URL's
//! path and query, a `query:` value, a string of the body), never from text an
//! argument supplies, so an argument cannot pull the environment into a request.
//! Every value read is a secret. So are values under secret keys of the body
//! (`password`, `api_key`, ...), as values of secret headers are: they are masked
//! wherever the request or its response shows, and a body holding any of them is
//! never sent to another origin on a redirect.

use serde_json::{Map, Value};
use toolgate_core::spec::{HttpBinding, HttpMethod, env_references, template};
use toolgate_core::{ToolError, is_secret_header, is_secret_key};
use url::Url;

use super::basic_auth::basic_authorization;
use super::body::encode_body;
use super::fill::{EnvLookup, UrlProblem, build_url, fill_env, fill_env_simple, lookup};
use super::secrets::Secrets;

/// A request ready to send.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub method: HttpMethod,
    pub url: Url,
    /// Name, value, and whether the value is secret (dropped on a cross-origin redirect).
    pub headers: Vec<(String, String, bool)>,
    /// The body, encoded.
    pub body: Option<Vec<u8>>,
    /// The body's `Content-Type` (JSON unless the binding says otherwise).
    pub content_type: Option<String>,
    /// Whether the body carries credentials (a value from the environment, or one
    /// under a secret key): it is not sent again to another origin.
    pub body_has_secrets: bool,
    pub secrets: Secrets,
}

/// Fills `binding` for one call.
pub(super) fn prepare(
    binding: &HttpBinding,
    args: &Value,
    state: &Map<String, Value>,
    env: &EnvLookup,
) -> Result<Prepared, ToolError> {
    let mut secrets = Secrets::default();
    let mut from_env = Vec::new();
    let url = build_url(
        &binding.url,
        &binding.path,
        &binding.query,
        args,
        state,
        env,
        &mut from_env,
    )
    .map_err(|p| match p {
        UrlProblem::Input(m) => ToolError::invalid_input(m),
        UrlProblem::Spec(m) => ToolError::permanent(format!("{m} (in the spec file)")),
        UrlProblem::Env(m) => ToolError::permanent(m),
    })?;
    for value in &from_env {
        secrets.add(value);
    }
    if let Some(password) = url.password() {
        secrets.add(password);
    }
    for (key, value) in url.query_pairs() {
        if is_secret_key(&key) {
            secrets.add(&value);
        }
    }
    let mut headers = Vec::with_capacity(binding.headers.len());
    for (name, template) in &binding.headers {
        let explode = binding
            .explode_headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name));
        let Some((value, from_env)) = header_value(name, template, explode, args, state, env)?
        else {
            continue;
        };
        let secret = from_env || is_secret_header(name);
        if secret {
            secrets.add_header_value(&value);
        }
        headers.push((name.clone(), value, secret));
    }
    if let Some(basic) = &binding.basic_auth {
        let value = basic_authorization(basic, env, &mut secrets)?;
        headers.retain(|(name, _, _)| !name.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".to_owned(), value, true));
    }
    if let Some(cookie) = cookie_header(binding, args, state, env, &mut secrets)? {
        secrets.add_header_value(&cookie);
        headers.push(("Cookie".to_owned(), cookie, true));
    }
    let mut body_has_secrets = false;
    let body = match (&binding.body, binding.method) {
        _ if binding.no_body => None,
        (Some(body), _) => {
            let mut read = Vec::new();
            let body = render_body(body, args, state, env, &mut read)?;
            body_has_secrets |= !read.is_empty();
            for value in &read {
                secrets.add(value);
            }
            Some(body)
        }
        (None, HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch) => Some(args.clone()),
        (None, _) => None,
    };
    if let Some(body) = &body {
        body_has_secrets |= secret_values(body, false, &mut secrets);
    }
    let (body, content_type) = match body {
        Some(body) => {
            let (bytes, content_type) = encode_body(&body, binding.content_type.as_deref())?;
            (Some(bytes), Some(content_type))
        }
        None => (None, None),
    };
    Ok(Prepared {
        method: binding.method,
        url,
        headers,
        body,
        content_type,
        body_has_secrets,
        secrets,
    })
}

/// The `Cookie` header the binding's `cookies:` make, `None` when there are none.
/// Every cookie value is a secret, as the whole header is.
fn cookie_header(
    binding: &HttpBinding,
    args: &Value,
    state: &Map<String, Value>,
    env: &EnvLookup,
    secrets: &mut Secrets,
) -> Result<Option<String>, ToolError> {
    let mut pairs = Vec::new();
    for (name, template) in &binding.cookies {
        let Some((value, _)) =
            header_value(&format!("Cookie {name}"), template, false, args, state, env)?
        else {
            continue;
        };
        secrets.add(&value);
        pairs.push(format!(
            "{name}={}",
            super::encode::encode_component(&value)
        ));
    }
    Ok((!pairs.is_empty()).then(|| pairs.join("; ")))
}

/// Whether `template` is one `{args.NAME}` placeholder for an argument the call
/// leaves out (a `null` passed is not left out).
fn absent_argument(template: &Value, args: &Value) -> bool {
    let Value::String(s) = template else {
        return false;
    };
    match template::placeholders(s).as_slice() {
        [only] if only.range == (0..s.len()) && only.scope == template::Scope::Args => only
            .path
            .iter()
            .try_fold(args, |v, key| v.get(key))
            .is_none(),
        _ => false,
    }
}

/// The body template filled: placeholders as [`template::render`] fills them, and
/// `${env.NAME}` in a string read from the environment (values pushed onto `read`).
/// Object keys are not templates.
fn render_body(
    template: &Value,
    args: &Value,
    state: &Map<String, Value>,
    env: &EnvLookup,
    read: &mut Vec<String>,
) -> Result<Value, ToolError> {
    Ok(match template {
        Value::String(s) if !env_references(s).is_empty() => Value::String(
            fill_env(s, args, state, str::to_owned, env, read).map_err(|var| {
                ToolError::permanent(format!(
                    "the request body needs the environment variable `{var}`, which is not set; set it where toolgate runs"
                ))
            })?,
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| render_body(v, args, state, env, read))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !absent_argument(v, args))
                .map(|(k, v)| Ok((k.clone(), render_body(v, args, state, env, read)?)))
                .collect::<Result<_, ToolError>>()?,
        ),
        other => template::render(other, args, state),
    })
}

/// Adds every value under a secret key of `body` (at any depth) to `secrets`, as a
/// header value (`Bearer sk-...` adds `sk-...` too); true when there was one.
fn secret_values(body: &Value, under_secret: bool, secrets: &mut Secrets) -> bool {
    match body {
        Value::Object(map) => map.iter().fold(false, |found, (key, value)| {
            secret_values(value, under_secret || is_secret_key(key), secrets) | found
        }),
        Value::Array(items) => items.iter().fold(false, |found, v| {
            secret_values(v, under_secret, secrets) | found
        }),
        Value::String(s) if under_secret && !s.is_empty() => {
            secrets.add_header_value(s);
            true
        }
        Value::Number(n) if under_secret => {
            secrets.add(&n.to_string());
            true
        }
        _ => false,
    }
}

/// One header's value: placeholders filled as text and `${env.NAME}` resolved.
/// `None` when the whole value is one placeholder that reads `null` (an optional
/// argument left out). The flag says whether an environment variable went in.
fn header_value(
    name: &str,
    template: &str,
    explode: bool,
    args: &Value,
    state: &Map<String, Value>,
    env: &EnvLookup,
) -> Result<Option<(String, bool)>, ToolError> {
    if let [only] = template::placeholders(template).as_slice()
        && only.range == (0..template.len())
        && lookup(only, args, state).is_null()
    {
        return Ok(None);
    }
    // Argument and state placeholders are filled between the `${env.NAME}`
    // references, so a value from the model cannot spell a reference.
    let mut read = Vec::new();
    let out = fill_env_simple(template, args, state, explode, env, &mut read).map_err(|var| {
        ToolError::permanent(format!(
            "header `{name}` needs the environment variable `{var}`, which is not set; set it where toolgate runs"
        ))
    })?;
    let from_env = !env_references(template).is_empty();
    if out
        .chars()
        .any(|c| (c.is_control() && c != '\t') || c == '\u{7f}')
    {
        let placeholders = template::placeholders(template);
        return Err(if placeholders.is_empty() {
            ToolError::permanent(format!(
                "header `{name}` would hold a control character (from the environment); fix the variable's value"
            ))
        } else {
            let names: Vec<String> = placeholders
                .iter()
                .map(|p| format!("`{}`", p.path.join(".")))
                .collect();
            ToolError::invalid_input(format!(
                "{} would put a line break or control character into header `{name}`; pass a value on one line",
                names.join(", ")
            ))
        });
    }
    Ok(Some((out, from_env)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(v: Value) -> HttpBinding {
        serde_json::from_value(v).unwrap()
    }

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "tok-secret-1".to_owned())
    }

    #[test]
    fn env_values_go_only_where_the_spec_file_wrote_them() {
        let b = binding(json!({
            "url": "https://h.example/x",
            "headers": {"Authorization": "Bearer ${env.TOKEN}", "X-Note": "{args.note}"},
        }));
        let p = prepare(&b, &json!({"note": "${env.TOKEN}"}), &Map::new(), &env).unwrap();
        assert_eq!(
            p.headers[0],
            ("Authorization".into(), "Bearer tok-secret-1".into(), true)
        );
        assert_eq!(
            p.headers[1],
            ("X-Note".into(), "${env.TOKEN}".into(), false)
        );
        assert_eq!(p.secrets.mask("Bearer tok-secret-1"), "[redacted]");
        assert_eq!(p.secrets.mask("tok-secret-1"), "[redacted]");
    }

    #[test]
    fn the_body_reads_the_environment_and_its_secrets_are_known() {
        let b = binding(json!({
            "method": "POST",
            "url": "https://h.example/login",
            "body": {
                "user": "{args.user}",
                "auth": {"password": "{args.password}", "token": "Bearer ${env.TOKEN}"},
                "note": "{args.note}",
                "count": "{args.n}",
            },
        }));
        let args =
            json!({"user": "ada", "password": "pw-secret-9", "note": "${env.TOKEN}", "n": 3});
        let p = prepare(&b, &args, &Map::new(), &env).unwrap();
        let sent: Value = serde_json::from_slice(p.body.as_deref().unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({
                "user": "ada",
                "auth": {"password": "pw-secret-9", "token": "Bearer tok-secret-1"},
                "note": "${env.TOKEN}",
                "count": 3,
            })
        );
        assert!(p.body_has_secrets);
        assert_eq!(
            p.secrets.mask("echo pw-secret-9 tok-secret-1 ada"),
            "echo [redacted] [redacted] ada"
        );
        let plain = binding(
            json!({"method": "POST", "url": "https://h.example/x", "body": {"q": "{args.q}"}}),
        );
        assert!(
            !prepare(&plain, &json!({"q": "x"}), &Map::new(), &env)
                .unwrap()
                .body_has_secrets
        );
        let absent = binding(
            json!({"method": "POST", "url": "https://h.example/x", "body": {"k": "${env.ABSENT}"}}),
        );
        let err = prepare(&absent, &json!({}), &Map::new(), &env).unwrap_err();
        assert!(err.to_string().contains("`ABSENT`"), "{err}");
    }

    #[test]
    fn env_values_in_the_url_are_secrets() {
        let b = binding(json!({"url": "https://h.example/x?key=${env.TOKEN}"}));
        let p = prepare(&b, &json!({}), &Map::new(), &env).unwrap();
        assert_eq!(p.url.query(), Some("key=tok-secret-1"));
        assert_eq!(
            p.secrets.mask(p.url.as_str()),
            "https://h.example/x?key=[redacted]"
        );
    }

    #[test]
    fn a_missing_env_variable_is_named_and_its_value_never_guessed() {
        let b =
            binding(json!({"url": "https://h.example/x", "headers": {"X-Key": "${env.ABSENT}"}}));
        let err = prepare(&b, &json!({}), &Map::new(), &env).unwrap_err();
        assert!(err.to_string().contains("`ABSENT`"), "{err}");
        assert!(!err.is_retryable());
    }

    #[test]
    fn bodies_are_written_as_their_media_type_and_absent_arguments_leave_members_out() {
        let prepared =
            |b: Value, args: Value| prepare(&binding(b), &args, &Map::new(), &env).unwrap();
        let body = json!({"name": "{args.name}", "tags": "{args.tags}", "note": "{args.note}"});
        let p = prepared(
            json!({"method": "POST", "url": "https://h.example/x", "body": body}),
            json!({"name": "Rex", "note": null}),
        );
        assert_eq!(
            p.body.as_deref(),
            Some(&br#"{"name":"Rex","note":null}"#[..])
        );
        assert_eq!(p.content_type.as_deref(), Some("application/json"));
        let p = prepared(
            json!({"method": "POST", "url": "https://h.example/x", "body": body, "content_type": "application/x-www-form-urlencoded"}),
            json!({"name": "Rex & co", "tags": ["a", "b"]}),
        );
        assert_eq!(
            p.body.as_deref(),
            Some(&b"name=Rex+%26+co&tags=a&tags=b"[..])
        );
        let p = prepared(
            json!({"method": "POST", "url": "https://h.example/x", "body": body, "content_type": "multipart/form-data"}),
            json!({"name": "Rex"}),
        );
        assert_eq!(
            p.content_type.as_deref(),
            Some("multipart/form-data; boundary=toolgate-boundary-00000000")
        );
        assert_eq!(
            String::from_utf8(p.body.unwrap()).unwrap(),
            "--toolgate-boundary-00000000\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nRex\r\n--toolgate-boundary-00000000--\r\n"
        );
        let p = prepared(
            json!({"method": "PUT", "url": "https://h.example/x", "no_body": true}),
            json!({"a": 1}),
        );
        assert_eq!(p.body, None);
        let p = prepared(
            json!({"url": "https://h.example/x", "cookies": {"session": "${env.TOKEN}", "lang": "{args.lang}", "theme": "{args.theme}"}}),
            json!({"lang": "en gb"}),
        );
        assert_eq!(
            p.headers,
            [(
                "Cookie".to_owned(),
                "session=tok-secret-1; lang=en%20gb".to_owned(),
                true
            )]
        );
        assert_eq!(p.secrets.mask("tok-secret-1"), "[redacted]");
    }

    #[test]
    fn a_line_break_from_an_argument_cannot_add_a_header() {
        let b = binding(json!({"url": "https://h.example/x", "headers": {"X-Trace": "{args.id}"}}));
        let err = prepare(&b, &json!({"id": "1\r\nX-Admin: yes"}), &Map::new(), &env).unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput { .. }), "{err}");
    }

    #[test]
    fn an_optional_header_left_out_is_not_sent_and_writes_send_the_arguments() {
        let b = binding(
            json!({"method": "POST", "url": "https://h.example/x", "headers": {"X-Trace": "{args.trace}"}}),
        );
        let p = prepare(&b, &json!({"a": 1}), &Map::new(), &env).unwrap();
        assert!(p.headers.is_empty());
        assert_eq!(p.body.as_deref(), Some(&br#"{"a":1}"#[..]));
        let get = binding(json!({"url": "https://h.example/x"}));
        assert_eq!(
            prepare(&get, &json!({"a": 1}), &Map::new(), &env)
                .unwrap()
                .body,
            None
        );
    }
}
