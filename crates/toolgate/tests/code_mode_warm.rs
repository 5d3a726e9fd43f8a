//! A warm code mode: a worker is started ahead of each run, so a run or a resume
//! does not wait for a process to start. This file is its own test process, so
//! the workers it counts are its own.

#![cfg(feature = "code-mode")]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate::code_mode::{CodeMode, WorkerCommand};
use toolgate::{Catalog, Gate, MemoryGateStore, Principal};

const SPEC: &str = r#"
tools:
  - name: lookup_order
    description: Look up an order.
    effect: read
    parameters:
      type: object
      properties:
        order_id: {type: string}
      required: [order_id]
    response: {order_id: "{args.order_id}", status: shipped}
"#;

fn gate() -> Gate {
    let spec = toolgate::spec::check(SPEC).spec.expect("the spec is valid");
    Gate::from_spec(
        &spec,
        "warm.yaml",
        &Catalog::new(),
        Arc::new(MemoryGateStore::default()),
    )
    .expect("the catalog builds")
}

/// The code-mode workers this process started that are still running.
fn running_workers() -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
            let Some((comm, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let ppid = rest.split_whitespace().nth(1);
            comm.contains("toolgate-code")
                && ppid == Some(me.to_string().as_str())
                && !rest.starts_with('Z')
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_warm_code_mode_keeps_one_fresh_worker_waiting_and_replaces_one_that_died() {
    let gate = gate();
    let mode = CodeMode::new(WorkerCommand::program(env!(
        "CARGO_BIN_EXE_toolgate-code-worker"
    )))
    .warm();
    let program = "lookup_order(order_id='A-1')['status']";
    let first = mode.run(&gate, "s", &Principal::operator(), program).await;
    assert_eq!(first.value, Some(json!("shipped")), "{first:?}");
    // The run's own worker has exited; the one started ahead waits for the next.
    let mut waiting = Vec::new();
    for _ in 0..200 {
        waiting = running_workers();
        if waiting.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(waiting.len(), 1, "one worker waits: {waiting:?}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &waiting[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    for _ in 0..3 {
        let next = mode.run(&gate, "s", &Principal::operator(), program).await;
        assert_eq!(next.value, Some(json!("shipped")), "{next:?}");
    }
    drop(mode);
}
