//! What code mode costs: starting a program, and a tool call from a program
//! against the same call made through `Gate::call` directly.
//!
//! - `interpreter/start_to_first_call`: a 20-line program parsed, compiled and run
//!   in the interpreter up to its first tool call (what the worker does after it
//!   has started);
//! - `worker/one_call` and `worker/100_calls`: a whole run through a warm
//!   `CodeMode::run` (as `serve` runs it: a fresh worker process started ahead,
//!   the program, its calls through the gate, the result). The cost of one call
//!   from a program is `(100_calls − one_call) / 99` (100 is the default
//!   `max_calls`); `cold/one_call` is the same run starting its worker when it
//!   begins (as `toolgate code run` does);
//! - `bare/one_call`, `bare/100_calls` and `bare/1000_calls`: the same runs of a
//!   program that does nothing but its calls, so `(bare/100_calls −
//!   bare/one_call) / 99 − gate/direct` is what a call from a program adds to
//!   the call itself (the 20-line program's figure also counts the work it does
//!   between calls), and `(bare/1000_calls − bare/100_calls) / 900 −
//!   gate/direct` the same once the worker is past its first calls (the limit
//!   on calls raised to 1,000 for that run);
//! - `gate/direct`: one `Gate::call` of the same tool (in-memory store);
//! - `cpu/gate_direct`, `cpu/one_call`, `cpu/100_calls` and `cpu/bare_…`:
//!   `gate/direct` and the runs of `worker/…` and `bare/…`, timed in CPU
//!   time instead of wall-clock time — this process's (the gate, the runtime,
//!   starting workers) and its finished workers' — which a busy machine does not
//!   stretch the way it stretches a pipe's round trips;
//! - `pause/run_to_pending`: a whole run of a program whose second call needs
//!   approval, up to its pause: the program in a warm worker, its snapshot, the
//!   sealed row written to a SQLite store on disk;
//! - `resume/approved_to_end`: resuming that program once its approval is
//!   answered: the row taken and checked, the call submitted again, a warm
//!   worker loading the snapshot and running the program to its end (the pause
//!   and the approval are made outside the timing).
//!
//! - `floor/tokio_pipe_round_trip` and `floor/blocking_pipe_round_trip`: a
//!   call-sized frame sent to another process (`cat`) and read back, through
//!   this runtime's reactor as the gate reads a worker, and with blocking reads:
//!   the floor under a call from a program with process isolation.
//!
//! A call from a program makes 5 syscalls (`strace -f` over `bare/100_calls`):
//! the gate's epoll_wait, read and write, the worker's write and read — the
//! same as the floor's round trip.
//!
//! The machine's load moves every figure that starts a process or crosses a
//! pipe: quote them with the load average of the run. Each side of the pipe
//! watches it for up to 50 µs before it sleeps (`spin.rs`), so that on two
//! CPUs neither wakes the other's idle CPU; `TOOLGATE_CODE_SPIN_MICROS=0` turns
//! that off, to time both in one sitting, and on one core (`taskset -c 0 cargo
//! bench ...`; the worker inherits it) there is none. `TOOLGATE_BENCH_WORKER`
//! names another worker binary, to time two builds against each other in one
//! sitting.
//!
//! Run: `cargo bench -p toolgate --bench code_mode --no-default-features --features code-mode`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, MontyObject, NameLookupResult, PrintWriter, ResourceLimits, ResourceTracker,
};
use serde_json::json;
use toolgate::code_mode::{CodeLimits, CodeMode, WorkerCommand};
use toolgate::{
    Catalog, Gate, MemoryGateStore, Principal, SqliteStore, ToolCall, store::ApprovalStore,
};

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
  - name: refund
    description: Refund an order.
    effect: write
    parameters:
      type: object
      properties:
        order_id: {type: string}
      required: [order_id]
    response: {refunded: true}
policy:
  rules:
    - tools: refund
      decision: ask
      reason: refunds need a person
"#;

/// Pauses at its second call.
const PAUSING: &str = r#"order = lookup_order(order_id="A-1001")
if order["status"] == "shipped":
    done = refund(order_id=order["order_id"])
done
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

/// Nothing but the calls: what a call costs a program, without the work a real
/// program does between its calls.
fn bare(calls: usize) -> String {
    format!("for _ in range({calls}):\n    lookup_order(order_id=\"A-1001\")\n")
}

fn gate() -> Gate {
    gate_over(Arc::new(MemoryGateStore::default()))
}

fn gate_over(store: Arc<dyn toolgate::GateStore>) -> Gate {
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
                ResourceLimits::default().max_feed_duration(Duration::from_secs(10)),
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
                                NameLookupResult::Value(MontyObject::function(name, None)),
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

    c.bench_function("cpu/gate_direct", |b| {
        b.iter_custom(|iters| {
            let before = cpu_time();
            runtime.block_on(async {
                for _ in 0..iters {
                    let call = ToolCall::new("c1", "lookup_order", json!({"order_id": "A-1001"}));
                    std::hint::black_box(gate.call("s", call, &principal).await);
                }
            });
            cpu_time().saturating_sub(before)
        })
    });

    // `TOOLGATE_BENCH_WORKER` names another worker binary, so that builds of two
    // versions can be timed against each other in one sitting.
    let worker_program = std::env::var_os("TOOLGATE_BENCH_WORKER")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_toolgate-code-worker").into());
    let worker = || WorkerCommand::program(worker_program.clone());
    let cold = CodeMode::new(worker());
    let mode = CodeMode::new(worker()).warm();
    let many = CodeMode::new(worker()).warm().limits(CodeLimits {
        max_calls: 1000,
        ..CodeLimits::default()
    });
    for (name, mode, code) in [
        ("cold/one_call", &cold, program(1)),
        ("worker/one_call", &mode, program(1)),
        ("worker/100_calls", &mode, program(100)),
        ("bare/one_call", &mode, bare(1)),
        ("bare/100_calls", &mode, bare(100)),
        ("bare/1000_calls", &many, bare(1000)),
    ] {
        c.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| async {
                let run = mode.run(&gate, "s", &principal, &code).await;
                assert!(run.is_ok(), "{run:?}");
                std::hint::black_box(run)
            })
        });
    }
    for (name, code) in [
        ("cpu/one_call", program(1)),
        ("cpu/100_calls", program(100)),
        ("cpu/bare_one_call", bare(1)),
        ("cpu/bare_100_calls", bare(100)),
    ] {
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let before = cpu_time();
                for _ in 0..iters {
                    let run = runtime.block_on(mode.run(&gate, "s", &principal, &code));
                    assert!(run.is_ok(), "{run:?}");
                }
                cpu_time().saturating_sub(before)
            })
        });
    }

    // The floor under a call from a program: a frame of a call's size sent to
    // another process and read back, through this runtime's reactor as the gate
    // reads a worker (`floor/tokio_pipe_round_trip`) and with blocking reads on
    // both sides (`floor/blocking_pipe_round_trip`). `cat` echoes it.
    let frame = {
        let body =
            br#"{"type":"call","function":"lookup_order","arguments":{"order_id":"A-1001"}}"#;
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        frame
    };
    let mut cat = runtime.block_on(async {
        tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("cat starts")
    });
    let mut cat_in = cat.stdin.take().unwrap();
    let mut cat_out = tokio::io::BufReader::new(cat.stdout.take().unwrap());
    c.bench_function("floor/tokio_pipe_round_trip", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let start = Instant::now();
                for _ in 0..iters {
                    cat_in.write_all(&frame).await.unwrap();
                    let mut back = vec![0u8; frame.len()];
                    cat_out.read_exact(&mut back).await.unwrap();
                    std::hint::black_box(back);
                }
                start.elapsed()
            })
        })
    });
    let mut blocking = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cat starts");
    let mut blocking_in = blocking.stdin.take().unwrap();
    let mut blocking_out = blocking.stdout.take().unwrap();
    c.bench_function("floor/blocking_pipe_round_trip", |b| {
        b.iter(|| {
            use std::io::{Read, Write};
            blocking_in.write_all(&frame).unwrap();
            let mut back = vec![0u8; frame.len()];
            blocking_out.read_exact(&mut back).unwrap();
            std::hint::black_box(back)
        })
    });
    drop(blocking_in);
    let _ = blocking.wait();

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open_in_dir(dir.path()).unwrap());
    let sqlite_gate = gate_over(store.clone());
    let mut session = 0u64;
    let pause = |session: u64| {
        let run =
            runtime.block_on(mode.run(&sqlite_gate, &format!("s{session}"), &principal, PAUSING));
        assert!(run.is_pending(), "{run:?}");
        run
    };
    c.bench_function("pause/run_to_pending", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                session += 1;
                let start = Instant::now();
                std::hint::black_box(pause(session));
                total += start.elapsed();
            }
            total
        })
    });
    c.bench_function("resume/approved_to_end", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                session += 1;
                let run = pause(session);
                let approval = run.approval_id.as_deref().unwrap();
                store.approve(approval, None, SystemTime::now()).unwrap();
                let run_id = run.run_id.as_deref().unwrap();
                let start = Instant::now();
                let resumed = runtime.block_on(mode.resume(&sqlite_gate, run_id, &principal));
                total += start.elapsed();
                assert!(resumed.is_ok(), "{resumed:?}");
            }
            total
        })
    });
}

/// CPU time used so far by this process and by its children that have exited
/// and been waited for (each run waits for its worker).
fn cpu_time() -> Duration {
    let used = |who| {
        // SAFETY: getrusage writes the struct it is given and nothing else.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut usage) };
        let time = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        time(usage.ru_utime) + time(usage.ru_stime)
    };
    used(libc::RUSAGE_SELF) + used(libc::RUSAGE_CHILDREN)
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
