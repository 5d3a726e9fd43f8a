//! Parameters the model never sees: a tool's `inject:` fills arguments at call
//! time from the caller's identity, the environment, or the MCP host.
//!
//! ```yaml
//! tools:
//!   - name: list_orders
//!     parameters: {type: object, properties: {tenant_id: {type: string}, status: {type: string}}}
//!     inject: {tenant_id: "{claims.tenant}"}
//! ```
//!
//! A template is `{principal}` (the caller's id), `{claims.NAME}` (a claim of
//! its credential: a token's claims, an API key's `key_id` and `key_label`),
//! `${env.NAME}` (the gateway's environment; the value is masked in the audit
//! log) or `{host}` (the value the MCP host sends in `secureArguments`, as
//! SEP-3221 drafts it). A template that is exactly one placeholder keeps the
//! claim's JSON value; otherwise placeholders are spliced in as text.
//!
//! An injected parameter is cut out of the schema every description is made
//! from, so no render, stub, `tools/list` entry, search index or digest shows
//! it; a call that supplies it is refused as an unknown argument, so a model
//! cannot choose, or be talked into choosing, another tenant.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::Principal;

/// One placeholder of an injection template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source<'t> {
    Principal,
    Claim(&'t str),
    Env(&'t str),
    Host,
}

/// A template as text and placeholders, in order.
fn parse(template: &str) -> Result<Vec<Result<&str, Source<'_>>>, String> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let dollar = open > 0 && rest.as_bytes()[open - 1] == b'$';
        let text_end = if dollar { open - 1 } else { open };
        if text_end > 0 {
            parts.push(Ok(&rest[..text_end]));
        }
        let Some(close) = rest[open..].find('}') else {
            return Err(format!("`{template}` opens a `{{` it never closes"));
        };
        let inner = &rest[open + 1..open + close];
        let source = match (dollar, inner) {
            (true, inner) => match inner.strip_prefix("env.") {
                Some(name) if !name.is_empty() => Source::Env(name),
                _ => return Err(format!("`${{{inner}}}` is not `${{env.NAME}}`")),
            },
            (false, "principal") => Source::Principal,
            (false, "host") => Source::Host,
            (false, inner) => match inner.strip_prefix("claims.") {
                Some(name) if !name.is_empty() => Source::Claim(name),
                _ => {
                    return Err(format!(
                        "`{{{inner}}}` is not a source: write `{{principal}}`, `{{claims.NAME}}`, `${{env.NAME}}` or `{{host}}`"
                    ));
                }
            },
        };
        parts.push(Err(source));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Ok(rest));
    }
    if parts.iter().all(Result::is_ok) {
        return Err(format!(
            "`{template}` fills nothing from the caller: use `{{principal}}`, `{{claims.NAME}}`, `${{env.NAME}}` or `{{host}}`"
        ));
    }
    Ok(parts)
}

/// Whether `template` is one `inject:` accepts; the error says what is wrong.
pub fn check_template(template: &str) -> Result<(), String> {
    let parts = parse(template)?;
    if parts.contains(&Err(Source::Host)) && parts.len() > 1 {
        return Err(format!(
            "`{template}` mixes `{{host}}` with other text: the host's value is taken whole"
        ));
    }
    Ok(())
}

/// Whether the template takes the host's secure argument (`{host}`).
pub fn from_host(template: &str) -> bool {
    template.trim() == "{host}"
}

/// Where injected values come from at call time.
pub struct InjectSources<'a> {
    /// The caller.
    pub principal: &'a Principal,
    /// The MCP host's `secureArguments`.
    pub secure: &'a Map<String, Value>,
    /// Reads the gateway's environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// What filling left behind: the parameters whose values came from the
/// environment, to mask in the audit log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Filled {
    /// Parameters filled from `${env.NAME}`.
    pub secret: Vec<String>,
}

/// Fills every injected parameter of `arguments`. The error says which value
/// the caller lacks.
pub fn fill(
    inject: &IndexMap<String, String>,
    arguments: &mut Map<String, Value>,
    sources: &InjectSources<'_>,
) -> Result<Filled, String> {
    let mut filled = Filled::default();
    for (param, template) in inject {
        let parts = parse(template).map_err(|e| format!("`inject.{param}`: {e}"))?;
        let mut secret = false;
        let mut values = Vec::with_capacity(parts.len());
        for part in &parts {
            let value = match part {
                Ok(text) => Value::String((*text).to_owned()),
                Err(Source::Principal) => Value::String(sources.principal.id.clone()),
                Err(Source::Claim(name)) => sources.principal.claims.get(*name).cloned().ok_or_else(|| {
                    format!("`{param}` is filled from the claim `{name}`, which the caller's credential does not carry")
                })?,
                Err(Source::Env(name)) => {
                    secret = true;
                    Value::String((sources.env)(name).ok_or_else(|| {
                        format!("`{param}` is filled from the environment variable `{name}`, which the gateway does not have")
                    })?)
                }
                Err(Source::Host) => sources.secure.get(param).cloned().ok_or_else(|| {
                    format!("`{param}` is a secure argument the host must send (`secureArguments`), and it did not")
                })?,
            };
            values.push(value);
        }
        let value = match values.as_slice() {
            [one] => one.clone(),
            many => Value::String(
                many.iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect(),
            ),
        };
        if secret {
            filled.secret.push(param.clone());
        }
        arguments.insert(param.clone(), value);
    }
    Ok(filled)
}

/// `schema` without the properties `names` (and without them in `required`):
/// what the model is shown of a tool with injected parameters.
pub fn without_params<'n>(schema: &Value, names: impl IntoIterator<Item = &'n String>) -> Value {
    let mut schema = schema.clone();
    for name in names {
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            props.shift_remove(name.as_str());
        }
        if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|r| r.as_str() != Some(name.as_str()));
        }
    }
    if schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
        && let Some(object) = schema.as_object_mut()
    {
        object.shift_remove("required");
    }
    schema
}

/// The SEP-3221 `secureInputSchema` of a tool: the properties of `schema`
/// that the host fills (`{host}`), all required; `None` when there are none.
pub fn secure_input_schema(schema: &Value, inject: &IndexMap<String, String>) -> Option<Value> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut secure = Map::new();
    for param in inject.iter().filter(|(_, t)| from_host(t)).map(|(p, _)| p) {
        let property = props
            .and_then(|p| p.get(param))
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        secure.insert(param.clone(), property);
    }
    if secure.is_empty() {
        return None;
    }
    let required: Vec<Value> = secure.keys().cloned().map(Value::String).collect();
    Some(serde_json::json!({"type": "object", "properties": secure, "required": required}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn principal() -> Principal {
        let mut p = Principal::operator();
        p.id = "support_bot".into();
        let claims = json!({"tenant": "acme", "region": 7});
        p.claims = claims.as_object().cloned().unwrap_or_default().into();
        p
    }

    fn inject(pairs: &[(&str, &str)]) -> IndexMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn each_source_fills_its_parameter() {
        let env = |name: &str| (name == "BILLING_KEY").then(|| "sk-123".to_owned());
        let secure = Map::from_iter([("instance".to_owned(), json!("db-04"))]);
        let sources = InjectSources {
            principal: &principal(),
            secure: &secure,
            env: &env,
        };
        let mut args = Map::from_iter([("status".to_owned(), json!("open"))]);
        let filled = fill(
            &inject(&[
                ("tenant_id", "{claims.tenant}"),
                ("region", "{claims.region}"),
                ("actor", "agent:{principal}"),
                ("key", "${env.BILLING_KEY}"),
                ("instance", "{host}"),
            ]),
            &mut args,
            &sources,
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"status": "open", "tenant_id": "acme", "region": 7, "actor": "agent:support_bot", "key": "sk-123", "instance": "db-04"})
        );
        assert_eq!(filled.secret, ["key"]);
    }

    #[test]
    fn a_caller_without_the_value_is_told_which_one() {
        let env = |_: &str| None;
        let sources = InjectSources {
            principal: &principal(),
            secure: &Map::new(),
            env: &env,
        };
        let missing = |template: &str| {
            fill(&inject(&[("p", template)]), &mut Map::new(), &sources).unwrap_err()
        };
        assert_eq!(
            missing("{claims.org}"),
            "`p` is filled from the claim `org`, which the caller's credential does not carry"
        );
        assert!(missing("${env.NOPE}").contains("environment variable `NOPE`"));
        assert!(missing("{host}").contains("secureArguments"));
    }

    #[test]
    fn templates_are_checked() {
        assert!(check_template("{claims.tenant}").is_ok());
        assert!(check_template("tenant-{claims.tenant}-${env.SUFFIX}").is_ok());
        assert!(
            check_template("acme")
                .unwrap_err()
                .contains("fills nothing")
        );
        assert!(
            check_template("{args.x}")
                .unwrap_err()
                .contains("not a source")
        );
        assert!(
            check_template("{claims.tenant")
                .unwrap_err()
                .contains("never closes")
        );
        assert!(
            check_template("x{host}")
                .unwrap_err()
                .contains("taken whole")
        );
    }

    proptest::proptest! {
        #[test]
        fn any_template_is_checked_and_filled_without_panicking(template in "[a-z{}$.]{0,24}|\\PC{0,24}") {
            let checked = check_template(&template);
            let env = |_: &str| Some("v".to_owned());
            let sources = InjectSources { principal: &principal(), secure: &Map::new(), env: &env };
            let filled = fill(&inject(&[("p", template.as_str())]), &mut Map::new(), &sources);
            // A template `check` refuses never fills; one it accepts fills or names what is missing.
            if checked.is_err() {
                proptest::prop_assert!(filled.is_err());
            }
        }
    }

    #[test]
    fn injected_parameters_leave_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {"tenant_id": {"type": "string"}, "status": {"type": "string"}},
            "required": ["tenant_id"]
        });
        let shown = without_params(&schema, &["tenant_id".to_owned()]);
        assert_eq!(
            shown,
            json!({"type": "object", "properties": {"status": {"type": "string"}}})
        );
        let secure = secure_input_schema(&schema, &inject(&[("tenant_id", "{host}")])).unwrap();
        assert_eq!(
            secure,
            json!({"type": "object", "properties": {"tenant_id": {"type": "string"}}, "required": ["tenant_id"]})
        );
        assert_eq!(
            secure_input_schema(&schema, &inject(&[("tenant_id", "{claims.t}")])),
            None
        );
    }
}
