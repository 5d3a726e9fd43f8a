//! The audit log, as a specification: a hash chain in a real SQLite file that
//! `verify` checks record by record, catching rows edited, deleted or inserted behind
//! toolgate's back, and that remembers intents whose completion never came.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;
use serde_json::json;
use toolgate::{
    AuditEntry, AuditLog, AuditRecord, ChainBreak, Decision, Effect, GENESIS_HASH, MemoryAuditLog,
    RecordKind, SqliteStore, VerifyReport,
};

fn entry(kind: RecordKind, run: &str) -> AuditEntry {
    let done = kind == RecordKind::Completion;
    AuditEntry {
        time: "2025-06-01T12:00:00.000Z".into(),
        kind,
        run_id: run.into(),
        call_id: format!("call-{run}"),
        session: "default".into(),
        principal: "operator".into(),
        tool: "refund_order".into(),
        effect: Some(Effect::Write),
        arguments: json!({"order_id": "A-1001", "amount": 12.5, "api_key": "[redacted]"}),
        decision: Some(Decision::Allow),
        reason: Some("operators may refund".into()),
        outcome: done.then(|| "ok".into()),
        message: None,
        duration_ms: done.then_some(4),
        attempts: done.then_some(1),
    }
}

/// A fresh SQLite file in a temporary directory.
fn store() -> (tempfile::TempDir, PathBuf, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).unwrap();
    (dir, path, store)
}

/// Appends `calls` intent/completion pairs: records 1..=2*calls.
fn fill(log: &dyn AuditLog, calls: usize) -> Vec<AuditRecord> {
    let mut records = Vec::new();
    for i in 1..=calls {
        let run = format!("run-{i}");
        records.push(log.append(entry(RecordKind::Intent, &run)).unwrap());
        records.push(log.append(entry(RecordKind::Completion, &run)).unwrap());
    }
    records
}

/// A second, raw connection to the file, as `sqlite3` or an intruder has.
fn raw(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn
}

fn broken_at(log: &dyn AuditLog) -> ChainBreak {
    match log.verify().unwrap() {
        VerifyReport::Broken { at, .. } => at,
        ok => panic!("the tampering went unnoticed: {ok:?}"),
    }
}

#[test]
fn the_log_is_a_hash_chain_that_verifies() {
    let (_dir, path, store) = store();
    let records = fill(&store, 3);

    assert_eq!(records[0].seq, 1);
    assert_eq!(records[0].prev_hash, GENESIS_HASH);
    for pair in records.windows(2) {
        assert_eq!(pair[1].seq, pair[0].seq + 1);
        assert_eq!(pair[1].prev_hash, pair[0].hash);
    }
    assert_eq!(
        store.verify().unwrap(),
        VerifyReport::Ok {
            records: 6,
            head: records[5].hash.clone()
        }
    );

    // What is read back is what was written, from this store and after reopening.
    assert_eq!(store.tail(2).unwrap(), records[4..].to_vec());
    assert_eq!(store.tail(100).unwrap(), records);
    assert!(store.tail(0).unwrap().is_empty());
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.tail(6).unwrap(), records);
    let next = reopened
        .append(entry(RecordKind::Refusal, "run-4"))
        .unwrap();
    assert_eq!(
        (next.seq, next.prev_hash.as_str()),
        (7, records[5].hash.as_str())
    );
    assert!(reopened.verify().unwrap().is_ok());
}

#[test]
fn the_memory_log_chains_and_verifies_like_the_file() {
    let memory = MemoryAuditLog::new();
    let (_dir, _path, file) = store();
    let in_memory = fill(&memory, 2);
    let on_disk = fill(&file, 2);
    // The same entries give the same chain, hash for hash.
    assert_eq!(in_memory, on_disk);
    assert_eq!(memory.verify().unwrap(), file.verify().unwrap());
    assert_eq!(memory.tail(3).unwrap(), file.tail(3).unwrap());
    assert_eq!(memory.records(), on_disk);
}

#[test]
fn an_empty_log_verifies_with_the_genesis_head() {
    let (_dir, _path, store) = store();
    assert_eq!(
        store.verify().unwrap(),
        VerifyReport::Ok {
            records: 0,
            head: GENESIS_HASH.into()
        }
    );
    assert!(store.tail(10).unwrap().is_empty());
    assert!(store.pending().unwrap().is_empty());
}

#[test]
fn verify_catches_an_edited_row() {
    let (_dir, path, store) = store();
    fill(&store, 3);
    let changed = raw(&path)
        .execute(
            "UPDATE audit SET record = json_set(record, '$.arguments.amount', 9999) WHERE seq = 3",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);

    assert_eq!(broken_at(&store), ChainBreak::Changed { seq: 3 });
    assert_eq!(
        store.verify().unwrap(),
        VerifyReport::Broken {
            at: ChainBreak::Changed { seq: 3 },
            verified: 2
        }
    );
}

#[test]
fn verify_catches_an_edit_that_keeps_the_hash_but_rewrites_the_text() {
    // Same values, different bytes: a key added that the record type would ignore.
    let (_dir, path, store) = store();
    fill(&store, 2);
    raw(&path)
        .execute(
            "UPDATE audit SET record = json_set(record, '$.note', 'approved later') WHERE seq = 2",
            [],
        )
        .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Changed { seq: 2 });
}

#[test]
fn verify_catches_a_deleted_row() {
    let (_dir, path, store) = store();
    fill(&store, 3);
    raw(&path)
        .execute("DELETE FROM audit WHERE seq = 3", [])
        .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Deleted { after_seq: 2 });

    // Deleting the first record is caught too.
    let (_dir, path, store) = self::store();
    fill(&store, 2);
    raw(&path)
        .execute("DELETE FROM audit WHERE seq = 1", [])
        .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Deleted { after_seq: 0 });
}

#[test]
fn verify_catches_an_inserted_row() {
    let (_dir, path, store) = store();
    let records = fill(&store, 3);
    // Make room after record 2 by renumbering the rows after it, then slip in a
    // record sealed properly against record 2.
    let conn = raw(&path);
    conn.execute("UPDATE audit SET seq = seq + 1000 WHERE seq > 2", [])
        .unwrap();
    conn.execute("UPDATE audit SET seq = seq - 999 WHERE seq > 1000", [])
        .unwrap();
    let forged = AuditRecord::seal(3, &records[1].hash, entry(RecordKind::Completion, "run-9"));
    conn.execute(
        "INSERT INTO audit (seq, kind, run_id, record, prev_hash, hash)
         VALUES (3, 'completion', 'run-9', ?1, ?2, ?3)",
        (forged.to_canonical_json(), &forged.prev_hash, &forged.hash),
    )
    .unwrap();

    assert_eq!(broken_at(&store), ChainBreak::Inserted { seq: 3 });
}

#[test]
fn verify_catches_a_row_appended_with_a_forged_link() {
    let (_dir, path, store) = store();
    fill(&store, 2);
    let forged = AuditRecord::seal(5, &"b".repeat(64), entry(RecordKind::Intent, "run-9"));
    raw(&path)
        .execute(
            "INSERT INTO audit (seq, kind, run_id, record, prev_hash, hash)
             VALUES (5, 'intent', 'run-9', ?1, ?2, ?3)",
            (forged.to_canonical_json(), &forged.prev_hash, &forged.hash),
        )
        .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Inserted { seq: 5 });
}

#[test]
fn verify_catches_an_edited_hash_column() {
    let (_dir, path, store) = store();
    fill(&store, 3);
    raw(&path)
        .execute(
            "UPDATE audit SET hash = ?1 WHERE seq = 4",
            [&"f".repeat(64)],
        )
        .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Changed { seq: 4 });

    // And the prev_hash column.
    let (_dir, path, store) = self::store();
    fill(&store, 3);
    raw(&path)
        .execute(
            "UPDATE audit SET prev_hash = ?1 WHERE seq = 2",
            [&"e".repeat(64)],
        )
        .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Changed { seq: 2 });
}

#[test]
fn an_intent_without_completion_is_pending() {
    let (_dir, path, store) = store();
    fill(&store, 1);
    let stranded = store.append(entry(RecordKind::Intent, "run-2")).unwrap();
    let mut read = entry(RecordKind::Intent, "run-3");
    read.effect = Some(Effect::Read);
    let read = store.append(read).unwrap();
    store.append(entry(RecordKind::Refusal, "run-4")).unwrap();
    // The process stops here, between intents and their completions.
    drop(store);

    let reopened = SqliteStore::open(&path).unwrap();
    let pending = reopened.pending().unwrap();
    assert_eq!(pending, vec![stranded.clone(), read.clone()]);
    assert!(
        !pending[0].safe_to_rerun(),
        "a write call is never re-run silently"
    );
    assert!(pending[1].safe_to_rerun());

    // A completion, whenever it comes, resolves the intent.
    reopened
        .append(entry(RecordKind::Completion, "run-2"))
        .unwrap();
    assert_eq!(reopened.pending().unwrap(), vec![read]);
    assert!(reopened.verify().unwrap().is_ok());

    let memory = MemoryAuditLog::new();
    memory.append(entry(RecordKind::Intent, "run-1")).unwrap();
    memory.append(entry(RecordKind::Intent, "run-2")).unwrap();
    memory
        .append(entry(RecordKind::Completion, "run-1"))
        .unwrap();
    let pending = memory.pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].entry.run_id, "run-2");
}

#[test]
fn two_processes_appending_keep_one_chain() {
    let (_dir, path, first) = store();
    let second = SqliteStore::open(&path).unwrap();
    let stores: Vec<Arc<SqliteStore>> = vec![Arc::new(first), Arc::new(second)];
    const PER_WRITER: usize = 200;

    let threads: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(writer, store)| {
            let store = Arc::clone(store);
            std::thread::spawn(move || {
                for i in 0..PER_WRITER {
                    let run = format!("w{writer}-{i}");
                    store.append(entry(RecordKind::Intent, &run)).unwrap();
                    store.append(entry(RecordKind::Completion, &run)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }

    let total = (2 * 2 * PER_WRITER) as u64;
    for store in &stores {
        match store.verify().unwrap() {
            VerifyReport::Ok { records, .. } => assert_eq!(records, total),
            broken => panic!("concurrent appends broke the chain: {broken:?}"),
        }
    }
    // Both writers really did interleave into the one chain.
    let all = stores[0].tail(total as usize).unwrap();
    let switches = all
        .windows(2)
        .filter(|pair| pair[0].entry.run_id[..2] != pair[1].entry.run_id[..2])
        .count();
    assert!(switches > 0);
    assert!(stores[1].pending().unwrap().is_empty());
}

#[test]
fn a_row_that_is_not_json_is_reported_not_a_panic() {
    let (_dir, path, store) = store();
    fill(&store, 2);
    let conn = raw(&path);
    // The table's CHECK keeps non-JSON out; an intruder can switch it off.
    conn.pragma_update(None, "ignore_check_constraints", true)
        .unwrap();
    conn.execute("UPDATE audit SET record = 'not json {' WHERE seq = 2", [])
        .unwrap();

    assert_eq!(
        store.verify().unwrap(),
        VerifyReport::Broken {
            at: ChainBreak::Changed { seq: 2 },
            verified: 1
        }
    );
    // Reading it back fails with a message that names the record and what to do.
    let error = store.tail(10).unwrap_err().to_string();
    assert!(error.contains("record 2"), "{error}");
    assert!(error.contains("toolgate audit verify"), "{error}");

    // A row of the wrong type altogether is no panic either.
    conn.execute(
        "UPDATE audit SET record = x'00ff', hash = 42 WHERE seq = 1",
        [],
    )
    .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Changed { seq: 1 });
}
