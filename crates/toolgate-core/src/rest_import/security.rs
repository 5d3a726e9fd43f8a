//! Security schemes as header, query and cookie templates that read the credential
//! from the environment (`${env.NAME}`), so no secret is written into the spec file.
//!
//! An operation uses the first security requirement it lists (or the document's);
//! every scheme of that requirement is applied. API keys go where the scheme says;
//! `http` bearer becomes `Authorization: Bearer ...`; `http` basic becomes the
//! binding's `basic_auth`, reading the user and the password from two variables
//! (`SHOP_BASIC_USER`, `SHOP_BASIC_PASSWORD`), encoded at call time; OAuth2 and OpenID Connect
//! become a bearer token the operator obtains, with a note. The variable is named
//! after the API and the scheme: `SHOP_API_KEY`.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::spec::BasicAuth;

/// Where one scheme puts its credential.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Auth {
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub cookies: Vec<(String, String)>,
    /// HTTP basic authentication's user and password.
    pub basic: Option<BasicAuth>,
}

/// The schemes of one import, turned into templates once each.
pub(super) struct Security {
    schemes: Map<String, Value>,
    prefix: String,
    /// The document's requirement alternatives.
    default: Vec<Map<String, Value>>,
    /// One note per scheme used, by scheme name.
    pub used: IndexMap<String, String>,
}

impl Security {
    pub(crate) fn new(
        schemes: Map<String, Value>,
        default: Vec<Map<String, Value>>,
        title: &str,
    ) -> Self {
        Security {
            schemes,
            prefix: env_words(title),
            default,
            used: IndexMap::new(),
        }
    }

    /// What an operation with these requirement alternatives sends.
    pub(crate) fn auth(&mut self, requirements: Option<&[Map<String, Value>]>) -> Auth {
        let alternatives = requirements.unwrap_or(&self.default).to_vec();
        let mut auth = Auth::default();
        let Some(chosen) = alternatives.first() else {
            return auth;
        };
        for name in chosen.keys() {
            let Some(scheme) = self.schemes.get(name).cloned() else {
                self.used.entry(name.clone()).or_insert_with(|| {
                    format!("security scheme `{name}` is not declared: calls are sent without it")
                });
                continue;
            };
            self.apply(name, &scheme, &mut auth);
        }
        auth
    }

    fn apply(&mut self, name: &str, scheme: &Value, auth: &mut Auth) {
        let var = format!("{}{}", self.prefix, env_words(name));
        let var = var.trim_matches('_').to_owned();
        let reference = format!("${{env.{var}}}");
        let kind = scheme
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let note = match kind {
            "apiKey" => {
                let key = scheme
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_owned();
                let place = scheme.get("in").and_then(Value::as_str).unwrap_or("header");
                match place {
                    "query" => auth.query.push((key.clone(), reference)),
                    "cookie" => auth.cookies.push((key.clone(), reference)),
                    _ => auth.headers.push((key.clone(), reference)),
                }
                format!("API key `{name}` sent in {place} `{key}` from `${{env.{var}}}`")
            }
            "http" => match scheme
                .get("scheme")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                Some("basic") => {
                    auth.basic = Some(BasicAuth {
                        user: format!("${{env.{var}_USER}}"),
                        password: format!("${{env.{var}_PASSWORD}}"),
                    });
                    format!(
                        "HTTP basic `{name}` sent from the user in `${{env.{var}_USER}}` and the password in `${{env.{var}_PASSWORD}}`"
                    )
                }
                Some("bearer") | None => {
                    auth.headers
                        .push(("Authorization".into(), format!("Bearer {reference}")));
                    format!("bearer token `{name}` sent from `${{env.{var}}}`")
                }
                Some(other) => format!(
                    "HTTP `{other}` authentication `{name}` is not supported: calls are sent without it"
                ),
            },
            "oauth2" | "openIdConnect" => {
                auth.headers
                    .push(("Authorization".into(), format!("Bearer {reference}")));
                format!(
                    "{kind} `{name}` sent as a bearer token from `${{env.{var}}}`: obtain the token with the flow the API documents and set it there"
                )
            }
            other => format!(
                "security scheme `{name}` of type `{other}` is not supported: calls are sent without it"
            ),
        };
        self.used.entry(name.to_owned()).or_insert(note);
    }
}

/// `Swagger Petstore` as `SWAGGER_PETSTORE_`, `bearerAuth` as `BEARER_AUTH_`.
fn env_words(text: &str) -> String {
    let mut out = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && last_lower {
                out.push('_');
            }
            out.push(c.to_ascii_uppercase());
            last_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.ends_with('_') && !out.is_empty() {
                out.push('_');
            }
            last_lower = false;
        }
    }
    let mut out = out.trim_end_matches('_').to_owned();
    if !out.is_empty() {
        out.push('_');
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemes_become_templates_reading_the_environment() {
        let schemes = json!({
            "key": {"type": "apiKey", "in": "query", "name": "api_key"},
            "bearerAuth": {"type": "http", "scheme": "bearer"},
            "basicAuth": {"type": "http", "scheme": "basic"},
            "oauth": {"type": "oauth2", "flows": {}},
        });
        let mut security = Security::new(
            schemes.as_object().unwrap().clone(),
            vec![],
            "Swagger Petstore",
        );
        let req = |v: Value| vec![v.as_object().unwrap().clone()];
        let auth = security.auth(Some(&req(json!({"key": [], "bearerAuth": []}))));
        assert_eq!(
            auth.query,
            [(
                "api_key".to_owned(),
                "${env.SWAGGER_PETSTORE_KEY}".to_owned()
            )]
        );
        assert_eq!(
            auth.headers,
            [(
                "Authorization".to_owned(),
                "Bearer ${env.SWAGGER_PETSTORE_BEARER_AUTH}".to_owned()
            )]
        );
        let auth = security.auth(Some(&req(json!({"oauth": ["read"]}))));
        assert_eq!(auth.headers[0].1, "Bearer ${env.SWAGGER_PETSTORE_OAUTH}");
        assert!(security.used["oauth"].contains("obtain the token"));
        let auth = security.auth(Some(&req(json!({"basicAuth": []}))));
        assert_eq!(
            auth.basic,
            Some(BasicAuth {
                user: "${env.SWAGGER_PETSTORE_BASIC_AUTH_USER}".into(),
                password: "${env.SWAGGER_PETSTORE_BASIC_AUTH_PASSWORD}".into(),
            })
        );
        assert!(auth.headers.is_empty());
        assert_eq!(security.auth(Some(&[])), Auth::default());
        assert_eq!(security.auth(None), Auth::default());
    }
}
