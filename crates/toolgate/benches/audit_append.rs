//! How fast the audit log appends: one sealed, durable record per iteration, in a
//! SQLite file (WAL, synchronous=NORMAL) and in memory. The gate writes two records
//! per call, so 20,000 calls/s needs well over 40,000 appends/s here.
//!
//! Run with `cargo bench -p toolgate --bench audit_append`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use toolgate::{
    Decision, Effect, SqliteStore, audit::AuditEntry, audit::RecordKind, store::AuditLog,
    store::MemoryAuditLog,
};

fn entry() -> AuditEntry {
    let mut entry = AuditEntry::new(
        "2025-06-01T12:00:00.000Z",
        RecordKind::Intent,
        "0b4f7c1e-8a43-4c55-9a51-8f1f5c2d7e10",
        "call_8f1f5c2d",
        "default",
        "operator",
        "lookup_order",
    );
    entry.effect = Some(Effect::Read);
    entry.arguments = json!({"order_id": "A-1001", "include_items": true});
    entry.decision = Some(Decision::Allow);
    entry.reason = Some("read tools are allowed".into());
    entry
}

fn audit_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sqlite = SqliteStore::open(dir.path().join("state.db")).expect("the store opens");
    let memory = MemoryAuditLog::new();
    let entry = entry();

    let mut group = c.benchmark_group("audit_append");
    group.throughput(Throughput::Elements(1));
    // Each call has its own run id, scattered like a v4 UUID, as the gate's are.
    let mut run = 0u64;
    let mut next_entry = || {
        run += 1;
        let mut entry = entry.clone();
        entry.run_id = format!(
            "{:032x}",
            u128::from(run).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
        );
        entry
    };
    group.bench_function("sqlite_wal", |b| {
        b.iter(|| black_box(sqlite.append(next_entry()).expect("append")))
    });
    group.bench_function("memory", |b| {
        b.iter(|| black_box(memory.append(next_entry()).expect("append")))
    });
    group.bench_function("seal_only", |b| {
        b.iter(|| {
            black_box(toolgate::audit::AuditRecord::seal(
                1,
                toolgate::audit::GENESIS_HASH,
                entry.clone(),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, audit_append);
criterion_main!(benches);
