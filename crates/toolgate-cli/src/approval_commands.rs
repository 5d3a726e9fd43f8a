//! `toolgate approvals`: list the calls waiting for a person, and answer them.
//!
//! Approvals live in `state.db` in the state directory, beside conversation state,
//! so a person can answer from one terminal while a gate waits in another process.
//!
//! Every answer names who gave it (`--as`, by default the operator's OS user name)
//! and is recorded with it (`via: cli`). Where the spec file grants `approve` to
//! principals, only they may answer, each for its tools; nobody approves a call
//! they made unless `policy.self_approve: true`; and a call whose rule lets only
//! the client answer (`answered_by: client`) is not approved here.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::Subcommand;
use serde_json::{Value, json};
use toolgate::spec::SpecFile;
use toolgate::{
    policy::Answerer, policy::Approvers, store::Approval, store::ApprovalStore, store::Grant,
    store::GrantReach, store::GrantScope, store::ServedStore,
};

use crate::context::CommandResult;
use crate::context::load;
use crate::context::{SpecArgs, StateArgs};
use crate::output::{first_line, print_json, say_table};

/// The longest grant accepted: grants are meant to expire.
const LONGEST_GRANT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// What `toolgate approvals` does; without one, it lists the pending requests.
#[derive(Subcommand)]
pub enum ApprovalAction {
    /// One line per pending request: id, status, tool, arguments, reason, created.
    List {
        /// Include requests already answered.
        #[arg(long)]
        all: bool,
    },
    /// Approve a pending request: the call runs once when it is submitted again.
    Approve {
        /// The request's id, e.g. ap-1f3a9c0e.
        id: String,
        /// Also let further calls of the tool through without asking, for this long (e.g. 30m, 1h, 7days).
        #[arg(long, value_name = "DURATION")]
        grant: Option<String>,
        /// Limit the grant to calls with the same arguments as this one.
        #[arg(long, requires = "grant")]
        same_args: bool,
        /// Widen the grant from this conversation to every conversation of the
        /// principal whose call this is (it never covers another principal).
        #[arg(long, requires = "grant")]
        every_conversation: bool,
        /// Who approves: a principal granted `approve` (default: your OS user name).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        approver: Option<String>,
    },
    /// Deny a pending request; the model hears the reason the next time it makes the call.
    Deny {
        /// The request's id, e.g. ap-1f3a9c0e.
        id: String,
        /// Why, in words the model can act on.
        #[arg(long)]
        reason: Option<String>,
        /// Who denies: a principal granted `approve` (default: your OS user name).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        approver: Option<String>,
    },
}

/// Runs one `toolgate approvals` action.
pub fn run(args: &SpecArgs, state: &StateArgs, action: Option<ApprovalAction>) -> CommandResult {
    match action {
        None => list(args, state, false),
        Some(ApprovalAction::List { all }) => list(args, state, all),
        Some(ApprovalAction::Approve {
            id,
            grant,
            same_args,
            every_conversation,
            approver,
        }) => {
            let by = answerer(approver);
            let widen = GrantWidth {
                same_args,
                every_conversation,
            };
            approve(args, state, &id, grant.as_deref(), widen, &by)
        }
        Some(ApprovalAction::Deny {
            id,
            reason,
            approver,
        }) => deny(args, state, &id, reason.as_deref(), &answerer(approver)),
    }
}

/// The one answering: `--as`, else the OS user name (else `operator`).
fn answerer(approver: Option<String>) -> Answerer {
    let who = approver
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty())
        .or_else(|| {
            ["USER", "LOGNAME", "USERNAME"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        })
        .unwrap_or_else(|| "operator".to_owned());
    Answerer::new(who, "cli")
}

/// The spec file's approvers: none declared when there is no spec file.
fn spec_for_approvers(args: &SpecArgs) -> Result<SpecFile, String> {
    if args.file.exists() {
        Ok(load(args)?.0)
    } else {
        Ok(SpecFile::default())
    }
}

/// The request `id`, if there is one (the store says what is wrong otherwise).
fn asked(store: &dyn ServedStore, id: &str) -> Result<Option<Approval>, String> {
    ApprovalStore::get(store, id).map_err(|e| e.to_string())
}

/// `toolgate approvals list [--all]`.
pub fn list(args: &SpecArgs, state: &StateArgs, all: bool) -> CommandResult {
    let store = open(args, state)?;
    let approvals = store.list(all).map_err(|e| e.to_string())?;
    if args.json {
        print_json(&approvals);
        return Ok(ExitCode::SUCCESS);
    }
    if approvals.is_empty() {
        if all {
            sayln!("no approval requests");
        } else {
            sayln!("no pending approval requests (`--all` shows answered ones)");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 6]> = approvals
        .iter()
        .map(|a| {
            [
                a.id.clone(),
                a.status.to_string(),
                a.tool.clone(),
                first_line(&a.arguments.to_string(), 60),
                first_line(&a.reason, 60),
                a.created_at.clone(),
            ]
        })
        .collect();
    say_table(&rows);
    Ok(ExitCode::SUCCESS)
}

/// How far a grant reaches beyond the approved call: its flags.
#[derive(Clone, Copy, Default)]
pub struct GrantWidth {
    /// `--same-args`: only calls with the approved call's arguments.
    pub same_args: bool,
    /// `--every-conversation`: the caller's every conversation, not only this one.
    pub every_conversation: bool,
}

/// `toolgate approvals approve ID [--grant DURATION] [--same-args] [--every-conversation]`.
pub fn approve(
    args: &SpecArgs,
    state: &StateArgs,
    id: &str,
    grant: Option<&str>,
    width: GrantWidth,
    by: &Answerer,
) -> CommandResult {
    let grant = match grant {
        None if width.same_args || width.every_conversation => {
            return Err(
                "--same-args and --every-conversation shape a grant; add --grant DURATION (e.g. --grant 1h)".into(),
            );
        }
        None => None,
        Some(text) => Some(Grant {
            ttl: parse_grant(text)?,
            scope: if width.same_args {
                GrantScope::SameArguments
            } else {
                GrantScope::Tool
            },
            reach: if width.every_conversation {
                GrantReach::EveryConversation
            } else {
                GrantReach::Conversation
            },
        }),
    };
    let spec = spec_for_approvers(args)?;
    let store = open(args, state)?;
    if let Some(asked) = asked(&*store, id)? {
        Approvers::new(&spec.principals, spec.policy.self_approve)
            .may_approve(&by.who, &asked.tool, &asked.principal, asked.answered_by)
            .map_err(|e| format!("{} is not approved: {e}", asked.id))?;
    }
    let now = SystemTime::now();
    let approval = store
        .approve_by(id, grant, by, now)
        .map_err(|e| e.to_string())?;
    let expires_at = grant.map(|g| humantime::format_rfc3339_seconds(now + g.ttl).to_string());
    if args.json {
        let grant = grant.zip(expires_at).map(|(g, expires_at)| {
            json!({
                "scope": match g.scope {
                    GrantScope::Tool => "tool",
                    GrantScope::SameArguments => "same_arguments",
                },
                "principal": approval.principal,
                "conversation": match g.reach {
                    GrantReach::Conversation => Some(&approval.session),
                    GrantReach::EveryConversation => None,
                },
                "covers": g.covers(&approval),
                "ttl": humantime::format_duration(g.ttl).to_string(),
                "expires_at": expires_at,
            })
        });
        print_json(&json!({"approval": approval, "grant": grant}));
        return Ok(ExitCode::SUCCESS);
    }
    let call = describe_call(&approval);
    match grant.zip(expires_at) {
        None => sayln!(
            "approved {} as {}: {call} runs once when it is submitted again",
            approval.id,
            by.who
        ),
        Some((g, expires_at)) => {
            let covered = g.covers(&approval);
            sayln!(
                "approved {} as {}: {covered} runs without asking until {expires_at} ({})",
                approval.id,
                by.who,
                humantime::format_duration(g.ttl)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate approvals deny ID [--reason TEXT]`.
pub fn deny(
    args: &SpecArgs,
    state: &StateArgs,
    id: &str,
    reason: Option<&str>,
    by: &Answerer,
) -> CommandResult {
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    let spec = spec_for_approvers(args)?;
    let store = open(args, state)?;
    if let Some(asked) = asked(&*store, id)? {
        Approvers::new(&spec.principals, spec.policy.self_approve)
            .may_deny(&by.who, &asked.tool)
            .map_err(|e| format!("{} is not denied: {e}", asked.id))?;
    }
    let approval = store
        .deny_by(id, reason, by, SystemTime::now())
        .map_err(|e| e.to_string())?;
    if args.json {
        print_json(&approval);
        return Ok(ExitCode::SUCCESS);
    }
    let told = match reason {
        Some(reason) => format!("told \"{reason}\""),
        None => "told a person said no".to_owned(),
    };
    sayln!(
        "denied {} as {}: the model is {told} the next time it submits {}",
        approval.id,
        by.who,
        describe_call(&approval)
    );
    Ok(ExitCode::SUCCESS)
}

/// `refund {"order":"A-1"}`, arguments cut to fit a line.
fn describe_call(approval: &Approval) -> String {
    let arguments = match &approval.arguments {
        Value::Object(map) if map.is_empty() => String::new(),
        arguments => format!(" {}", first_line(&arguments.to_string(), 60)),
    };
    format!("`{}{arguments}`", approval.tool)
}

fn parse_grant(text: &str) -> Result<Duration, String> {
    let ttl = humantime::parse_duration(text).map_err(|e| {
        format!("--grant `{text}` is not a duration ({e}); write it like 30m, 1h or 7days")
    })?;
    if ttl.is_zero() {
        return Err(format!(
            "--grant `{text}` would expire at once; give a duration such as 1h, or leave --grant off to approve this call only"
        ));
    }
    if ttl > LONGEST_GRANT {
        return Err(format!(
            "--grant `{text}` is longer than 100 years; grants are meant to expire, so give a shorter one"
        ));
    }
    Ok(ttl)
}

fn open(args: &SpecArgs, state: &StateArgs) -> Result<Arc<dyn ServedStore>, String> {
    crate::context::open_store(args, state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_a_human_duration() {
        assert_eq!(parse_grant("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_grant("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(
            parse_grant("soon")
                .unwrap_err()
                .contains("write it like 30m")
        );
        assert!(parse_grant("0s").unwrap_err().contains("expire at once"));
        assert!(parse_grant("1000years").unwrap_err().contains("100 years"));
    }
}
