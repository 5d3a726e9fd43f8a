//! Reading the audit log a filtered page at a time, newest first: the SQLite
//! store answers from indexes what the in-memory log answers by reading every
//! record, and both give the same pages.

use serde_json::json;
use toolgate::{
    SqliteStore, audit::AuditEntry, audit::AuditRecord, audit::RecordKind, store::AuditFilter,
    store::AuditLog, store::MemoryAuditLog,
};

fn entry(i: usize, kind: RecordKind) -> AuditEntry {
    let done = kind == RecordKind::Completion;
    AuditEntry {
        time: format!("2026-03-01T12:{:02}:{:02}.000Z", i / 60 % 60, i % 60),
        kind,
        run_id: format!("run-{i}"),
        call_id: format!("call-{i}"),
        session: format!("s{}", i % 3),
        principal: if i.is_multiple_of(2) { "alice" } else { "bob" }.into(),
        tool: ["lookup_order", "refund_order", "send_email"][i % 3].into(),
        effect: None,
        arguments: json!({"i": i}),
        decision: None,
        reason: None,
        outcome: done.then(|| if i.is_multiple_of(5) { "error" } else { "ok" }.into()),
        message: None,
        duration_ms: None,
        attempts: None,
        auth: None,
        credential: None,
        call_hash: None,
        idempotency_key: None,
    }
}

fn fill(log: &dyn AuditLog, calls: usize) {
    for i in 0..calls {
        log.append(entry(i, RecordKind::Intent)).unwrap();
        log.append(entry(i, RecordKind::Completion)).unwrap();
    }
}

fn seqs(records: &[AuditRecord]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

#[test]
fn a_filtered_page_of_the_audit_log_is_the_same_from_sqlite_and_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("state.db")).unwrap();
    let memory = MemoryAuditLog::new();
    fill(&sqlite, 120);
    fill(&memory, 120);
    let filters = [
        AuditFilter::default(),
        AuditFilter {
            session: Some("s1".into()),
            ..AuditFilter::default()
        },
        AuditFilter {
            principal: Some("alice".into()),
            tool: Some("lookup_order".into()),
            ..AuditFilter::default()
        },
        AuditFilter {
            outcome: Some("error".into()),
            ..AuditFilter::default()
        },
        AuditFilter {
            since: Some("2026-03-01T12:01:00.000Z".into()),
            until: Some("2026-03-01T12:01:30.000Z".into()),
            ..AuditFilter::default()
        },
        AuditFilter {
            tool: Some("no_such_tool".into()),
            ..AuditFilter::default()
        },
    ];
    for filter in &filters {
        for before in [None, Some(200), Some(3)] {
            let a = sqlite.query(filter, before, 25).unwrap();
            let b = memory.query(filter, before, 25).unwrap();
            assert_eq!(seqs(&a), seqs(&b), "{filter:?} before {before:?}");
            assert!(a.windows(2).all(|w| w[0].seq > w[1].seq), "newest first");
            assert!(a.iter().all(|r| filter.matches(r)), "{filter:?}");
            assert!(a.iter().all(|r| before.is_none_or(|b| r.seq < b)));
        }
    }
    // Pages follow on from the last record shown, without gaps or repeats.
    let errors = AuditFilter {
        outcome: Some("error".into()),
        ..AuditFilter::default()
    };
    let first = sqlite.query(&errors, None, 10).unwrap();
    let second = sqlite
        .query(&errors, first.last().map(|r| r.seq), 10)
        .unwrap();
    let all = sqlite.query(&errors, None, 100).unwrap();
    assert_eq!(all.len(), 24);
    assert_eq!([seqs(&first), seqs(&second)].concat(), seqs(&all)[..20]);
}

#[test]
fn a_filtered_audit_query_uses_the_index_of_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteStore::open(&path).unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    // The conditions the store writes for each filter (an outcome other than
    // `ok` repeats the condition of its index, which holds only those).
    for (condition, index) in [
        ("session = 'x'", "audit_session"),
        ("principal = 'x'", "audit_principal"),
        ("tool = 'x'", "audit_tool"),
        (
            "outcome = 'denied' AND outcome IS NOT NULL AND outcome <> 'ok'",
            "audit_outcome",
        ),
        ("time = 'x'", "audit_time"),
    ] {
        let sql = format!(
            "EXPLAIN QUERY PLAN SELECT seq, record FROM audit WHERE {condition} ORDER BY seq DESC LIMIT 50"
        );
        let plan: Vec<String> = raw
            .prepare(&sql)
            .unwrap()
            .query_map([], |row| row.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            plan.iter().any(|p| p.contains(index)),
            "{condition}: {plan:?}"
        );
    }
    // `ok` completions and intents are not in the outcome index.
    let indexed: i64 = raw
        .query_row(
            "SELECT count(*) FROM pragma_index_info('audit_outcome')",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(indexed, 1);
    let partial: i64 = raw
        .query_row(
            "SELECT partial FROM pragma_index_list('audit') WHERE name = 'audit_outcome'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(partial, 1, "the outcome index leaves out `ok` and intents");
}
