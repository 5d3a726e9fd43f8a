//! What a call's arguments may cost: a call carries at most
//! `GateOptions::max_argument_bytes` of arguments (1 MiB by default, refused
//! before anything reads them); an error message quotes only the start of a bad
//! value; the audit log keeps the start of a long string with its size and hash.
//! Against a real SQLite file, because the log's growth is what is at stake.

use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Catalog, Gate, GateOptions, Outcome, Principal, SqliteStore, Tool, ToolCall, ToolCtx,
    ToolError, ToolHandler, gate::DEFAULT_MAX_ARGUMENT_BYTES, store::AuditLog,
};

/// Look up an order by its number.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct OrderNumber {
    order_number: u64,
}

impl ToolHandler for LookupOrder {
    type Input = OrderNumber;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _q: OrderNumber) -> Result<String, ToolError> {
        Ok("shipped".into())
    }
}

const FOUR_MIB: usize = 4 << 20;

fn gate(store: Arc<SqliteStore>, options: GateOptions) -> Gate {
    Gate::builder(Catalog::new().with_native(LookupOrder).unwrap())
        .store(store)
        .options(options)
        .build()
}

async fn call(gate: &Gate, i: usize, arguments: Value) -> Outcome {
    let call = ToolCall::new(format!("c{i}"), "lookup_order", arguments);
    gate.call("s", call, &Principal::operator()).await
}

fn message(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Error { message, .. } => message,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The database's size with everything checkpointed into the main file.
fn database_bytes(path: &Path) -> u64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let pages: i64 = conn
        .query_row("PRAGMA page_count", [], |row| row.get(0))
        .unwrap();
    let size: i64 = conn
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .unwrap();
    u64::try_from(pages * size).unwrap()
}

#[tokio::test]
async fn ten_4_mib_invalid_arguments_get_short_errors_and_grow_the_log_by_a_few_kb_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open_in_dir(dir.path()).unwrap());
    let path = store.path().unwrap().to_owned();
    // A limit above the argument, so that validation, its message and the log meet it.
    let gate = gate(
        store.clone(),
        GateOptions {
            max_argument_bytes: 8 << 20,
            ..GateOptions::default()
        },
    );
    call(&gate, 0, json!({"order_number": 1})).await;
    let before = database_bytes(&path);

    let huge = "9".repeat(FOUR_MIB);
    for i in 1..=10 {
        let outcome = call(&gate, i, json!({"order_number": huge})).await;
        let message = message(&outcome);
        assert!(message.len() < 1024, "{} bytes echoed", message.len());
        assert!(message.contains("are invalid"), "{message}");
        assert!(message.contains("bytes more)"), "{message}");
    }

    let grown = database_bytes(&path) - before;
    assert!(grown <= 10 * 4096, "the log grew by {grown} bytes");
    let record = store.tail(1).unwrap().pop().unwrap().entry;
    let kept = record.arguments["order_number"].as_str().unwrap();
    assert!(kept.starts_with("999"), "{kept}");
    assert!(
        kept.contains(&format!(
            "sha256 {}",
            toolgate::audit::sha256_hex(huge.as_bytes())
        )),
        "{kept}"
    );
    assert!(record.message.unwrap().len() < 1024);
}

#[tokio::test]
async fn arguments_over_the_limit_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open_in_dir(dir.path()).unwrap());
    let gate = gate(store.clone(), GateOptions::default());
    assert_eq!(GateOptions::default().max_argument_bytes, 1 << 20);

    let huge = "9".repeat(FOUR_MIB);
    let outcome = call(&gate, 1, json!({"order_number": huge})).await;
    let message = message(&outcome);
    assert_eq!(
        message,
        format!(
            "the arguments for `lookup_order` are {} bytes, more than the {DEFAULT_MAX_ARGUMENT_BYTES} bytes a call may carry; nothing ran. Send less (pass large content by reference, such as a URL or a file path, if the tool takes one)",
            FOUR_MIB + r#"{"order_number":""}"#.len()
        )
    );
    let record = store.tail(1).unwrap().pop().unwrap().entry;
    assert_eq!(record.outcome.as_deref(), Some("too_large"));
    assert!(record.arguments.to_string().len() < 1024);

    // Within the limit, a call runs as ever.
    let outcome = call(&gate, 2, json!({"order_number": 7})).await;
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
}

#[tokio::test]
async fn a_huge_tool_name_is_echoed_and_logged_only_in_part() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open_in_dir(dir.path()).unwrap());
    let gate = gate(store.clone(), GateOptions::default());
    let name = "n".repeat(FOUR_MIB);
    let outcome = gate
        .call(
            "s",
            ToolCall::new("c1", name, json!({})),
            &Principal::operator(),
        )
        .await;
    assert!(message(&outcome).len() < 1024);
    let record = store.tail(1).unwrap().pop().unwrap().entry;
    assert!(record.tool.len() < 1024);
    assert!(record.message.unwrap().len() < 1024);
}
