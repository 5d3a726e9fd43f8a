//! `await` and `asyncio.gather` in a program: tool calls awaited together run
//! concurrently through the gate, each a `Gate::call` of its own, in a real
//! worker process.

#![cfg(feature = "code-mode")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate::code_mode::{CodeLimits, CodeMode, WorkerCommand};
use toolgate::{
    Catalog, Decision, Gate, Policy, Principal, Tool, ToolCtx, ToolError, ToolHandler,
    policy::PolicyRule,
};

/// Fetch a page slowly; counts how many fetches are in flight at once.
#[derive(Tool)]
#[tool(effect = "read")]
struct Fetch {
    in_flight: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Page {
    page: u64,
}

impl ToolHandler for Fetch {
    type Input = Page;
    type Output = Page;
    async fn call(&self, _ctx: &ToolCtx, p: Page) -> Result<Page, ToolError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(p)
    }
}

/// Delete a page (the policy asks a person first).
#[derive(Tool)]
#[tool(effect = "write")]
struct Delete;

impl ToolHandler for Delete {
    type Input = Page;
    type Output = bool;
    async fn call(&self, _ctx: &ToolCtx, _p: Page) -> Result<bool, ToolError> {
        Ok(true)
    }
}

fn setup() -> (Gate, Arc<AtomicUsize>) {
    let most = Arc::new(AtomicUsize::new(0));
    let catalog = Catalog::new()
        .with_native(Fetch {
            in_flight: Arc::new(AtomicUsize::new(0)),
            most: most.clone(),
        })
        .unwrap()
        .with_native(Delete)
        .unwrap();
    let policy = Policy {
        rules: vec![PolicyRule {
            mode: Default::default(),
            tools: "delete".into(),
            decision: Decision::Ask,
            reason: Some("deleting needs a person".into()),
            when: None,
            answered_by: None,
        }],
        ..Policy::default()
    };
    (Gate::builder(catalog).policy(policy).build(), most)
}

fn code_mode() -> CodeMode {
    CodeMode::new(WorkerCommand::program(env!(
        "CARGO_BIN_EXE_toolgate-code-worker"
    )))
    .limits(CodeLimits {
        wall_clock: Duration::from_secs(20),
        max_memory_bytes: 512 << 20,
        ..CodeLimits::default()
    })
}

#[tokio::test]
async fn asyncio_gather_runs_tool_calls_concurrently_through_the_gate() {
    let (gate, most) = setup();
    let code = r#"
import asyncio
pages = await asyncio.gather(fetch(page=1), fetch(page=2), fetch(page=3))
one = await fetch(page=4)
[p["page"] for p in pages] + [one["page"]]
"#;
    let started = Instant::now();
    let run = code_mode()
        .run(&gate, "s", &Principal::operator(), code)
        .await;
    let took = started.elapsed();
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(run.value, Some(json!([1, 2, 3, 4])));
    assert_eq!(run.calls, 4);
    assert_eq!(
        most.load(Ordering::SeqCst),
        3,
        "the gathered three ran at once"
    );
    assert!(
        took < Duration::from_millis(1100),
        "three concurrent calls and one more took {took:?}"
    );
}

#[tokio::test]
async fn a_call_awaited_alone_that_needs_approval_pauses_the_program() {
    let (gate, _) = setup();
    let code = r#"
async def main():
    await delete(page=1)
    return "deleted"
await main()
"#;
    let run = code_mode()
        .run(&gate, "s", &Principal::operator(), code)
        .await;
    assert_eq!(run.status, "pending_approval", "{run:?}");
    assert_eq!(run.waiting_for.map(|w| w.tool), Some("delete".to_owned()));
}

#[tokio::test]
async fn a_gathered_call_that_needs_approval_pauses_the_program_once_the_others_are_answered() {
    let (gate, _) = setup();
    let code = r#"
async def main():
    pages = await asyncio.gather(fetch(page=2), delete(page=1), fetch(page=3))
    return "deleted"
await main()
"#;
    let run = code_mode()
        .run(&gate, "s", &Principal::operator(), code)
        .await;
    assert_eq!(run.status, "pending_approval", "{run:?}");
    assert_eq!(run.waiting_for.map(|w| w.tool), Some("delete".to_owned()));
    assert_eq!(run.calls, 3, "the two fetches ran");
}

#[tokio::test]
async fn two_gathered_calls_that_need_approval_pause_the_program_for_the_first() {
    let (gate, _) = setup();
    let code = r#"
await asyncio.gather(delete(page=1), delete(page=2))
"#;
    let run = code_mode()
        .run(&gate, "s", &Principal::operator(), code)
        .await;
    assert_eq!(run.status, "pending_approval", "{run:?}");
}
