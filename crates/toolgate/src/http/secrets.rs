//! Secrets of an HTTP binding kept out of logs, errors, audit records and `describe`.
//!
//! At run time, [`Secrets`] holds the values that must not leave the request: every
//! `${env.NAME}` value (in headers, URL or body), the value of every secret header
//! (`Authorization`, `Cookie`, `X-Api-Key`, anything [`is_secret_header`] names), and
//! query and body values under secret keys (`password`, `api_key`, ...). Text and JSON on their way out are masked with it, including the
//! percent-encoded forms. Values shorter than four characters are not masked: they
//! would blank out ordinary text and protect nothing.
//!
//! For display, [`mask_binding`] rewrites a binding as written in the spec file:
//! literal credentials (in secret headers, and under secret keys of the query and the
//! body) become `[redacted]`; `${env.NAME}` references and placeholders stay, since
//! they name where a value comes from rather than holding it.

use serde_json::Value;
use toolgate_core::spec::{HttpBinding, ToolSpec};
use toolgate_core::{REDACTED, is_secret_header, is_secret_key};

use super::encode::encode_component;

/// The shortest value treated as a secret.
const MIN_SECRET_CHARS: usize = 4;

/// Secret values of one request, masked wherever text leaves it.
#[derive(Debug, Clone, Default)]
pub(super) struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// Adds a value (and its percent-encoded form) to mask.
    pub(super) fn add(&mut self, value: &str) {
        let value = value.trim();
        if value.chars().count() < MIN_SECRET_CHARS {
            return;
        }
        for form in [value.to_owned(), encode_component(value)] {
            if !self.values.contains(&form) {
                self.values.push(form);
            }
        }
        // Longest first, so a secret that contains another is masked whole.
        self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }

    /// Adds a header value: the whole value, and the credential after an
    /// authorization scheme (`Bearer sk-...` adds `sk-...` too).
    pub(super) fn add_header_value(&mut self, value: &str) {
        self.add(value);
        if let Some((scheme, credential)) = value.trim().split_once(' ')
            && scheme.chars().all(|c| c.is_ascii_alphanumeric())
        {
            self.add(credential);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub(super) fn mask(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.values {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// Every string (and object key) of `value`, masked.
    pub(super) fn mask_value(&self, value: Value) -> Value {
        if self.values.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.mask(&s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.mask_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.mask(&k), self.mask_value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// A header or query value as written in a spec file, with literal credentials
/// replaced: `Bearer sk-live-1` → `Bearer [redacted]`; `Bearer ${env.TOKEN}` and
/// `{args.key}` are kept.
pub(super) fn mask_template_value(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    let mut first = true;
    while !rest.is_empty() {
        // The next reference: `${env.NAME}`, `{args.x}` or `{state.x}`.
        let next = ["${env.", "{args.", "{state."]
            .iter()
            .filter_map(|open| rest.find(open))
            .min();
        let (literal, reference, after) = match next {
            Some(start) => match rest[start..].find('}') {
                Some(len) => (
                    &rest[..start],
                    &rest[start..start + len + 1],
                    &rest[start + len + 1..],
                ),
                None => (rest, "", ""),
            },
            None => (rest, "", ""),
        };
        out.push_str(&mask_literal(literal, first));
        out.push_str(reference);
        rest = after;
        first = false;
    }
    out
}

/// Literal text of a secret value: a leading scheme word (`Bearer `) is kept, the
/// rest redacted; whitespace is kept so the shape stays readable.
fn mask_literal(literal: &str, at_start: bool) -> String {
    if literal.trim().is_empty() {
        return literal.to_owned();
    }
    if at_start
        && let Some((scheme, after)) = literal.split_once(' ')
        && !scheme.is_empty()
        && scheme.chars().all(|c| c.is_ascii_alphanumeric())
    {
        let tail = if after.trim().is_empty() {
            after.to_owned()
        } else {
            REDACTED.to_owned()
        };
        return format!("{scheme} {tail}");
    }
    REDACTED.to_owned()
}

/// A body template with the literal text of every value under a secret key masked.
fn mask_body(value: &Value, under_secret: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), mask_body(v, under_secret || is_secret_key(k))))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| mask_body(v, under_secret)).collect())
        }
        Value::String(s) if under_secret => Value::String(mask_template_value(s)),
        Value::Number(_) | Value::Bool(_) if under_secret => Value::String(REDACTED.to_owned()),
        other => other.clone(),
    }
}

/// A copy of `binding` safe to show: secret headers, query and body values under
/// secret keys masked, and any password in the URL.
pub fn mask_binding(binding: &HttpBinding) -> HttpBinding {
    let mut masked = binding.clone();
    for (name, value) in masked.headers.iter_mut() {
        if is_secret_header(name) {
            *value = mask_template_value(value);
        }
    }
    for (key, value) in masked.query.iter_mut() {
        if is_secret_key(key) {
            let template = value.template_mut();
            *template = mask_template_value(template);
        }
    }
    for value in masked.cookies.values_mut() {
        *value = mask_template_value(value);
    }
    if let Some(basic) = masked.basic_auth.as_mut() {
        basic.user = mask_template_value(&basic.user);
        basic.password = mask_template_value(&basic.password);
    }
    if let Some(body) = &binding.body {
        masked.body = Some(mask_body(body, false));
    }
    masked.url = mask_url(&binding.url);
    masked
}

/// The tool with its HTTP binding masked (see [`mask_binding`]).
pub fn mask_tool_secrets(tool: &ToolSpec) -> ToolSpec {
    let mut tool = tool.clone();
    if let Some(http) = &tool.http {
        tool.http = Some(mask_binding(http));
    }
    tool
}

/// A URL template with a userinfo password and literal values of secret query keys
/// masked.
pub(super) fn mask_url(url: &str) -> String {
    let (before_query, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut out = match before_query.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{user}:{REDACTED}@{host}"),
                    None => authority.to_owned(),
                },
                None => authority.to_owned(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => before_query.to_owned(),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, value)) if is_secret_key(key) => {
                    format!("{key}={}", mask_template_value(value))
                }
                _ => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// One line for a binding, secrets masked: `GET https://… (headers: …)`.
pub fn binding_summary(binding: &HttpBinding) -> String {
    let masked = mask_binding(binding);
    let mut line = format!("{} {}", masked.method.as_str(), masked.url);
    if !masked.query.is_empty() {
        let query: Vec<String> = masked
            .query
            .iter()
            .map(|(k, v)| format!("{k}={}", v.template()))
            .collect();
        line.push_str(&format!(" (query: {})", query.join(", ")));
    }
    if !masked.headers.is_empty() {
        let headers: Vec<String> = masked
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        line.push_str(&format!(" (headers: {})", headers.join(", ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_masked_in_text_json_and_percent_encoded_forms() {
        let mut secrets = Secrets::default();
        secrets.add_header_value("Bearer sk live/123");
        secrets.add("abc");
        let text = "token sk live/123 and sk%20live%2F123 and abc";
        assert_eq!(
            secrets.mask(text),
            "token [redacted] and [redacted] and abc"
        );
        assert_eq!(
            secrets.mask_value(json!({"echo": ["Bearer sk live/123"], "sk live/123": 1})),
            json!({"echo": ["[redacted]"], "[redacted]": 1})
        );
    }

    #[test]
    fn literal_credentials_are_masked_and_references_kept() {
        for (value, want) in [
            ("Bearer sk-live-123", "Bearer [redacted]"),
            ("Bearer ${env.TOKEN}", "Bearer ${env.TOKEN}"),
            ("${env.API_KEY}", "${env.API_KEY}"),
            ("sk-live-123", "[redacted]"),
            ("{args.key}", "{args.key}"),
            ("Token abc${env.REST}", "Token [redacted]${env.REST}"),
            ("sid=1; ${env.SESSION}", "[redacted]${env.SESSION}"),
        ] {
            assert_eq!(mask_template_value(value), want, "{value}");
        }
    }

    #[test]
    fn literal_secrets_in_a_body_are_masked_and_references_kept() {
        let binding: HttpBinding = serde_json::from_value(json!({
            "method": "POST",
            "url": "https://api.example.com/login",
            "body": {
                "user": "ada",
                "password": "hunter22",
                "credentials": {"pin": 1234, "key": "k-1"},
                "api_key": "${env.KEY}",
                "client_secret": "{args.secret}",
                "items": [{"access_token": "Bearer tok-55"}],
            },
        }))
        .unwrap();
        assert_eq!(
            mask_binding(&binding).body.unwrap(),
            json!({
                "user": "ada",
                "password": "[redacted]",
                "credentials": {"pin": "[redacted]", "key": "[redacted]"},
                "api_key": "${env.KEY}",
                "client_secret": "{args.secret}",
                "items": [{"access_token": "Bearer [redacted]"}],
            })
        );
    }

    #[test]
    fn a_binding_summary_shows_no_literal_secret() {
        let binding: HttpBinding = serde_json::from_value(json!({
            "method": "POST",
            "url": "https://bob:hunter22@api.example.com/v1?api_key=lit-key-9&page=2",
            "headers": {"Authorization": "Bearer sk-live-123", "X-Api-Key": "${env.KEY}", "Accept": "application/json"},
            "query": {"access_token": "tok-456", "q": "{args.q}"},
        }))
        .unwrap();
        let line = binding_summary(&binding);
        for secret in ["hunter22", "lit-key-9", "sk-live-123", "tok-456"] {
            assert!(!line.contains(secret), "{line}");
        }
        assert_eq!(
            line,
            "POST https://bob:[redacted]@api.example.com/v1?api_key=[redacted]&page=2 (query: access_token=[redacted], q={args.q}) (headers: Authorization: Bearer [redacted], X-Api-Key: ${env.KEY}, Accept: application/json)"
        );
    }
}
