//! `toolgate keys`: the API keys callers of `toolgate serve --http` present.
//!
//! A key is printed once, when it is made; the key file (see
//! [`toolgate::auth::key_file_path`]) keeps only its hash. A running server sees a
//! new key at once and stops taking a revoked one within a second.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Value, json};
use toolgate::auth::{KeyFile, key_file_path};
use toolgate::store::resolve_state_dir;

use crate::context::CommandResult;
use crate::context::load;
use crate::context::{SpecArgs, StateArgs};
use crate::output::print_json;

/// What `toolgate keys` does; without one, it lists the keys.
#[derive(Subcommand)]
pub enum KeyAction {
    /// Make a key for a principal and print it, once.
    Add {
        /// The principal the key calls as (declared under `principals:`).
        principal: String,
        /// What the key is for (shown by `list` and in the audit log), e.g. `laptop`.
        #[arg(long = "name", value_name = "LABEL")]
        label: Option<String>,
    },
    /// One line per key: id, principal, label, when it was made, whether revoked.
    List,
    /// Stop a key from working.
    Revoke {
        /// The key's id, as `list` shows it.
        id: String,
    },
}

/// Runs one `toolgate keys` action.
pub fn run(args: &SpecArgs, state: &StateArgs, action: Option<KeyAction>) -> CommandResult {
    let (spec, _) = load(args)?;
    let dir = resolve_state_dir(state.state_dir.as_deref(), &args.file);
    let path = key_file_path(&spec, &args.file, &dir);
    let mut keys = KeyFile::open(&path).map_err(|e| e.to_string())?;
    match action {
        None | Some(KeyAction::List) => list(args, &keys),
        Some(KeyAction::Add { principal, label }) => {
            let declared = principal == "operator" || spec.principals.contains_key(&principal);
            if !declared {
                let hint = toolgate::tool::closest_names(
                    &principal,
                    spec.principals.keys().map(String::as_str),
                )
                .into_iter()
                .next()
                .map(|h| format!("; did you mean `{h}`?"))
                .unwrap_or_else(|| "; declare it under `principals:` first".into());
                return Err(format!("no principal is named `{principal}`{hint}"));
            }
            let (record, key) = keys
                .add(&principal, label.as_deref())
                .map_err(|e| e.to_string())?;
            if args.json {
                print_json(&json!({"id": record.id, "principal": record.principal, "key": key}));
            } else {
                sayln!("{key}");
            }
            tellln!(
                "made key {} for `{principal}`; it is shown only now, so keep it somewhere safe (its hash is in {})",
                record.id,
                path.display()
            );
            if spec.auth.api_keys.is_none() {
                tellln!(
                    "`toolgate serve --http` takes keys once the spec file says so: add `auth: {{api_keys: {{}}}}`"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(KeyAction::Revoke { id }) => {
            let revoked = keys.revoke(&id).map_err(|e| e.to_string())?;
            tellln!(
                "revoked key {} of `{}`; a running server stops taking it within a second",
                revoked.id,
                revoked.principal
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list(args: &SpecArgs, keys: &KeyFile) -> CommandResult {
    if args.json {
        let rows: Vec<Value> = keys
            .keys()
            .iter()
            .map(|k| {
                json!({
                    "id": k.id,
                    "principal": k.principal,
                    "label": k.label,
                    "created_at": k.created_at,
                    "revoked_at": k.revoked_at,
                })
            })
            .collect();
        print_json(&rows);
        return Ok(ExitCode::SUCCESS);
    }
    if keys.keys().is_empty() {
        sayln!("no API keys yet; `toolgate keys add PRINCIPAL` makes one");
        return Ok(ExitCode::SUCCESS);
    }
    let width = keys
        .keys()
        .iter()
        .map(|k| k.principal.len())
        .max()
        .unwrap_or(0);
    for key in keys.keys() {
        let status = match &key.revoked_at {
            Some(at) => format!("revoked {at}"),
            None => "live".to_owned(),
        };
        sayln!(
            "{}  {:width$}  {}  {}  {}",
            key.id,
            key.principal,
            key.created_at,
            status,
            key.label.as_deref().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}
