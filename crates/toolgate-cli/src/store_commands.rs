//! `toolgate store`: the store itself, as opposed to what is in it.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;
use toolgate::{store::OpenOptions, store::StoreChoice};

use crate::context::CommandResult;
use crate::context::store_choice;
use crate::context::{SpecArgs, StateArgs};
use crate::output::print_json;

/// What `toolgate store` does.
#[derive(Subcommand)]
pub enum StoreAction {
    /// Create or migrate the store's schema to this toolgate's version, and say
    /// which store it is (the URL with its password masked) and from which version.
    Migrate,
}

pub fn run(args: &SpecArgs, state: &StateArgs, action: StoreAction) -> CommandResult {
    match action {
        StoreAction::Migrate => migrate(args, state),
    }
}

fn migrate(args: &SpecArgs, state: &StateArgs) -> CommandResult {
    let choice = store_choice(args, state)?;
    let shown = choice.shown();
    let (from, to) = match &choice {
        StoreChoice::Postgres { url } => {
            let options = toolgate::store::PostgresOptions {
                pool_size: OpenOptions {
                    pool_size: state.store_pool,
                }
                .pool_size
                .unwrap_or(2),
                ..Default::default()
            };
            let (from, to) =
                toolgate::PostgresStore::migrate(url, options).map_err(|e| e.to_string())?;
            (Some(from), to)
        }
        StoreChoice::Sqlite(dir) => {
            // Opening an SQLite file migrates it.
            toolgate::SqliteStore::open_in_dir(dir).map_err(|e| e.to_string())?;
            (None, 0)
        }
    };
    if args.json {
        print_json(&json!({"store": shown, "from": from, "to": (to > 0).then_some(to)}));
    } else {
        match from {
            Some(from) if from == to => sayln!("{shown}: schema version {to}, up to date"),
            Some(0) => sayln!("{shown}: created schema version {to}"),
            Some(from) => sayln!("{shown}: migrated schema version {from} to {to}"),
            None => sayln!("{shown}: up to date"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
