//! Makes N calls through a gate, for counting the instructions a call costs
//! with callgrind, which load does not move: run it with N and 2N and take the
//! difference over N (the setup cancels out).
//!
//! `cargo build --release -p toolgate --example gate_calls`, then
//! `valgrind --tool=callgrind target/release/examples/gate_calls STORE TOOL N`,
//! where STORE is `memory` or `sqlite` (durable, in a temporary directory),
//! TOOL is `read` (a lookup) or `write` (a call with effects), and N the calls.
//! `GATE_CALLERS=8` shares the N calls among eight callers, each in a
//! conversation of its own, on two worker threads (as `gate/sqlite/8 callers`).

use std::sync::Arc;

use serde_json::json;
use toolgate::{Catalog, Gate, MemoryGateStore, Principal, SqliteStore, ToolCall};

/// The tools of the `gate_overhead` benchmark: a lookup and a call with effects.
const SPEC: &str = include_str!("../benches/gate_calls.yaml");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: gate_calls memory|sqlite read|write N";
    let (store, tool, calls) = match args.as_slice() {
        [_, store, tool, n] => (
            store.as_str(),
            tool.as_str(),
            n.parse::<usize>().expect(usage),
        ),
        _ => panic!("{usage}"),
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store: Arc<dyn toolgate::GateStore> = match store {
        "memory" => Arc::new(MemoryGateStore::default()),
        "sqlite" => Arc::new(SqliteStore::open_in_dir(dir.path()).expect("the store opens")),
        _ => panic!("{usage}"),
    };
    let tool = match tool {
        "read" => "lookup_order",
        "write" => "tag_order",
        _ => panic!("{usage}"),
    };
    let spec = toolgate::spec::check(SPEC).spec.expect("the spec is valid");
    let gate = Gate::from_spec(&spec, "bench.yaml", &Catalog::new(), store).expect("the gate");
    let callers: usize = std::env::var("GATE_CALLERS").map_or(1, |n| n.parse().expect(usage));
    let runtime = if callers == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    }
    .enable_all()
    .build()
    .expect("a runtime");
    let gate = Arc::new(gate);
    runtime.block_on(async {
        let callers: Vec<_> = (0..callers)
            .map(|c| {
                let gate = gate.clone();
                tokio::spawn(async move {
                    let principal = Principal::operator();
                    let session = format!("s{c}");
                    for i in (c..calls).step_by(callers) {
                        let call =
                            ToolCall::new(format!("c{i}"), tool, json!({"order_id": "A-1001"}));
                        let outcome = gate.call(&session, call, &principal).await;
                        assert!(outcome.is_ok(), "{outcome:?}");
                    }
                })
            })
            .collect();
        for caller in callers {
            caller.await.expect("the caller finishes");
        }
    });
}
