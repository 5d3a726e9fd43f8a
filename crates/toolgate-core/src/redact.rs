//! Secrets out of audit records: tool arguments and HTTP headers with the values of
//! secret fields replaced by `"[redacted]"`.
//!
//! A value is secret when the tool's input schema says so, or when its key is named
//! like a secret.
//!
//! - **Schema marks**: `writeOnly: true`, `x-secret: true`, or OpenAPI's
//!   `format: "password"`, found by following `properties`, `additionalProperties`,
//!   `items`, `prefixItems`, `allOf`/`anyOf`/`oneOf` (a mark in any branch counts) and
//!   local `$ref`s (`#`, `#/$defs/…`, `#/definitions/…`), with a bound on reference
//!   chains so recursive schemas terminate. `patternProperties` are not followed.
//! - **Key names**, at any depth, with or without a schema: a key is split into words
//!   at `-`, `_`, `.`, spaces and camelCase humps and compared word by word,
//!   ignoring case and trailing digits — so `max_tokens` and `token_count` are kept
//!   while `accessToken`, `X-Api-Key` and `client_secret` are redacted. See
//!   [`is_secret_key`] for the list.
//!
//! Redaction errs towards hiding: a non-secret that looks like one (`page_size` is
//! kept, but `csrf_token` and `password_min_length` are not) costs a little audit
//! detail; a leaked secret costs much more.

use serde_json::{Map, Value};

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// How many `$ref`/`allOf`/`anyOf`/`oneOf` hops are followed from one schema node.
const MAX_REF_HOPS: usize = 32;
/// How many schema nodes one lookup may visit, so a schema that fans out cannot blow up.
const MAX_SCHEMA_NODES: usize = 256;

/// A word that names a secret when it is the key's last word (`user_password`,
/// `Cookie`, `x-auth`).
const SECRET_LAST_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "passcode",
    "secret",
    "secrets",
    "credential",
    "credentials",
    "creds",
    "token",
    "cookie",
    "cookies",
    "authorization",
    "auth",
    "oauth",
    "apikey",
    "bearer",
    "jwt",
    "otp",
    "totp",
    "cvv",
    "cvc",
    "dsn",
    "privkey",
    "session",
];

/// A word that names a secret wherever it stands (`password_confirmation`).
const SECRET_ANYWHERE_WORDS: &[&str] = &["password", "passwd", "passphrase"];

/// Last words written as one (`accesstoken`, `githubapikey`) that end in a secret.
const SECRET_SUFFIXES: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "apikey",
    "accesstoken",
    "refreshtoken",
    "authtoken",
    "idtoken",
    "bearertoken",
    "sessiontoken",
    "csrftoken",
    "xsrftoken",
    "privatekey",
    "secretkey",
    "sessionid",
    "setcookie",
    "connectionstring",
];

/// `token` after one of these words is a count or a cursor, not a credential.
const NON_SECRET_TOKEN_QUALIFIERS: &[&str] = &[
    "page",
    "next",
    "prev",
    "previous",
    "continuation",
    "cancellation",
    "sync",
    "pagination",
    "cursor",
    "max",
    "min",
    "num",
    "count",
    "total",
];

/// `key` after one of these words is a credential (`api_key`, `private_key`); `key`
/// alone or after others (`sort_key`, `primary_key`) is not.
const SECRET_KEY_QUALIFIERS: &[&str] = &[
    "api",
    "private",
    "secret",
    "access",
    "signing",
    "encryption",
    "client",
    "master",
    "subscription",
    "auth",
    "ssh",
    "session",
    "license",
    "webhook",
    "app",
    "consumer",
    "account",
];

/// Whether a key (a JSON property or header name) names a secret.
///
/// Last words that do: password, passwd, pwd, passphrase, passcode, secret(s),
/// credential(s), creds, token, cookie(s), authorization, auth, oauth, apikey, bearer,
/// jwt, otp, totp, cvv, cvc, dsn, privkey, session; `key` after api, private, secret,
/// access, signing, encryption, client, master, subscription, auth, ssh, session,
/// license, webhook, app, consumer or account; `session id`; `connection string`;
/// `password`, `passwd` or `passphrase` anywhere. `token` after page, next, max, count
/// and the like is not a secret.
///
/// ```
/// use toolgate_core::is_secret_key;
/// assert!(is_secret_key("refresh_token"));
/// assert!(is_secret_key("X-Api-Key"));
/// assert!(is_secret_key("newPassword2"));
/// assert!(!is_secret_key("max_tokens"));
/// assert!(!is_secret_key("token_count"));
/// assert!(!is_secret_key("sort_key"));
/// ```
pub fn is_secret_key(key: &str) -> bool {
    let words = words(key);
    let Some(last) = words.last().map(String::as_str) else {
        return false;
    };
    let prev = words.len().checked_sub(2).map(|i| words[i].as_str());
    if words
        .iter()
        .any(|w| SECRET_ANYWHERE_WORDS.contains(&w.as_str()))
    {
        return true;
    }
    match (prev, last) {
        (Some(p), "token") => !NON_SECRET_TOKEN_QUALIFIERS.contains(&p),
        (Some(p), "key") => SECRET_KEY_QUALIFIERS.contains(&p),
        (Some("session"), "id") | (Some("connection"), "string") => true,
        _ => SECRET_LAST_WORDS.contains(&last) || SECRET_SUFFIXES.iter().any(|s| last.ends_with(s)),
    }
}

/// Splits a key into lowercase words at non-alphanumerics and camelCase humps
/// (`XApiKey` → `x`, `api`, `key`), dropping trailing digits (`token2` → `token`).
fn words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in key.split(|c: char| !c.is_alphanumeric()) {
        // Keys are nearly always ASCII: split them by byte, lowercased in place.
        if part.is_ascii() {
            ascii_words(part, &mut words);
        } else {
            char_words(part, &mut words);
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

/// [`words`] of one part, by `char`: humps where a lowercase letter meets an
/// uppercase one, or an acronym ends (`APIKey` → `api`, `key`).
fn char_words(part: &str, words: &mut Vec<String>) {
    let chars: Vec<char> = part.chars().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let (a, b) = (chars[i - 1], chars[i]);
        let hump = a.is_lowercase() && b.is_uppercase();
        let acronym_end = a.is_uppercase()
            && b.is_uppercase()
            && chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        if hump || acronym_end {
            words.push(normalized(&chars[start..i].iter().collect::<String>()));
            start = i;
        }
    }
    if start < chars.len() {
        words.push(normalized(&chars[start..].iter().collect::<String>()));
    }
}

/// [`char_words`] of an ASCII part: the same humps, found by byte.
fn ascii_words(part: &str, words: &mut Vec<String>) {
    let bytes = part.as_bytes();
    let mut start = 0;
    for i in 1..bytes.len() {
        let (a, b) = (bytes[i - 1], bytes[i]);
        let hump = a.is_ascii_lowercase() && b.is_ascii_uppercase();
        let acronym_end = a.is_ascii_uppercase()
            && b.is_ascii_uppercase()
            && bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        if hump || acronym_end {
            words.push(ascii_normalized(&part[start..i]));
            start = i;
        }
    }
    if start < bytes.len() {
        words.push(ascii_normalized(&part[start..]));
    }
}

/// A word lowercased, without trailing digits (`Token2` → `token`).
fn normalized(word: &str) -> String {
    word.to_lowercase()
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_owned()
}

/// [`normalized`] for an ASCII word: one allocation.
fn ascii_normalized(word: &str) -> String {
    let mut out = word
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_owned();
    out.make_ascii_lowercase();
    out
}

/// A copy of `arguments` with every secret value replaced by `"[redacted]"`: values the
/// input `schema` marks secret, and values under keys named like secrets (see the
/// module docs). The rest is unchanged, key order included.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::redact_arguments;
/// let schema = json!({"properties": {"pin": {"type": "string", "writeOnly": true}}});
/// let args = json!({"user": "ada", "pin": "1234", "auth": {"api_key": "k", "max_tokens": 5}});
/// assert_eq!(
///     redact_arguments(&args, &schema),
///     json!({"user": "ada", "pin": "[redacted]", "auth": "[redacted]"}),
/// );
/// ```
pub fn redact_arguments(arguments: &Value, schema: &Value) -> Value {
    let mut schemas = Vec::new();
    collect(schema, schema, &mut schemas);
    redact_value(arguments, schema, &schemas)
}

fn redact_value(value: &Value, root: &Value, schemas: &[&Value]) -> Value {
    if schemas.iter().any(|s| marks_secret(s)) {
        return Value::String(REDACTED.to_owned());
    }
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, child) in map {
                let redacted = if is_secret_key(key) {
                    Value::String(REDACTED.to_owned())
                } else {
                    let mut sub = Vec::new();
                    for schema in schemas {
                        if let Some(s) = property_schema(schema, key) {
                            collect(s, root, &mut sub);
                        }
                    }
                    redact_value(child, root, &sub)
                };
                out.insert(key.clone(), redacted);
            }
            Value::Object(out)
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let mut sub = Vec::new();
                for schema in schemas {
                    if let Some(s) = item_schema(schema, i) {
                        collect(s, root, &mut sub);
                    }
                }
                redact_value(item, root, &sub)
            })
            .collect(),
        other => other.clone(),
    }
}

/// Whether anything in `schema` marks a value secret (`writeOnly`,
/// `x-secret`, `format: password`). When nothing does, [`redact_arguments`]
/// with it redacts exactly what it does with no schema (by key names alone),
/// so a caller that knows this once per schema may pass `Value::Null` and
/// spare every call the walk.
pub fn schema_marks_secrets(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => marks_secret(schema) || map.values().any(schema_marks_secrets),
        Value::Array(items) => items.iter().any(schema_marks_secrets),
        _ => false,
    }
}

fn marks_secret(schema: &Value) -> bool {
    schema.get("writeOnly") == Some(&Value::Bool(true))
        || schema.get("x-secret") == Some(&Value::Bool(true))
        || schema.get("format").and_then(Value::as_str) == Some("password")
}

fn property_schema<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|s| s.is_object()))
}

fn item_schema(schema: &Value, index: usize) -> Option<&Value> {
    if let Some(prefix) = schema.get("prefixItems").and_then(Value::as_array) {
        if let Some(s) = prefix.get(index) {
            return Some(s);
        }
        return schema.get("items").filter(|s| s.is_object());
    }
    match schema.get("items") {
        Some(Value::Array(tuple)) => tuple
            .get(index)
            .or_else(|| schema.get("additionalItems").filter(|s| s.is_object())),
        Some(items @ Value::Object(_)) => Some(items),
        _ => None,
    }
}

/// Gathers `schema` and everything it stands for through `$ref` and the `…Of`
/// combinators into `out`, within the hop and node bounds.
fn collect<'a>(schema: &'a Value, root: &'a Value, out: &mut Vec<&'a Value>) {
    let mut budget = MAX_SCHEMA_NODES;
    collect_bounded(schema, root, 0, &mut budget, out);
}

fn collect_bounded<'a>(
    schema: &'a Value,
    root: &'a Value,
    hops: usize,
    budget: &mut usize,
    out: &mut Vec<&'a Value>,
) {
    if hops > MAX_REF_HOPS || *budget == 0 || !schema.is_object() {
        return;
    }
    *budget -= 1;
    out.push(schema);
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        collect_bounded(target, root, hops + 1, budget, out);
    }
    for combinator in ["allOf", "anyOf", "oneOf"] {
        for branch in schema
            .get(combinator)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_bounded(branch, root, hops + 1, budget, out);
        }
    }
}

/// Resolves a local reference: `#` or a JSON pointer after `#`.
fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(pointer)
    }
}

/// Whether an HTTP header carries a credential: `Authorization`,
/// `Proxy-Authorization`, `Cookie`, `Set-Cookie`, any name ending in `-key`, `-token`
/// or `-secret` (`X-Api-Key`, `X-Amz-Security-Token`), and any name
/// [`is_secret_key`] accepts.
pub fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["key", "token", "secret"].iter().any(|suffix| {
        lower
            .strip_suffix(suffix)
            .is_some_and(|head| head.ends_with(['-', '_']))
    }) || is_secret_key(name)
}

/// Header name/value pairs with secret values redacted, in their original order
/// (repeated headers stay repeated). `Authorization` keeps its scheme:
/// `Bearer [redacted]`. Values that are not UTF-8 are read lossily.
///
/// Takes any iterator of pairs: a `BTreeMap<String, String>`, a `Vec<(&str, &str)>`,
/// or an `http::HeaderMap`'s `iter()`.
///
/// ```
/// use toolgate_core::redact_headers;
/// let headers = [("Accept", "text/html"), ("Authorization", "Bearer sk-123"), ("X-Goog-Api-Key", "g")];
/// let values: Vec<String> = redact_headers(headers).into_iter().map(|(_, v)| v).collect();
/// assert_eq!(values, ["text/html", "Bearer [redacted]", "[redacted]"]);
/// ```
pub fn redact_headers<I, K, V>(headers: I) -> Vec<(String, String)>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<[u8]>,
{
    headers
        .into_iter()
        .map(|(name, value)| {
            let name = name.as_ref();
            let value = String::from_utf8_lossy(value.as_ref());
            let value = if !is_secret_header(name) {
                value.into_owned()
            } else if name.eq_ignore_ascii_case("authorization")
                || name.eq_ignore_ascii_case("proxy-authorization")
            {
                match value.trim_start().split_once(' ') {
                    Some((scheme, _)) if scheme.chars().all(|c| c.is_ascii_alphanumeric()) => {
                        format!("{scheme} {REDACTED}")
                    }
                    _ => REDACTED.to_owned(),
                }
            } else {
                REDACTED.to_owned()
            };
            (name.to_owned(), value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn a_schema_that_marks_nothing_secret_redacts_as_no_schema_does() {
        let plain = json!({"type": "object", "properties": {"order_id": {"type": "string"}, "api_key": {"type": "string"}}});
        let marked = json!({"$defs": {"pin": {"type": "string", "writeOnly": true}}, "properties": {"pin": {"$ref": "#/$defs/pin"}}});
        assert!(!schema_marks_secrets(&plain));
        assert!(schema_marks_secrets(&marked));
        let args = json!({"order_id": "A-1", "api_key": "k", "pin": "1234"});
        assert_eq!(
            redact_arguments(&args, &plain),
            redact_arguments(&args, &Value::Null)
        );
        assert_ne!(
            redact_arguments(&args, &marked),
            redact_arguments(&args, &Value::Null)
        );
    }

    proptest::proptest! {
        /// The byte path splits an ASCII key exactly as the `char` path does.
        #[test]
        fn ascii_keys_split_by_byte_as_by_char(part in "[A-Za-z0-9]{0,24}") {
            let (mut by_byte, mut by_char) = (Vec::new(), Vec::new());
            ascii_words(&part, &mut by_byte);
            char_words(&part, &mut by_char);
            proptest::prop_assert_eq!(by_byte, by_char);
        }
    }

    fn no_schema(args: &Value) -> Value {
        redact_arguments(args, &json!({}))
    }

    #[test]
    fn passwords_and_tokens_are_redacted_at_any_depth() {
        let args = json!({
            "user": "ada",
            "password": "hunter2",
            "nested": {"list": [{"access_token": "t1"}, {"refresh_token": "t2", "id": 7}]},
        });
        assert_eq!(
            no_schema(&args),
            json!({
                "user": "ada",
                "password": REDACTED,
                "nested": {"list": [{"access_token": REDACTED}, {"refresh_token": REDACTED, "id": 7}]},
            })
        );
    }

    #[test]
    fn key_matching_ignores_case_dashes_underscores_and_camel_case() {
        for key in [
            "PASSWORD",
            "Passwd",
            "api_key",
            "api-key",
            "apiKey",
            "APIKey",
            "ApiKey",
            "apikey",
            "X-API-KEY",
            "accessToken",
            "accesstoken",
            "Authorization",
            "proxy_authorization",
            "auth",
            "Cookie",
            "set-cookie",
            "privateKey",
            "private_key",
            "client_secret",
            "clientSecret",
            "session",
            "sessionId",
            "SESSIONID",
            "github_token",
            "githubApiKey",
            "old_password",
            "password_confirmation",
            "newPassword2",
            "db.connection_string",
            "aws_secret_access_key",
        ] {
            assert!(is_secret_key(key), "{key} should be secret");
        }
    }

    #[test]
    fn token_counts_and_max_tokens_are_not_secrets() {
        for key in [
            "max_tokens",
            "maxTokens",
            "max_completion_tokens",
            "token_count",
            "tokenCount",
            "tokens",
            "token_type",
            "next_page_token",
            "page_token",
            "pageToken",
        ] {
            assert!(!is_secret_key(key), "{key} should not be secret");
        }
        let args = json!({"max_tokens": 100, "token_count": 5, "query": "q"});
        assert_eq!(no_schema(&args), args);
    }

    #[test]
    fn keys_that_only_contain_a_secret_word_are_kept() {
        for key in [
            "keyboard",
            "key",
            "sort_key",
            "primaryKey",
            "author",
            "authority",
            "auth_type",
            "authMethod",
            "passenger",
            "tokenizer",
            "secretary",
            "secret_name",
            "cookie_name",
            "session_timeout",
            "monkey",
            "",
            "---",
        ] {
            assert!(!is_secret_key(key), "{key} should not be secret");
        }
    }

    #[test]
    fn write_only_x_secret_and_password_format_properties_are_redacted() {
        let schema = json!({
            "type": "object",
            "properties": {
                "pin": {"type": "string", "writeOnly": true},
                "seed": {"type": "integer", "x-secret": true},
                "pass": {"type": "string", "format": "password"},
                "open": {"type": "string", "writeOnly": false},
                "name": {"type": "string"},
            },
        });
        let args = json!({"pin": "1", "seed": 2, "pass": "p", "open": "o", "name": "n"});
        assert_eq!(
            redact_arguments(&args, &schema),
            json!({"pin": REDACTED, "seed": REDACTED, "pass": REDACTED, "open": "o", "name": "n"})
        );
    }

    #[test]
    fn a_secret_object_is_redacted_whole() {
        let schema = json!({"properties": {"creds_blob": {"type": "object", "x-secret": true}}});
        let args = json!({"creds_blob": {"user": "u", "pw": "p"}, "auth": {"user": "u"}});
        assert_eq!(
            redact_arguments(&args, &schema),
            json!({"creds_blob": REDACTED, "auth": REDACTED})
        );
    }

    #[test]
    fn refs_into_defs_and_definitions_are_followed() {
        let schema = json!({
            "properties": {
                "login": {"$ref": "#/$defs/Login"},
                "legacy": {"$ref": "#/definitions/Legacy"},
            },
            "$defs": {
                "Login": {"properties": {"user": {"type": "string"}, "code": {"$ref": "#/$defs/Secret"}}},
                "Secret": {"type": "string", "writeOnly": true},
            },
            "definitions": {"Legacy": {"properties": {"mfa": {"x-secret": true}}}},
        });
        let args = json!({"login": {"user": "ada", "code": "123"}, "legacy": {"mfa": "9", "x": 1}});
        assert_eq!(
            redact_arguments(&args, &schema),
            json!({"login": {"user": "ada", "code": REDACTED}, "legacy": {"mfa": REDACTED, "x": 1}})
        );
    }

    #[test]
    fn array_items_and_tuple_items_are_followed() {
        let schema = json!({
            "properties": {
                "list": {"items": {"properties": {"v": {"x-secret": true}}}},
                "pair": {"prefixItems": [{"type": "string"}, {"writeOnly": true}]},
                "old": {"items": [{"x-secret": true}], "additionalItems": {"type": "integer"}},
            },
        });
        let args =
            json!({"list": [{"v": 1, "w": 2}, {"v": 3}], "pair": ["a", "b", "c"], "old": ["s", 1]});
        assert_eq!(
            redact_arguments(&args, &schema),
            json!({"list": [{"v": REDACTED, "w": 2}, {"v": REDACTED}], "pair": ["a", REDACTED, "c"], "old": [REDACTED, 1]})
        );
    }

    #[test]
    fn additional_properties_marked_secret_cover_every_extra_key() {
        let schema = json!({
            "properties": {"env": {"properties": {"HOME": {"type": "string"}}, "additionalProperties": {"x-secret": true}}},
        });
        let args = json!({"env": {"HOME": "/root", "DB_URL": "postgres://u:p@h"}});
        assert_eq!(
            redact_arguments(&args, &schema),
            json!({"env": {"HOME": "/root", "DB_URL": REDACTED}})
        );
    }

    #[test]
    fn a_mark_in_any_combinator_branch_counts() {
        let schema = json!({
            "allOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"x-secret": true}}}],
            "anyOf": [{"properties": {"c": {"oneOf": [{"type": "string"}, {"writeOnly": true}]}}}],
        });
        let args = json!({"a": 1, "b": 2, "c": 3});
        assert_eq!(
            redact_arguments(&args, &schema),
            json!({"a": 1, "b": REDACTED, "c": REDACTED})
        );
    }

    #[test]
    fn recursive_and_broken_refs_terminate() {
        let schema = json!({
            "$ref": "#/$defs/Node",
            "$defs": {
                "Node": {"properties": {"key_material": {"x-secret": true}, "children": {"items": {"$ref": "#"}}}, "allOf": [{"$ref": "#/$defs/Node"}, {"$ref": "#/$defs/Node"}]},
                "Loop": {"$ref": "#/$defs/Loop"},
            },
            "properties": {"x": {"$ref": "#/$defs/Missing"}, "y": {"$ref": "#/$defs/Loop"}, "z": {"$ref": "https://example.com/s.json"}},
        });
        let args = json!({"key_material": "k", "children": [{"key_material": "k2", "children": []}], "x": 1, "y": 2, "z": 3});
        assert_eq!(
            redact_arguments(&args, &schema),
            json!({"key_material": REDACTED, "children": [{"key_material": REDACTED, "children": []}], "x": 1, "y": 2, "z": 3})
        );
    }

    #[test]
    fn a_boolean_or_odd_schema_only_uses_key_names() {
        let args = json!({"token": "t", "n": [1, {"secret": "s"}]});
        let want = json!({"token": REDACTED, "n": [1, {"secret": REDACTED}]});
        for schema in [
            json!(true),
            json!(false),
            json!(null),
            json!({"properties": 5}),
        ] {
            assert_eq!(redact_arguments(&args, &schema), want);
        }
    }

    #[test]
    fn scalars_and_key_order_are_kept() {
        let args = json!({"z": 1, "a": "x", "m": [true, null, 1.5]});
        let out = no_schema(&args);
        assert_eq!(out, args);
        let keys: Vec<_> = out.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }

    #[test]
    fn authorization_headers_keep_their_scheme_only() {
        let out = redact_headers([
            ("Authorization", "Bearer sk-abc"),
            ("proxy-authorization", "Basic dTpw"),
            ("Authorization", "sk-no-scheme"),
            ("Cookie", "sid=1; theme=dark"),
            ("Set-Cookie", "sid=1; Path=/"),
        ]);
        let values: Vec<_> = out.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(
            values,
            [
                "Bearer [redacted]",
                "Basic [redacted]",
                REDACTED,
                REDACTED,
                REDACTED
            ]
        );
    }

    #[test]
    fn headers_ending_in_key_token_or_secret_are_redacted() {
        for name in [
            "X-Api-Key",
            "x-goog-api-key",
            "Ocp-Apim-Subscription-Key",
            "X-Amz-Security-Token",
            "X-Auth-Token",
            "X-CSRF-Token",
            "X-Webhook-Secret",
            "api_key",
            "X-Session-Id",
        ] {
            assert!(is_secret_header(name), "{name} should be secret");
        }
        for name in [
            "Accept",
            "Content-Type",
            "User-Agent",
            "X-Request-Id",
            "Keep-Alive",
            "Authority",
        ] {
            assert!(!is_secret_header(name), "{name} should not be secret");
        }
    }

    #[test]
    fn ordinary_headers_pass_through_in_order_from_any_map() {
        let map: BTreeMap<String, String> = [("b", "2"), ("a", "1"), ("x-api-key", "k")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(
            redact_headers(&map),
            [
                ("a".to_owned(), "1".to_owned()),
                ("b".to_owned(), "2".to_owned()),
                ("x-api-key".to_owned(), REDACTED.to_owned()),
            ]
        );
        let bytes: Vec<(&str, &[u8])> = vec![("X-Bin", &b"\xffok"[..])];
        assert_eq!(redact_headers(bytes)[0].1, "\u{fffd}ok");
    }

    /// Keys that are secrets in every spelling the matcher promises to handle.
    const SECRET_KEYS: &[&str] = &[
        "password",
        "Password",
        "PASSWD",
        "secret",
        "token",
        "access_token",
        "refreshToken",
        "api_key",
        "Api-Key",
        "apikey",
        "authorization",
        "Auth",
        "cookie",
        "Set-Cookie",
        "private_key",
        "clientSecret",
        "session",
        "session_id",
        "X-Auth-Token",
    ];

    /// Keys that must never be redacted.
    const PLAIN_KEYS: &[&str] = &[
        "name",
        "query",
        "max_tokens",
        "token_count",
        "keyboard",
        "author",
        "passenger",
        "tokenizer",
        "secretary",
        "sort_key",
        "id",
        "items",
        "Content-Type",
        "limit",
    ];

    #[derive(Debug, Clone)]
    enum Tree {
        Leaf(Value),
        Object(Vec<(bool, String, Tree)>),
        Array(Vec<Tree>),
    }

    fn tree(secrets: bool) -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "\\PC{0,10}".prop_map(Value::from),
        ]
        .prop_map(Tree::Leaf);
        let key = move || {
            let plain = proptest::sample::select(PLAIN_KEYS).prop_map(|k| (false, k.to_owned()));
            if secrets {
                let secret =
                    proptest::sample::select(SECRET_KEYS).prop_map(|k| (true, k.to_owned()));
                prop_oneof![secret, plain].boxed()
            } else {
                plain.boxed()
            }
        };
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec((key(), inner.clone()), 0..6).prop_map(|entries| {
                    // Later duplicates win in a JSON object; keep the first spelling only.
                    let mut seen = std::collections::HashSet::new();
                    Tree::Object(
                        entries
                            .into_iter()
                            .filter(|((_, k), _)| seen.insert(k.clone()))
                            .map(|((s, k), v)| (s, k, v))
                            .collect(),
                    )
                }),
                proptest::collection::vec(inner, 0..4).prop_map(Tree::Array),
            ]
        })
    }

    fn to_json(tree: &Tree) -> Value {
        match tree {
            Tree::Leaf(v) => v.clone(),
            Tree::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(_, k, v)| (k.clone(), to_json(v)))
                    .collect(),
            ),
            Tree::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        }
    }

    fn check(tree: &Tree, out: &Value) -> Result<(), TestCaseError> {
        match (tree, out) {
            (Tree::Leaf(v), out) => {
                prop_assert_eq!(v, out);
            }
            (Tree::Object(entries), Value::Object(map)) => {
                prop_assert_eq!(entries.len(), map.len());
                for (secret, key, child) in entries {
                    let got = &map[key];
                    if *secret {
                        prop_assert_eq!(got, &json!(REDACTED), "{} survived", key);
                    } else {
                        check(child, got)?;
                    }
                }
            }
            (Tree::Array(items), Value::Array(got)) => {
                prop_assert_eq!(items.len(), got.len());
                for (item, got) in items.iter().zip(got) {
                    check(item, got)?;
                }
            }
            (tree, out) => {
                prop_assert!(false, "shape changed: {:?} became {}", tree, out);
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn no_value_under_a_secret_key_survives(t in tree(true)) {
            let out = no_schema(&to_json(&t));
            check(&t, &out)?;
        }

        #[test]
        fn data_without_secrets_is_unchanged(t in tree(false)) {
            let args = to_json(&t);
            prop_assert_eq!(no_schema(&args), args);
        }

        #[test]
        fn schema_marked_properties_are_redacted_and_the_rest_kept(
            props in proptest::collection::btree_map("[a-z]{1,8}", (0u8..4, any::<i64>()), 0..8),
        ) {
            let props: BTreeMap<_, _> = props.into_iter().filter(|(k, _)| !is_secret_key(k)).collect();
            let mut properties = Map::new();
            let mut args = Map::new();
            for (key, (mark, value)) in &props {
                let schema = match mark {
                    0 => json!({"type": "integer"}),
                    1 => json!({"type": "integer", "writeOnly": true}),
                    2 => json!({"type": "integer", "x-secret": true}),
                    _ => json!({"$ref": "#/$defs/Secret"}),
                };
                properties.insert(key.clone(), schema);
                args.insert(key.clone(), json!(value));
            }
            let schema = json!({"properties": properties, "$defs": {"Secret": {"writeOnly": true}}});
            let out = redact_arguments(&Value::Object(args), &schema);
            for (key, (mark, value)) in &props {
                let want = if *mark == 0 { json!(value) } else { json!(REDACTED) };
                prop_assert_eq!(&out[key], &want);
            }
        }
    }
}
