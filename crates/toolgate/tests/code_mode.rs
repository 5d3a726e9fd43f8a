//! Code mode, run for real: each program runs in a worker process (the
//! `toolgate-code-worker` binary of this crate) under OS limits, and each tool call
//! in it takes the gate. Hostile programs end with an error that names the limit
//! they hit, and the same gate goes on serving the next program and plain calls.

#![cfg(feature = "code-mode")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate::code_mode::{CodeLimits, CodeMode, CodeRun, WorkerCommand, python_literal};
use toolgate::{
    Catalog, Decision, Gate, GateOptions, Policy, Principal, Tool, ToolCall, ToolCtx, ToolError,
    ToolHandler, policy::PolicyRule,
};

/// Send a value back as it came.
#[derive(Tool)]
#[tool(effect = "read")]
struct Echo(Arc<AtomicUsize>);

#[derive(Deserialize, Serialize, JsonSchema)]
struct Payload {
    value: Value,
}

impl ToolHandler for Echo {
    type Input = Payload;
    type Output = Payload;
    async fn call(&self, _ctx: &ToolCtx, p: Payload) -> Result<Payload, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(p)
    }
}

/// Look up an order by its number.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OrderQuery {
    order_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Order {
    order_id: String,
    status: String,
}

impl ToolHandler for LookupOrder {
    type Input = OrderQuery;
    type Output = Order;
    async fn call(&self, _ctx: &ToolCtx, q: OrderQuery) -> Result<Order, ToolError> {
        Ok(Order {
            order_id: q.order_id,
            status: "shipped".into(),
        })
    }
}

/// Refund an order (the policy denies it).
#[derive(Tool)]
#[tool(effect = "read")]
struct RefundOrder;

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

impl ToolHandler for RefundOrder {
    type Input = Nothing;
    type Output = bool;
    async fn call(&self, _ctx: &ToolCtx, _: Nothing) -> Result<bool, ToolError> {
        Ok(true)
    }
}

/// Fails, always.
#[derive(Tool)]
#[tool(effect = "read")]
struct Broken;

impl ToolHandler for Broken {
    type Input = Nothing;
    type Output = bool;
    async fn call(&self, _ctx: &ToolCtx, _: Nothing) -> Result<bool, ToolError> {
        Err(ToolError::Permanent {
            message: "the warehouse is on fire".into(),
        })
    }
}

/// Takes longer than the gate's deadline (a read: one past its deadline is a
/// plain timeout, which may be tried again).
#[derive(Tool)]
#[tool(effect = "read")]
struct Slow;

impl ToolHandler for Slow {
    type Input = Nothing;
    type Output = bool;
    async fn call(&self, _ctx: &ToolCtx, _: Nothing) -> Result<bool, ToolError> {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok(true)
    }
}

struct Desk {
    gate: Gate,
    echoes: Arc<AtomicUsize>,
}

fn desk() -> Desk {
    let echoes = Arc::new(AtomicUsize::new(0));
    let catalog = Catalog::new()
        .with_native(Echo(echoes.clone()))
        .unwrap()
        .with_native(LookupOrder)
        .unwrap()
        .with_native(RefundOrder)
        .unwrap()
        .with_native(Broken)
        .unwrap()
        .with_native(Slow)
        .unwrap();
    let policy = Policy {
        rules: vec![
            PolicyRule {
                mode: Default::default(),
                tools: "refund_order".into(),
                decision: Decision::Deny,
                when: None,
                answered_by: None,
                reason: Some("refunds go through the finance team".into()),
            },
            PolicyRule {
                mode: Default::default(),
                tools: "slow".into(),
                decision: Decision::Allow,
                when: None,
                answered_by: None,
                reason: None,
            },
        ],
        ..Policy::default()
    };
    let gate = Gate::builder(catalog)
        .policy(policy)
        .options(GateOptions {
            default_timeout: Duration::from_millis(200),
            backoff: Duration::from_millis(1),
            ..GateOptions::default()
        })
        .build();
    Desk { gate, echoes }
}

fn worker() -> WorkerCommand {
    WorkerCommand::program(env!("CARGO_BIN_EXE_toolgate-code-worker"))
}

fn code_mode() -> CodeMode {
    CodeMode::new(worker()).limits(CodeLimits {
        wall_clock: Duration::from_secs(20),
        interpreter_time: Duration::from_secs(2),
        max_memory_bytes: 512 << 20,
        ..CodeLimits::default()
    })
}

async fn run(desk: &Desk, code: &str) -> CodeRun {
    code_mode()
        .run(&desk.gate, "s", &Principal::operator(), code)
        .await
}

/// The run ended in an error of `kind` whose message says `words`.
fn failed(run: &CodeRun, kind: &str, words: &str) -> String {
    let error = run
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("expected an error, got {run:?}"));
    assert_eq!(error.kind, kind, "{error:?}");
    let all = format!("{}\n{}", error.message, error.traceback);
    eprintln!("{all}");
    assert!(all.contains(words), "`{words}` not in: {all}");
    all
}

/// A hostile program hit `limit`; the message names it and how to raise it, and
/// the gate still serves a program and a plain call afterwards.
async fn stopped_by(desk: &Desk, code: &str, limit: &str) {
    let run = run(desk, code).await;
    let message = failed(&run, "limit", &format!("code_mode.{limit}"));
    assert_eq!(run.error.as_ref().unwrap().limit, Some(limit), "{message}");
    assert!(message.contains("raise it"), "{message}");
    still_serving(desk).await;
}

async fn still_serving(desk: &Desk) {
    let after = run(desk, "lookup_order(order_id='A-1')['status']").await;
    assert_eq!(after.value, Some(json!("shipped")), "{after:?}");
    let plain = desk
        .gate
        .call(
            "s",
            ToolCall::new("c", "lookup_order", json!({"order_id": "A-2"})),
            &Principal::operator(),
        )
        .await;
    assert!(plain.is_ok(), "{plain:?}");
}

#[tokio::test]
async fn a_program_calls_tools_through_the_gate_and_returns_its_last_expression() {
    let desk = desk();
    let run = run(
        &desk,
        "orders = [lookup_order(order_id=f'A-{i}') for i in range(3)]\n\
         print('looked up', len(orders))\n\
         [o['order_id'] for o in orders if o['status'] == 'shipped']",
    )
    .await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(run.value, Some(json!(["A-0", "A-1", "A-2"])));
    assert_eq!(run.printed, "looked up 3\n");
    assert_eq!(run.calls, 3);
    let text = run.text_for_model(16_000);
    assert!(
        text.starts_with("<tool-output source=\"run_code\""),
        "{text}"
    );
    assert!(text.contains("result: [\"A-0\",\"A-1\",\"A-2\"]"), "{text}");
}

#[tokio::test]
async fn json_crosses_into_a_program_and_back_faithfully() {
    let desk = desk();
    let value = json!({
        "big": 18446744073709551615u64,
        "small": -9223372036854775808i64,
        "float": 0.1,
        "two": 2.0,
        "none": null,
        "nested": [{"a": [1, [2, {"b": true}]]}],
        "unicode": "año 日本 🦀 \u{0}"
    });
    let code = format!(
        "v = {}\nback = echo(value=v)['value']\nassert back == v\nassert type(back['two']) is float\nback",
        python_literal(&value)
    );
    let run = run(&desk, &code).await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(run.value, Some(value));
    assert_eq!(desk.echoes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_integer_past_64_bits_is_refused_at_the_call_site_and_nothing_runs() {
    let desk = desk();
    let run = run(&desk, "echo(value=2**70)").await;
    failed(&run, "exception", "ValueError");
    failed(&run, "exception", "str(n)");
    assert_eq!(desk.echoes.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn refusals_become_python_exceptions_the_program_can_catch() {
    let desk = desk();
    let run = run(
        &desk,
        "caught = {}\n\
         def attempt(name, f):\n\
         \x20   try:\n\
         \x20       f()\n\
         \x20   except ValueError as e:\n\
         \x20       caught[name] = 'ValueError'\n\
         \x20   except PermissionError as e:\n\
         \x20       caught[name] = 'PermissionError'\n\
         \x20   except TimeoutError as e:\n\
         \x20       caught[name] = 'TimeoutError'\n\
         \x20   except RuntimeError as e:\n\
         \x20       caught[name] = 'RuntimeError'\n\
         attempt('invalid', lambda: lookup_order(order='A-1'))\n\
         attempt('denied', lambda: refund_order())\n\
         attempt('timeout', lambda: slow())\n\
         attempt('failed', lambda: broken())\n\
         caught",
    )
    .await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(
        run.value,
        Some(json!({
            "invalid": "ValueError",
            "denied": "PermissionError",
            "timeout": "TimeoutError",
            "failed": "RuntimeError"
        }))
    );
}

#[tokio::test]
async fn an_uncaught_refusal_returns_the_traceback_with_the_gates_words() {
    let desk = desk();
    let run = run(&desk, "x = 1\nrefund_order()\n").await;
    let text = failed(&run, "exception", "PermissionError");
    assert!(
        text.contains("refunds go through the finance team"),
        "{text}"
    );
    assert!(text.contains("line 2"), "{text}");
}

#[tokio::test]
async fn a_tool_the_principal_cannot_see_is_not_a_name_in_the_program() {
    let desk = desk();
    let viewer = Principal {
        scopes: vec!["lookup_order".into()],
        claims: Default::default(),
        ..Principal::operator()
    };
    let run = code_mode()
        .run(&desk.gate, "s", &viewer, "echo(value=1)")
        .await;
    failed(&run, "exception", "NameError");
    assert_eq!(desk.echoes.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_syntax_error_is_reported_with_line_and_column_before_anything_runs() {
    let desk = desk();
    let run = run(&desk, "echo(value=1)\nx = (1 +\n").await;
    let error = run.error.as_ref().unwrap();
    eprintln!("{error:?}");
    assert_eq!(error.kind, "syntax", "{error:?}");
    assert!(error.line.is_some() && error.column.is_some(), "{error:?}");
    assert!(error.message.contains("line"), "{}", error.message);
    assert!(error.message.contains("nothing ran"), "{}", error.message);
    assert_eq!(desk.echoes.load(Ordering::SeqCst), 0);
    assert_eq!(run.calls, 0);
}

#[tokio::test]
async fn an_endless_loop_is_stopped_by_the_interpreter_time_limit() {
    stopped_by(&desk(), "while True:\n    pass\n", "interpreter_time").await;
}

#[tokio::test]
async fn a_string_of_ten_terabytes_is_stopped_by_the_memory_limit() {
    stopped_by(&desk(), "'x' * 10**13", "max_memory_bytes").await;
}

#[tokio::test]
async fn a_list_grown_in_a_loop_is_stopped_by_the_memory_limit() {
    let desk = desk();
    // Time enough that memory, not time, is the limit this program meets.
    let patient = CodeMode::new(worker()).limits(CodeLimits {
        interpreter_time: Duration::from_secs(60),
        max_memory_bytes: 256 << 20,
        ..CodeLimits::default()
    });
    let run = patient
        .run(
            &desk.gate,
            "s",
            &Principal::operator(),
            "xs = []\nwhile True:\n    xs.append('x' * 1000000 + str(len(xs)))\n",
        )
        .await;
    let message = failed(&run, "limit", "code_mode.max_memory_bytes");
    assert!(
        message.contains("256 MiB") && message.contains("raise it"),
        "{message}"
    );
    still_serving(&desk).await;
}

#[tokio::test]
async fn deep_recursion_is_stopped_by_the_recursion_limit() {
    let desk = desk();
    let run = run(&desk, "def f(n):\n    return f(n + 1)\nf(0)\n").await;
    let text = failed(&run, "exception", "RecursionError");
    assert!(text.contains("code_mode.max_recursion_depth"), "{text}");
    assert_eq!(
        run.error.as_ref().unwrap().limit,
        Some("max_recursion_depth")
    );
    still_serving(&desk).await;
}

#[tokio::test]
async fn a_million_prints_are_stopped_by_the_output_limit() {
    stopped_by(
        &desk(),
        "for i in range(1000000):\n    print('line', i)\n",
        "max_output_bytes",
    )
    .await;
}

#[tokio::test]
async fn ten_thousand_tool_calls_are_stopped_by_the_call_limit() {
    let desk = desk();
    stopped_by(
        &desk,
        "for i in range(10000):\n    try:\n        echo(value=i)\n    except Exception:\n        pass\n",
        "max_calls",
    )
    .await;
    assert_eq!(desk.echoes.load(Ordering::SeqCst), 100);
}

#[tokio::test]
async fn a_program_that_outruns_the_wall_clock_is_stopped() {
    let desk = desk();
    let short = CodeMode::new(worker()).limits(CodeLimits {
        wall_clock: Duration::from_millis(300),
        ..CodeLimits::default()
    });
    let run = short
        .run(
            &desk.gate,
            "s",
            &Principal::operator(),
            "for i in range(10):\n    try:\n        slow()\n    except TimeoutError:\n        pass\n",
        )
        .await;
    failed(&run, "limit", "code_mode.wall_clock");
    still_serving(&desk).await;
}

#[tokio::test]
async fn import_os_gives_a_module_whose_every_call_raises_permission_error() {
    let desk = desk();
    for call in ["os.getenv('HOME')", "os.environ['HOME']", "os.listdir('/')"] {
        let run = run(&desk, &format!("import os\n{call}\n")).await;
        let error = run.error.as_ref().expect("os must give nothing away");
        assert!(
            matches!(
                error.exception.as_deref(),
                Some("PermissionError" | "AttributeError")
            ),
            "{call}: {error:?}"
        );
    }
    still_serving(&desk).await;
}

#[tokio::test]
async fn opening_etc_passwd_raises_permission_error() {
    let desk = desk();
    let run = run(&desk, "open('/etc/passwd').read()").await;
    failed(&run, "exception", "PermissionError");
    failed(&run, "exception", "call a tool instead");
}

#[tokio::test]
async fn dunder_import_is_not_available() {
    let desk = desk();
    let run = run(&desk, "__import__('os').system('true')").await;
    failed(&run, "exception", "NameError");
}

#[test]
fn a_worker_started_without_its_os_limits_refuses_to_run_anything() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate-code-worker"))
        .env_remove("TOOLGATE_CODE_WORKER_LIMITS")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no limits in TOOLGATE_CODE_WORKER_LIMITS"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_worker_that_cannot_start_is_an_error_not_a_panic() {
    let desk = desk();
    let missing = CodeMode::new(WorkerCommand::program("/nonexistent/toolgate-worker"));
    let run = missing
        .run(&desk.gate, "s", &Principal::operator(), "1")
        .await;
    failed(&run, "worker", "could not start");
}

#[tokio::test]
async fn an_expression_nested_a_hundred_thousand_deep_ends_the_program_not_the_gateway() {
    let desk = desk();
    let code = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let run = run(&desk, &code).await;
    let error = run.error.as_ref().expect("it cannot succeed");
    assert!(
        error.kind == "syntax" || error.limit == Some("max_recursion_depth"),
        "{error:?}"
    );
    still_serving(&desk).await;
}

#[tokio::test]
async fn the_audit_log_records_the_program_with_its_hash_and_each_inner_call_under_its_run_id() {
    let desk = desk();
    let code = "echo(value=1)\necho(value=2)\n";
    let run = run(&desk, code).await;
    assert!(run.is_ok(), "{run:?}");
    let records = desk.gate.store().tail(10).unwrap();
    let program: Vec<_> = records
        .iter()
        .filter(|r| r.entry.tool == "run_code")
        .collect();
    assert_eq!(program.len(), 2, "an intent and a completion: {records:#?}");
    let intent = &program[0].entry;
    assert_eq!(intent.kind, toolgate::audit::RecordKind::Intent);
    assert_eq!(intent.arguments["code"], code);
    assert_eq!(
        intent.arguments["sha256"],
        toolgate::audit::content_hash(&Value::String(code.into()))
    );
    let completion = &program[1].entry;
    assert_eq!(completion.outcome.as_deref(), Some("ok"));
    assert_eq!(completion.run_id, intent.run_id);
    let inner: Vec<&str> = records
        .iter()
        .filter(|r| {
            r.entry.tool == "echo" && r.entry.kind == toolgate::audit::RecordKind::Completion
        })
        .map(|r| r.entry.call_id.as_str())
        .collect();
    assert_eq!(
        inner,
        [
            format!("{}-1", intent.run_id),
            format!("{}-2", intent.run_id)
        ]
    );
}

#[tokio::test]
async fn a_write_cut_off_by_the_wall_clock_is_completed_as_cancelled_not_left_pending() {
    let patient = Gate::builder(Catalog::new().with_native(Slow).unwrap())
        .policy(Policy {
            effects: toolgate::policy::EffectDecisions {
                write: Decision::Allow,
                ..Default::default()
            },
            ..Policy::default()
        })
        .options(GateOptions {
            default_timeout: Duration::from_secs(30),
            ..GateOptions::default()
        })
        .build();
    let short = CodeMode::new(worker()).limits(CodeLimits {
        wall_clock: Duration::from_millis(300),
        ..CodeLimits::default()
    });
    let run = short
        .run(&patient, "s", &Principal::operator(), "slow()\n")
        .await;
    failed(&run, "limit", "code_mode.wall_clock");
    assert!(
        patient.store().pending().unwrap().is_empty(),
        "the write's intent has its completion"
    );
    let completion = patient
        .store()
        .tail(usize::MAX)
        .unwrap()
        .into_iter()
        .find(|r| r.entry.tool == "slow" && r.entry.kind == toolgate::audit::RecordKind::Completion)
        .expect("a completion of the cut-off call");
    assert_eq!(completion.entry.outcome.as_deref(), Some("cancelled"));
}
