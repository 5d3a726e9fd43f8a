//! The audit log, as a specification: a hash chain in a real SQLite file that
//! `verify` checks record by record, catching rows edited, deleted or inserted behind
//! toolgate's back, and that remembers intents whose completion never came.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;
use serde_json::json;
use toolgate::{
    Decision, Effect, SqliteStore, audit::Anchor, audit::AuditEntry, audit::AuditRecord,
    audit::ChainBreak, audit::GENESIS_HASH, audit::RecordKind, audit::VerifyReport,
    store::AuditLog, store::MemoryAuditLog,
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
        auth: None,
        credential: None,
        call_hash: None,
        idempotency_key: None,
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

/// Slips a record into the table behind toolgate's back, its columns beside it
/// as toolgate writes them.
fn insert_raw(conn: &Connection, record: &AuditRecord) {
    let entry = &record.entry;
    conn.execute(
        "INSERT INTO audit
            (seq, record, kind, run_id, prev_hash, hash, session, principal, tool, outcome, time)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        rusqlite::params![
            record.seq as i64,
            record.to_canonical_json(),
            entry.kind.as_str(),
            &entry.run_id,
            &record.prev_hash,
            &record.hash,
            &entry.session,
            &entry.principal,
            &entry.tool,
            &entry.outcome,
            &entry.time,
        ],
    )
    .unwrap();
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
    insert_raw(&conn, &forged);

    assert_eq!(broken_at(&store), ChainBreak::Inserted { seq: 3 });
}

#[test]
fn verify_catches_a_row_appended_with_a_forged_link() {
    let (_dir, path, store) = store();
    fill(&store, 2);
    let forged = AuditRecord::seal(5, &"b".repeat(64), entry(RecordKind::Intent, "run-9"));
    insert_raw(&raw(&path), &forged);
    assert_eq!(broken_at(&store), ChainBreak::Inserted { seq: 5 });
}

#[test]
fn verify_catches_a_column_edited_apart_from_its_record() {
    // Every column beside the record is written from it: an edit that would
    // hide a call from a filtered page, fork the chain (`hash`, read by the
    // next append) or relabel a call, is a change to the log.
    for (column, seq) in [
        ("hash", 4),
        ("prev_hash", 2),
        ("kind", 3),
        ("run_id", 5),
        ("session", 2),
        ("principal", 3),
        ("tool", 4),
        ("outcome", 2),
        ("time", 5),
    ] {
        let (_dir, path, store) = store();
        fill(&store, 3);
        raw(&path)
            .execute(
                &format!("UPDATE audit SET {column} = 'x' WHERE seq = {seq}"),
                [],
            )
            .unwrap();
        assert_eq!(
            store.verify().unwrap(),
            VerifyReport::Broken {
                at: ChainBreak::Changed { seq },
                verified: seq
            },
            "{column}"
        );
    }
}

#[test]
fn a_crashed_call_cannot_be_hidden_from_pending_while_verify_says_ok() {
    // `pending` is computed from `kind` and `run_id`: an intent relabelled as a
    // completion, or moved to a run that completed, would drop out of it.
    let edits = [
        "UPDATE audit SET kind = 'completion' WHERE seq = 3",
        "UPDATE audit SET run_id = 'run-1' WHERE seq = 3",
    ];
    for edit in edits {
        let (_dir, path, store) = store();
        fill(&store, 1);
        let stranded = store.append(entry(RecordKind::Intent, "run-2")).unwrap();
        assert_eq!(store.pending().unwrap(), vec![stranded.clone()]);
        let edited = raw(&path).execute(edit, []);
        let hidden = store.pending().unwrap().is_empty();
        let verifies = store.verify().unwrap().is_ok();
        assert!(
            edited.is_err() || !(hidden && verifies),
            "`{edit}` hid the crashed call from pending and verify still says ok"
        );
        assert_eq!(store.pending().unwrap(), vec![stranded]);
    }
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
    // The table's CHECK and the indexes that read its JSON keep non-JSON out;
    // an intruder can switch the one off and drop the others.
    conn.pragma_update(None, "ignore_check_constraints", true)
        .unwrap();
    for field in ["session", "principal", "tool", "outcome", "time"] {
        conn.execute(&format!("DROP INDEX IF EXISTS audit_{field}"), [])
            .unwrap();
    }
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
    conn.execute("UPDATE audit SET record = x'00ff' WHERE seq = 1", [])
        .unwrap();
    assert_eq!(broken_at(&store), ChainBreak::Changed { seq: 1 });
}

/// The audit table as schema 4 and earlier wrote it: `kind` and `run_id` copied into
/// columns of their own, which `verify` never held to the record.
const AUDIT_V4: &str = "CREATE TABLE audit (
    seq       INTEGER PRIMARY KEY,
    kind      TEXT NOT NULL,
    run_id    TEXT NOT NULL,
    record    TEXT NOT NULL CHECK (json_valid(record)),
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);";

#[test]
fn a_log_in_the_old_schema_is_migrated_and_every_record_keeps_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let old = Connection::open(&path).unwrap();
    old.execute_batch(AUDIT_V4).unwrap();
    old.pragma_update(None, "user_version", 4).unwrap();
    let mut records: Vec<AuditRecord> = Vec::new();
    for (kind, run) in [
        (RecordKind::Intent, "run-1"),
        (RecordKind::Completion, "run-1"),
        (RecordKind::Intent, "run-2"),
    ] {
        let prev = records.last().map_or(GENESIS_HASH, |r| r.hash.as_str());
        let record = AuditRecord::seal(records.len() as u64 + 1, prev, entry(kind, run));
        old.execute(
            "INSERT INTO audit (seq, kind, run_id, record, prev_hash, hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            (
                record.seq as i64,
                kind.as_str(),
                run,
                record.to_canonical_json(),
                &record.prev_hash,
                &record.hash,
            ),
        )
        .unwrap();
        records.push(record);
    }
    // Before the migration, someone hid the crashed run-2 by its `kind` column.
    old.execute("UPDATE audit SET kind = 'completion' WHERE seq = 3", [])
        .unwrap();
    drop(old);
    let anchor = Anchor {
        seq: 3,
        head: records[2].hash.clone(),
    };

    let store = SqliteStore::open(&path).unwrap();
    let version: i64 = raw(&path)
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert!(version >= 5, "migrated to schema {version}");
    // The hash rule did not change: the same records, the same head, and an anchor
    // taken before the migration still holds.
    assert_eq!(store.tail(10).unwrap(), records);
    assert_eq!(
        store.verify_anchored(&[anchor]).unwrap(),
        VerifyReport::Ok {
            records: 3,
            head: records[2].hash.clone()
        }
    );
    // The columns now come from the hashed record, so the crashed call is back.
    assert_eq!(store.pending().unwrap(), vec![records[2].clone()]);
    let next = store
        .append(entry(RecordKind::Completion, "run-2"))
        .unwrap();
    assert_eq!((next.seq, next.prev_hash), (4, records[2].hash.clone()));
    assert!(store.pending().unwrap().is_empty());
    assert!(store.verify().unwrap().is_ok());
}

/// The anchor of a log that verifies, as `toolgate audit anchor` takes it.
fn anchor_of(log: &dyn AuditLog) -> Anchor {
    match log.verify().unwrap() {
        VerifyReport::Ok { records, head } => Anchor { seq: records, head },
        broken => panic!("no anchor for a broken log: {broken:?}"),
    }
}

fn broken_against(log: &dyn AuditLog, anchor: &Anchor) -> ChainBreak {
    match log.verify_anchored(std::slice::from_ref(anchor)).unwrap() {
        VerifyReport::Broken { at, .. } => at,
        ok => panic!("the tampering went unnoticed, anchor and all: {ok:?}"),
    }
}

/// Rewrites every record from `from` on with other content, each sealed afresh
/// against the one before: a chain that holds by itself.
fn rechain_from(conn: &Connection, records: &[AuditRecord], from: u64) {
    conn.execute("DELETE FROM audit WHERE seq >= ?1", [from as i64])
        .unwrap();
    let mut prev = records
        .iter()
        .find(|r| r.seq == from - 1)
        .map_or(GENESIS_HASH.to_owned(), |r| r.hash.clone());
    for record in records.iter().filter(|r| r.seq >= from) {
        let mut e = record.entry.clone();
        e.arguments = json!({"order_id": "A-1001", "amount": 9999});
        let forged = AuditRecord::seal(record.seq, &prev, e);
        insert_raw(conn, &forged);
        prev = forged.hash;
    }
}

#[test]
fn an_anchor_kept_elsewhere_catches_every_kind_of_tampering_with_a_real_file() {
    type Tamper = fn(&Connection, &[AuditRecord]);
    let cases: [(&str, Tamper, ChainBreak); 8] = [
        (
            "edit",
            |c, _| {
                c.execute(
                    "UPDATE audit SET record = json_set(record, '$.tool', 'x') WHERE seq = 3",
                    [],
                )
                .unwrap();
            },
            ChainBreak::Changed { seq: 3 },
        ),
        (
            "insert",
            |c, r| {
                c.execute("UPDATE audit SET seq = seq + 1000 WHERE seq > 2", [])
                    .unwrap();
                c.execute("UPDATE audit SET seq = seq - 999 WHERE seq > 1000", [])
                    .unwrap();
                insert_raw(
                    c,
                    &AuditRecord::seal(3, &r[1].hash, entry(RecordKind::Completion, "run-9")),
                );
            },
            ChainBreak::Inserted { seq: 3 },
        ),
        (
            "delete",
            |c, _| {
                c.execute("DELETE FROM audit WHERE seq = 3", []).unwrap();
            },
            ChainBreak::Deleted { after_seq: 2 },
        ),
        (
            "reorder",
            |c, _| {
                c.execute_batch(
                    "UPDATE audit SET seq = 100 WHERE seq = 3;
                     UPDATE audit SET seq = 3 WHERE seq = 4;
                     UPDATE audit SET seq = 4 WHERE seq = 100;",
                )
                .unwrap();
            },
            // Record 4 now follows record 2: its number skips ahead.
            ChainBreak::Deleted { after_seq: 2 },
        ),
        (
            "truncate",
            |c, _| {
                c.execute("DELETE FROM audit WHERE seq > 4", []).unwrap();
            },
            ChainBreak::Truncated {
                after_seq: 4,
                anchor_seq: 6,
            },
        ),
        (
            "delete all",
            |c, _| {
                c.execute("DELETE FROM audit", []).unwrap();
            },
            ChainBreak::Truncated {
                after_seq: 0,
                anchor_seq: 6,
            },
        ),
        (
            "rechain from record 4",
            |c, r| rechain_from(c, r, 4),
            ChainBreak::Rewritten { seq: 6 },
        ),
        (
            "full rechain",
            |c, r| rechain_from(c, r, 1),
            ChainBreak::Rewritten { seq: 6 },
        ),
    ];
    for (name, tamper, expected) in cases {
        let (_dir, path, store) = store();
        let records = fill(&store, 3);
        let anchor = anchor_of(&store);
        assert_eq!(anchor.seq, 6);
        assert!(
            store
                .verify_anchored(std::slice::from_ref(&anchor))
                .unwrap()
                .is_ok()
        );
        tamper(&raw(&path), &records);
        assert_eq!(broken_against(&store, &anchor), expected, "{name}");
        let alone = store.verify().unwrap();
        if matches!(
            expected,
            ChainBreak::Truncated { .. } | ChainBreak::Rewritten { .. }
        ) {
            assert!(alone.is_ok(), "{name}: the chain alone cannot see it");
        }
    }
}

#[test]
fn a_log_that_grew_after_its_anchor_still_holds_it() {
    let (_dir, _path, store) = store();
    fill(&store, 2);
    let early = anchor_of(&store);
    fill(&store, 2);
    let late = anchor_of(&store);
    let genesis = Anchor {
        seq: 0,
        head: GENESIS_HASH.into(),
    };
    let report = store.verify_anchored(&[late, genesis, early]).unwrap();
    assert!(report.is_ok(), "{report:?}");
}
