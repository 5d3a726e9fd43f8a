//! `basic_auth:` turned into the request's `Authorization: Basic …` header at call
//! time (RFC 7617): the user and the password read from the environment, joined as
//! `user:password`, base64-encoded. Both values, the joined pair and the header
//! are secrets of the request, masked wherever it shows; an error names the
//! variable that is missing and never a value.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use toolgate_core::ToolError;
use toolgate_core::spec::{BasicAuth, env_references};

use super::fill::EnvLookup;
use super::secrets::Secrets;

/// The `Authorization` header's value for `auth`, its secrets added to `secrets`.
pub(super) fn basic_authorization(
    auth: &BasicAuth,
    env: &EnvLookup,
    secrets: &mut Secrets,
) -> Result<String, ToolError> {
    let user = resolve(&auth.user, "user", env)?;
    let password = resolve(&auth.password, "password", env)?;
    secrets.add(&user);
    secrets.add(&password);
    if user.contains(':') {
        return Err(ToolError::permanent(
            "the user of HTTP basic authentication holds `:`, which RFC 7617 does not allow in a user id; fix the value of `basic_auth.user`",
        ));
    }
    if [&user, &password]
        .iter()
        .any(|v| v.chars().any(|c| c.is_control()))
    {
        return Err(ToolError::permanent(
            "the user or password of HTTP basic authentication holds a control character; fix the variable's value",
        ));
    }
    let pair = format!("{user}:{password}");
    secrets.add(&pair);
    let header = format!("Basic {}", STANDARD.encode(pair.as_bytes()));
    secrets.add_header_value(&header);
    Ok(header)
}

/// `template` with each `${env.NAME}` read; the rest is literal text.
fn resolve(template: &str, what: &str, env: &EnvLookup) -> Result<String, ToolError> {
    let mut out = String::with_capacity(template.len());
    let mut at = 0;
    for reference in env_references(template) {
        out.push_str(&template[at..reference.range.start]);
        let value = env(&reference.name).ok_or_else(|| {
            ToolError::permanent(format!(
                "HTTP basic authentication needs the environment variable `{}` for its {what}, which is not set; set it where toolgate runs",
                reference.name
            ))
        })?;
        out.push_str(&value);
        at = reference.range.end;
    }
    out.push_str(&template[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SHOP_USER" => Some("ada".to_owned()),
            "SHOP_PASSWORD" => Some("pw-secret-42".to_owned()),
            "BAD_USER" => Some("a:b".to_owned()),
            _ => None,
        }
    }

    fn auth(user: &str, password: &str) -> BasicAuth {
        BasicAuth {
            user: user.into(),
            password: password.into(),
        }
    }

    #[test]
    fn the_pair_is_encoded_at_call_time_and_every_form_of_it_is_a_secret() {
        let mut secrets = Secrets::default();
        let header = basic_authorization(
            &auth("${env.SHOP_USER}", "${env.SHOP_PASSWORD}"),
            &env,
            &mut secrets,
        )
        .unwrap();
        // base64("ada:pw-secret-42")
        assert_eq!(header, "Basic YWRhOnB3LXNlY3JldC00Mg==");
        assert_eq!(
            secrets.mask("pw-secret-42 ada:pw-secret-42 YWRhOnB3LXNlY3JldC00Mg== Basic YWRhOnB3LXNlY3JldC00Mg=="),
            "[redacted] [redacted] [redacted] [redacted]"
        );
        let literal_user = basic_authorization(
            &auth("api", "${env.SHOP_PASSWORD}"),
            &env,
            &mut Secrets::default(),
        )
        .unwrap();
        assert_eq!(
            literal_user,
            format!("Basic {}", STANDARD.encode("api:pw-secret-42"))
        );
    }

    #[test]
    fn a_missing_variable_is_named_with_its_part_and_no_value() {
        let err = basic_authorization(
            &auth("${env.SHOP_USER}", "${env.SHOP_PASS}"),
            &env,
            &mut Secrets::default(),
        )
        .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("`SHOP_PASS` for its password"),
            "{message}"
        );
        assert!(!message.contains("ada"), "{message}");
        assert!(!err.is_retryable());
        let err = basic_authorization(
            &auth("${env.BAD_USER}", "${env.SHOP_PASSWORD}"),
            &env,
            &mut Secrets::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("RFC 7617"), "{err}");
        assert!(!err.to_string().contains("pw-secret-42"), "{err}");
    }
}
