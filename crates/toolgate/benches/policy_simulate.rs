//! How long `toolgate policy simulate` takes on a large audit log: a SQLite
//! state file of `TOOLGATE_SIMULATE_RECORDS` records (default 1,000,000: an
//! intent and a completion per call, over 10,000 conversations, a lookup then a
//! refund in each), read whole and replayed through a flow (a refund once an
//! order is looked up), state rebuilt from each lookup's arguments, and a
//! policy whose rules read the call's arguments, the conversation's history
//! and its state.
//!
//! Run with `cargo bench -p toolgate --bench policy_simulate`; it prints the time
//! to write the log (not part of a simulation), to read it, and to replay it.

use std::time::Instant;

use serde_json::json;
use toolgate::audit::{AuditEntry, RecordKind};
use toolgate::policy::Replay;
use toolgate::store::AuditLog;
use toolgate::tool::ToolSource;
use toolgate::{Decision, Effect, SqliteStore, ToolDescriptor};

const SESSIONS: usize = 10_000;

fn record(n: usize, kind: RecordKind, tool: &str) -> AuditEntry {
    let session = format!("conversation-{}", n % SESSIONS);
    let mut entry = AuditEntry::new(
        format!(
            "2026-12-04T12:{:02}:{:02}.{:03}Z",
            (n / 60_000) % 60,
            (n / 1000) % 60,
            n % 1000
        ),
        kind,
        format!("run-{n}"),
        format!("call-{n}"),
        session,
        "operator",
        tool,
    );
    match kind {
        RecordKind::Completion => entry.outcome = Some("ok".into()),
        _ => {
            entry.decision = Some(if tool == "refund_order" {
                Decision::Ask
            } else {
                Decision::Allow
            });
            entry.arguments = json!({"order_id": format!("A-{n}"), "cents": (n * 37) % 20_000});
        }
    }
    entry
}

fn main() {
    let records: usize = std::env::var("TOOLGATE_SIMULATE_RECORDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open_in_dir(dir.path()).expect("the store opens");
    let started = Instant::now();
    for call in 0..records / 2 {
        // Each conversation looks an order up, then refunds it.
        let tool = if (call / SESSIONS).is_multiple_of(2) {
            "lookup_order"
        } else {
            "refund_order"
        };
        store
            .append(record(call, RecordKind::Intent, tool))
            .expect("append");
        store
            .append(record(call, RecordKind::Completion, tool))
            .expect("append");
    }
    let written = started.elapsed();

    let started = Instant::now();
    let log = store.tail(usize::MAX).expect("the log reads");
    let read = started.elapsed();

    let tools = [
        ToolDescriptor::new(
            "lookup_order",
            "",
            json!({"type": "object"}),
            Effect::Read,
            ToolSource::Builtin,
        ),
        ToolDescriptor::new(
            "refund_order",
            "",
            json!({"type": "object"}),
            Effect::External,
            ToolSource::Builtin,
        ),
    ];
    let spec: toolgate::spec::SpecFile = serde_json::from_value(json!({
        "state": {"last_order": {"type": "string"}},
        "tools": [
            {"name": "lookup_order", "description": "", "effect": "read",
             "set_state": {"last_order": "{args.order_id}"}},
            {"name": "refund_order", "description": "", "effect": "external"},
        ],
        "policy": {"rules": [
            {"tools": "refund_order", "when": {"above": {"arg": "cents", "value": 10000}}, "decision": "deny"},
            {"tools": "refund_order", "when": {"is_set": "last_order"}, "decision": "allow"},
        ]},
        "flow": {"steps": [
            {"id": "look", "instruction": "Look the order up.", "allow": ["lookup_order"]},
            {"id": "refund", "instruction": "Refund it.", "gate": {"called_ok": "lookup_order"},
             "allow": ["refund_order"]},
        ]},
    }))
    .expect("the spec reads");
    let replay = Replay {
        policy: &spec.policy,
        principals: &spec.principals,
        tools: &tools,
        spec: Some(&spec),
    };
    let started = Instant::now();
    let run = replay.run(&log, None, None);
    let replayed = started.elapsed();
    println!(
        "{} records ({} calls decided again, {} otherwise, {} loosened): written in {:.1} s; read in {:.1} s, replayed in {:.1} s: {:.1} s to simulate",
        log.len(),
        run.judged,
        run.changes.len(),
        run.loosened(),
        written.as_secs_f64(),
        read.as_secs_f64(),
        replayed.as_secs_f64(),
        (read + replayed).as_secs_f64()
    );
}
