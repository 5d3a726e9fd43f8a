//! `toolgate audit`: read the audit log, check it for tampering, and find the calls a
//! crashed process left without a completion.
//!
//! The log lives in `state.db` in the state directory. These commands never create
//! it: with no file yet, the log is simply empty.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Value, json};
use toolgate::audit::{AuditRecord, ChainBreak, VerifyReport};
use toolgate::audit::{PendingOutcome, ResolveError, resolve_pending};

use crate::context::CommandResult;
use crate::context::{SpecArgs, StateArgs, db_path, open_existing_store};
use crate::output::{first_line, print_json};

/// What `toolgate audit` does; without one, it shows the last records.
#[derive(Subcommand)]
pub enum AuditAction {
    /// The last records, oldest first: seq, time, kind, tool, outcome or decision, reason.
    Tail {
        /// How many records.
        #[arg(short = 'n', long = "lines", default_value_t = 20)]
        n: usize,
    },
    /// Check the hash chain: exit 0 if intact, else name the first record changed, inserted or deleted and exit 1.
    Verify {
        /// Also hold the log to anchors kept elsewhere (a file `audit anchor --append` writes, or SEQ:HASH), which catches records cut from the end, every record deleted, or the chain rewritten.
        #[arg(long = "anchor", value_name = "FILE|SEQ:HASH")]
        anchors: Vec<String>,
    },
    /// Print the log's head as SEQ:HASH, to keep where whoever can write the state directory cannot (`verify --anchor` checks against it).
    Anchor {
        /// Also append it, with the time, to this file.
        #[arg(long, value_name = "FILE")]
        append: Option<PathBuf>,
    },
    /// Calls that were started but never completed (the process stopped while they ran).
    Pending,
    /// Record what became of a pending call, after checking by hand (its conversation's flow counts it, and goes on).
    Resolve {
        /// The pending call's run id (from `toolgate audit pending`), or one whose outcome was unknown.
        run_id: String,
        /// What happened: ok (it took effect), error (it failed), cancelled (it never ran).
        #[arg(long, value_parser = ["ok", "error", "cancelled"])]
        outcome: String,
        /// A note for the record: what was checked, by whom.
        #[arg(long)]
        note: Option<String>,
    },
}

/// Runs one `toolgate audit` action.
pub fn run(args: &SpecArgs, state: &StateArgs, action: Option<AuditAction>) -> CommandResult {
    match action {
        None => tail(args, state, 20),
        Some(AuditAction::Tail { n }) => tail(args, state, n),
        Some(AuditAction::Verify { anchors }) => verify(args, state, &anchors),
        Some(AuditAction::Anchor { append }) => {
            crate::anchor_commands::anchor(args, state, append.as_deref())
        }
        Some(AuditAction::Pending) => pending(args, state),
        Some(AuditAction::Resolve {
            run_id,
            outcome,
            note,
        }) => resolve(args, state, &run_id, &outcome, note.as_deref()),
    }
}

/// `toolgate audit tail [-n N]`.
pub fn tail(args: &SpecArgs, state: &StateArgs, n: usize) -> CommandResult {
    let records = match open_existing_store(args, state)? {
        Some(store) => store.tail(n).map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    if args.json {
        print_json(&records);
    } else if records.is_empty() {
        sayln!("the audit log is empty");
    } else {
        let width = records.last().map_or(1, |r| r.seq.to_string().len());
        let tool_width = records
            .iter()
            .map(|r| r.entry.tool.len())
            .max()
            .unwrap_or(0);
        for record in &records {
            sayln!("{}", record_line(record, width, tool_width));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate audit verify [--anchor FILE|SEQ:HASH]...`.
pub fn verify(args: &SpecArgs, state: &StateArgs, anchors: &[String]) -> CommandResult {
    let anchors = crate::anchor_commands::read_anchors(anchors)?;
    // No file at all is the empty log, which an anchor past record 0 catches.
    let report = match open_existing_store(args, state)? {
        Some(store) => store.verify_anchored(&anchors).map_err(|e| e.to_string())?,
        None => toolgate::audit::verify_chain_anchored(Vec::<AuditRecord>::new(), anchors.clone()),
    };
    if args.json {
        print_json(&report);
    } else {
        match &report {
            VerifyReport::Ok { records, head } => {
                let head: String = head.chars().take(12).collect();
                sayln!(
                    "audit log ok: {records} record{}, head {head}",
                    if *records == 1 { "" } else { "s" }
                );
                if let Some(held) = crate::anchor_commands::held_line(&anchors) {
                    sayln!("{held}");
                }
            }
            VerifyReport::Broken { at, .. } => {
                sayln!("audit log broken at record {}: {at}", first_bad_seq(*at));
                sayln!(
                    "the log was altered outside toolgate: keep a copy of {} for investigation; records before this one check out",
                    db_path(args, state).display()
                );
            }
        }
    }
    Ok(if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `toolgate audit pending`.
pub fn pending(args: &SpecArgs, state: &StateArgs) -> CommandResult {
    let (records, unknown) = match open_existing_store(args, state)? {
        Some(store) => (
            store.pending().map_err(|e| e.to_string())?,
            toolgate::audit::unresolved_unknowns(store.as_ref()).map_err(|e| e.to_string())?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    if args.json {
        let rows: Vec<Value> = records
            .iter()
            .chain(&unknown)
            .map(|r| {
                let mut row = serde_json::to_value(r).unwrap_or(Value::Null);
                row["safe_to_rerun"] = json!(r.safe_to_rerun());
                row
            })
            .collect();
        print_json(&rows);
        return Ok(ExitCode::SUCCESS);
    }
    if !unknown.is_empty() {
        sayln!(
            "{} call{} whose outcome is unknown (sent, but the answer was lost); the same call is refused in its conversation until resolved:",
            unknown.len(),
            if unknown.len() == 1 { "" } else { "s" }
        );
        for record in &unknown {
            let e = &record.entry;
            sayln!(
                "! {}  {}  {}  run {}  session {}  principal {}: {}",
                record.seq,
                e.time,
                e.tool,
                e.run_id,
                e.session,
                e.principal,
                first_line(e.message.as_deref().unwrap_or_default(), 100)
            );
        }
        if records.is_empty() {
            sayln!(
                "Check whether each took effect, then record it with `toolgate audit resolve RUN_ID --outcome ok|error|cancelled`."
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    if records.is_empty() {
        sayln!("no pending calls: every intent in the audit log has a completion");
        return Ok(ExitCode::SUCCESS);
    }
    let count = records.len();
    sayln!(
        "{count} call{} started but never completed (the process stopped while {} ran):",
        if count == 1 { "" } else { "s" },
        if count == 1 { "it" } else { "they" }
    );
    let width = records.last().map_or(1, |r| r.seq.to_string().len());
    for record in &records {
        let e = &record.entry;
        let mark = if record.safe_to_rerun() { ' ' } else { '!' };
        let effect = e.effect.map_or("unknown", |effect| effect.as_str());
        sayln!(
            "{mark} {:>width$}  {}  {}  {effect}  run {}  call {}  session {}  principal {}",
            record.seq,
            e.time,
            e.tool,
            e.run_id,
            e.call_id,
            e.session,
            e.principal
        );
        sayln!(
            "  {:width$}  arguments {}",
            "",
            first_line(&e.arguments.to_string(), 100)
        );
    }
    if records.iter().any(|r| !r.safe_to_rerun()) {
        sayln!(
            "Calls marked ! may have changed something and are never re-run automatically: the operator must check whether each took effect, then record it with `toolgate audit resolve RUN_ID --outcome ok|error|cancelled`."
        );
    } else {
        sayln!(
            "These calls only read, so running them again is safe; `toolgate audit resolve RUN_ID --outcome cancelled` clears them from this list."
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate audit resolve RUN_ID --outcome ok|error|cancelled [--note TEXT]`.
pub fn resolve(
    args: &SpecArgs,
    state: &StateArgs,
    run_id: &str,
    outcome: &str,
    note: Option<&str>,
) -> CommandResult {
    let Some(store) = open_existing_store(args, state)? else {
        return Err(format!(
            "there is no audit log at {}; check --state-dir (or TOOLGATE_STATE_DIR)",
            db_path(args, state).display()
        ));
    };
    let outcome: PendingOutcome = outcome.parse()?;
    let record = match resolve_pending(store.as_ref(), run_id, outcome, "the operator", note) {
        Ok(record) => record,
        Err(e @ ResolveError::NotPending { .. }) => {
            return Err(format!(
                "{e}; `toolgate audit pending` lists the ones that do"
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    if args.json {
        print_json(&record);
    } else {
        sayln!(
            "recorded {} for run {run_id} ({}) as record {}",
            outcome.as_str(),
            record.entry.tool,
            record.seq
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One record as a line: seq, time, kind, tool, outcome (or decision), reason and message.
fn record_line(record: &AuditRecord, width: usize, tool_width: usize) -> String {
    let e = &record.entry;
    let status = e
        .outcome
        .as_deref()
        .or(e.decision.map(|d| d.as_str()))
        .unwrap_or("-");
    // A call served over HTTP says who made it and how they authenticated.
    let who = e.auth.as_ref().map(|auth| match &e.credential {
        Some(credential) => format!("by {} via {auth} {credential}", e.principal),
        None => format!("by {} via {auth}", e.principal),
    });
    let detail: Vec<&str> = [who.as_deref(), e.reason.as_deref(), e.message.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let line = format!(
        "{:>width$}  {}  {:10}  {:tool_width$}  {status:16}  {}",
        record.seq,
        e.time,
        e.kind.as_str(),
        e.tool,
        first_line(&detail.join(" — "), 100)
    );
    line.trim_end().to_owned()
}

/// The first record that is not as written: for a deletion, the first one missing.
fn first_bad_seq(at: ChainBreak) -> u64 {
    match at {
        ChainBreak::Deleted { after_seq } | ChainBreak::Truncated { after_seq, .. } => {
            after_seq + 1
        }
        other => other.seq(),
    }
}
