//! The gate's own cost per call, on a mock tool with a small schema.
//!
//! Measurements in one run, so they share the machine's noise:
//! - `direct`: the tool's own call, no gate (the baseline);
//! - `gate/memory`: the whole gate with the in-memory store;
//! - `gate/sqlite`: the whole gate with the durable SQLite store (WAL) in a temp dir;
//! - `gate/sqlite/write`: a call with effects on SQLite (its intent committed
//!   before it runs, then its completion);
//! - `gate/sqlite/write+key`: the same call under a new idempotency key each time
//!   (the key looked up, claimed, and settled with the outcome);
//! - `gate/memory+labels`, `gate/sqlite/write+labels`: the same calls where another
//!   tool's results are labelled untrusted, so the rule of two reads what the
//!   conversation has seen before a call that acts (the write).
//! - `gate/sqlite/8 callers`, `gate/sqlite/write/8 callers`: eight callers at
//!   once on two worker threads; the time is per call over all of them, so
//!   calls/s is its inverse.
//!
//! Overhead is `gate/* − direct`; a key costs `write+key − write`; labels cost
//! `*+labels − *`. What a spec without labels pays for them is compared across
//! commits: `--save-baseline` on one, `--baseline` on the other. Run:
//! `cargo bench -p toolgate --bench gate_overhead`.

use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate::{Catalog, Gate, MemoryGateStore, Principal, SqliteStore, ToolCall, ToolCtx};

/// Two mock tools, a lookup and a call with effects (shared with the
/// `gate_calls` example, which counts their instructions).
const SPEC: &str = include_str!("gate_calls.yaml");

/// A tool whose results are untrusted: with it, a conversation can have seen a label.
const LABELLED: &str = r#"
  - name: fetch_page
    description: Fetch a web page.
    effect: read
    output: untrusted
"#;

fn gate(store: Arc<dyn toolgate::GateStore>) -> Gate {
    gate_of(SPEC, store)
}

fn gate_of(text: &str, store: Arc<dyn toolgate::GateStore>) -> Gate {
    let spec = toolgate::spec::check(text)
        .spec
        .expect("the bench spec is valid");
    Gate::from_spec(&spec, "bench.yaml", &Catalog::new(), store).expect("the bench catalog builds")
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let principal = Principal::operator();
    let args = json!({"order_id": "A-1001"});

    let tool = gate(Arc::new(MemoryGateStore::default()))
        .catalog()
        .get("lookup_order")
        .unwrap()
        .clone();
    let ctx = ToolCtx::new("c1", principal.clone());
    c.bench_function("direct", |b| {
        b.to_async(&runtime).iter(|| tool.call(&ctx, args.clone()))
    });

    // Each sample gets a fresh gate and store, so the audit log of one sample does
    // not grow across the whole run.
    let keys = std::sync::atomic::AtomicU64::new(0);
    let labelled = SPEC.replace(
        "policy:",
        &format!("{}policy:", LABELLED.trim_start_matches('\n')),
    );
    let mut timed = |name: &str,
                     store: &dyn Fn() -> Arc<dyn toolgate::GateStore>,
                     call: &dyn Fn() -> ToolCall| {
        let text = if name.ends_with("+labels") {
            labelled.as_str()
        } else {
            SPEC
        };
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let gate = gate_of(text, store());
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        std::hint::black_box(gate.call("s", call(), &principal).await);
                    }
                    start.elapsed()
                })
            })
        });
    };
    let lookup = || ToolCall::new("c1", "lookup_order", args.clone());
    let tag = || ToolCall::new("c1", "tag_order", args.clone());
    let keyed_tag = || {
        let n = keys.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tag().with_idempotency_key(format!("key-{n}"))
    };
    timed(
        "gate/memory",
        &|| Arc::new(MemoryGateStore::default()),
        &lookup,
    );
    timed(
        "gate/memory+labels",
        &|| Arc::new(MemoryGateStore::default()),
        &lookup,
    );
    let dir = tempfile::tempdir().unwrap();
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let sqlite = || -> Arc<dyn toolgate::GateStore> {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new(SqliteStore::open_in_dir(dir.path().join(n.to_string())).unwrap())
    };
    timed("gate/sqlite", &sqlite, &lookup);
    timed("gate/sqlite/write", &sqlite, &tag);
    timed("gate/sqlite/write+key", &sqlite, &keyed_tag);
    timed("gate/sqlite/write+labels", &sqlite, &tag);

    // Eight callers at once, each in a conversation of its own, on two worker
    // threads: a call's time is the wall time over all their calls, so calls/s
    // is its inverse, with group commit sharing the store's transactions.
    let parallel = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (name, tool) in [
        ("gate/sqlite/8 callers", "lookup_order"),
        ("gate/sqlite/write/8 callers", "tag_order"),
    ] {
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let gate = Arc::new(gate(sqlite()));
                parallel.block_on(async {
                    let start = Instant::now();
                    let callers: Vec<_> = (0..CALLERS)
                        .map(|i| {
                            let (gate, principal, args) =
                                (gate.clone(), principal.clone(), args.clone());
                            tokio::spawn(async move {
                                let session = format!("s{i}");
                                for _ in 0..iters.div_ceil(CALLERS) {
                                    let call = ToolCall::new("c1", tool, args.clone());
                                    std::hint::black_box(
                                        gate.call(&session, call, &principal).await,
                                    );
                                }
                            })
                        })
                        .collect();
                    for caller in callers {
                        caller.await.unwrap();
                    }
                    start.elapsed()
                })
            })
        });
    }
}

/// Concurrent callers in the `8 callers` measurements.
const CALLERS: u64 = 8;

criterion_group!(benches, bench);
criterion_main!(benches);
