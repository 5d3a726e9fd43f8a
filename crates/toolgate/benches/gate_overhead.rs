//! The gate's own cost per call, on a mock tool with a small schema.
//!
//! Three measurements in one run, so they share the machine's noise:
//! - `direct`: the tool's own call, no gate (the baseline);
//! - `gate/memory`: the whole gate with the in-memory store;
//! - `gate/sqlite`: the whole gate with the durable SQLite store (WAL) in a temp dir.
//!
//! Overhead is `gate/* − direct`. Run: `cargo bench -p toolgate --bench gate_overhead`.

use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate::{Catalog, Gate, MemoryGateStore, Principal, SqliteStore, ToolCall, ToolCtx};

const SPEC: &str = r#"
tools:
  - name: lookup_order
    description: Look up an order.
    effect: read
    parameters:
      type: object
      properties:
        order_id: {type: string, pattern: "^A-[0-9]+$"}
        verbose: {type: boolean, default: false}
      required: [order_id]
      additionalProperties: false
    response: {order_id: "{args.order_id}", status: shipped}
"#;

fn gate(store: Arc<dyn toolgate::GateStore>) -> Gate {
    let spec = toolgate::spec::check(SPEC)
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
    let mut timed = |name: &str, store: &dyn Fn() -> Arc<dyn toolgate::GateStore>| {
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let gate = gate(store());
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let call = ToolCall::new("c1", "lookup_order", args.clone());
                        std::hint::black_box(gate.call("s", call, &principal).await);
                    }
                    start.elapsed()
                })
            })
        });
    };
    timed("gate/memory", &|| Arc::new(MemoryGateStore::default()));
    let dir = tempfile::tempdir().unwrap();
    let counter = std::sync::atomic::AtomicUsize::new(0);
    timed("gate/sqlite", &|| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new(SqliteStore::open_in_dir(dir.path().join(n.to_string())).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
