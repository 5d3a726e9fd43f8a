//! What code mode costs: starting a program, and a tool call from a program
//! against the same call made through `Gate::call` directly.
//!
//! - `interpreter/start_to_first_call`: a 20-line program parsed, compiled and run
//!   in the interpreter up to its first tool call (what the worker does after it
//!   has started);
//! - `worker/one_call` and `worker/100_calls`: a whole run through
//!   `CodeMode::run` — a fresh worker process, the program, its calls through the
//!   gate, the result. The cost of one call from a program is
//!   `(100_calls − one_call) / 99` (100 is the default `max_calls`);
//! - `gate/direct`: one `Gate::call` of the same tool (in-memory store).
//!
//! Run: `cargo bench -p toolgate --bench code_mode --no-default-features --features code-mode`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, MontyObject, NameLookupResult, PrintWriter, ResourceLimits, ResourceTracker,
};
use serde_json::json;
use toolgate::code_mode::{CodeMode, WorkerCommand};
use toolgate::{Catalog, Gate, MemoryGateStore, Principal, ToolCall};

const SPEC: &str = r#"
tools:
  - name: lookup_order
    description: Look up an order.
    effect: read
    parameters:
      type: object
      properties:
        order_id: {type: string, pattern: "^A-[0-9]+$"}
      required: [order_id]
      additionalProperties: false
    response: {order_id: "{args.order_id}", status: shipped, total_cents: 1250}
"#;

/// Twenty lines: helpers, a loop, a comprehension, string formatting; its first
/// tool call comes after all of it is defined.
const PROGRAM: &str = r#"def cents(amount):
    return f"{amount // 100}.{amount % 100:02d}"

def summarize(order):
    status = order["status"]
    total = cents(order["total_cents"])
    return f"{order['order_id']}: {status}, {total}"

wanted = ["A-1001"]
seen = {}
lines = []
for order_id in wanted * CALLS:
    order = lookup_order(order_id=order_id)
    seen[order_id] = order["status"]
    lines.append(summarize(order))
shipped = [k for k, v in seen.items() if v == "shipped"]
report = {"shipped": shipped, "count": len(lines)}
if not shipped:
    report["note"] = "nothing shipped"
report
"#;

fn program(calls: usize) -> String {
    format!("CALLS = {calls}\n{PROGRAM}")
}

fn gate() -> Gate {
    let spec = toolgate::spec::check(SPEC)
        .spec
        .expect("the bench spec is valid");
    Gate::from_spec(
        &spec,
        "bench.yaml",
        &Catalog::new(),
        Arc::new(MemoryGateStore::default()),
    )
    .expect("the bench catalog builds")
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let principal = Principal::operator();

    let source = program(1);
    c.bench_function("interpreter/start_to_first_call", |b| {
        b.iter(|| {
            let runner = MontyRun::new(
                source.clone(),
                "program.py",
                Vec::new(),
                CompileOptions::default(),
            )
            .unwrap();
            let tracker = ResourceTracker::new(
                ResourceLimits::default().max_duration(Duration::from_secs(10)),
            );
            let mut progress = runner
                .start(Vec::new(), tracker, PrintWriter::Disabled)
                .unwrap();
            loop {
                progress = match progress {
                    RunProgress::NameLookup(lookup) => {
                        let name = lookup.name.clone();
                        lookup
                            .resume(
                                NameLookupResult::Value(MontyObject::Function {
                                    name,
                                    docstring: None,
                                }),
                                PrintWriter::Disabled,
                            )
                            .unwrap()
                    }
                    RunProgress::FunctionCall(call) => break std::hint::black_box(call),
                    other => panic!("the program should reach a call: {other:?}"),
                };
            }
        })
    });

    let gate = gate();
    c.bench_function("gate/direct", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let call = ToolCall::new("c1", "lookup_order", json!({"order_id": "A-1001"}));
                    std::hint::black_box(gate.call("s", call, &principal).await);
                }
                start.elapsed()
            })
        })
    });

    let mode = CodeMode::new(WorkerCommand::program(env!(
        "CARGO_BIN_EXE_toolgate-code-worker"
    )));
    for (name, calls) in [("worker/one_call", 1), ("worker/100_calls", 100)] {
        let code = program(calls);
        c.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| async {
                let run = mode.run(&gate, "s", &principal, &code).await;
                assert!(run.is_ok(), "{run:?}");
                std::hint::black_box(run)
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
