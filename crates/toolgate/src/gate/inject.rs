//! Injected parameters at call time (a spec tool's `inject:`): a call that
//! supplies one is refused as an unknown argument, and each is filled from the
//! caller's identity, the gateway's environment or the MCP host's secure
//! arguments before anything reads the arguments (policy rules included).

use indexmap::IndexMap;
use serde_json::Value;
use toolgate_core::spec::inject::{InjectSources, fill as fill_in};
use toolgate_core::{Outcome, Principal, REDACTED, ToolCall, clip_text};

use super::call::Stop;

/// Refuses a call whose arguments name an injected parameter, as a name the
/// tool does not take: the model was never shown it.
pub(super) fn refuse_supplied(
    call: &ToolCall,
    inject: &IndexMap<String, String>,
) -> Result<(), Stop> {
    let Some(supplied) = call
        .arguments
        .as_object()
        .and_then(|args| args.keys().find(|key| inject.contains_key(*key)))
    else {
        return Ok(());
    };
    let outcome = Outcome::error(
        format!(
            "`{}` is not an argument of `{}`; nothing ran. Call it again without `{}`",
            clip_text(supplied, 64),
            call.name,
            clip_text(supplied, 64)
        ),
        false,
    );
    Err(Stop::refused("invalid", outcome))
}

/// Fills the injected parameters of `arguments` for `principal`; returns
/// those that came from the environment, which the audit log masks. A caller
/// that lacks a value (a claim, the host's secure argument) is refused.
pub(super) fn fill(
    call: &ToolCall,
    principal: &Principal,
    inject: &IndexMap<String, String>,
    arguments: &mut Value,
) -> Result<Vec<String>, Stop> {
    if !arguments.is_object() {
        *arguments = Value::Object(Default::default());
    }
    let Some(object) = arguments.as_object_mut() else {
        return Ok(Vec::new());
    };
    let env = |name: &str| std::env::var(name).ok();
    let sources = InjectSources {
        principal,
        secure: &call.secure_arguments,
        env: &env,
    };
    match fill_in(inject, object, &sources) {
        Ok(filled) => Ok(filled.secret),
        Err(why) => Err(Stop::refused(
            "denied",
            Outcome::Denied {
                reason: format!(
                    "`{}` cannot be called for this caller: {why}; nothing ran. Tell the operator",
                    call.name
                ),
            },
        )),
    }
}

/// Masks the values of `secret` parameters in audit arguments.
pub(super) fn mask(audit_arguments: &mut Value, secret: &[String]) {
    if let Some(object) = audit_arguments.as_object_mut() {
        for name in secret {
            if let Some(value) = object.get_mut(name) {
                *value = Value::String(REDACTED.to_owned());
            }
        }
    }
}
