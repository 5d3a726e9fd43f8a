//! What a model reads of code mode: the stubs (snapshots, for the helpdesk and for
//! a spec of namespaced tools), and a namespaced tool called the way its stub
//! reads, `github.create_issue(...)`, through the gate in a real worker.

#![cfg(feature = "code-mode")]

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolgate::code_mode::{CodeMode, WorkerCommand, stubs};
use toolgate::{Catalog, Gate, MemoryGateStore, Principal, spec::SpecSource};
use toolgate_core::spec::SpecFile;

fn spec(path: &str) -> SpecFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let source = SpecSource::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(source.checked.is_ok(), "{}", source.render_diagnostics());
    source.checked.spec.expect("a spec")
}

fn gate(spec: &SpecFile) -> Gate {
    Gate::from_spec(
        spec,
        "toolgate.yaml",
        &Catalog::new(),
        Arc::new(MemoryGateStore::default()),
    )
    .expect("a gate")
}

fn helpdesk() -> SpecFile {
    spec("../../examples/helpdesk/toolgate.yaml")
}

fn namespaced() -> SpecFile {
    spec("tests/fixtures/code_mode/namespaced.yaml")
}

fn support_bot(spec: &SpecFile) -> Principal {
    spec.principals["support_bot"].to_principal("support_bot")
}

#[test]
fn the_helpdesk_stubs_carry_each_tools_guidance_and_returns_shape() {
    let spec = helpdesk();
    let text = stubs(&gate(&spec), "s", &support_bot(&spec), Some(&spec)).unwrap();
    insta::assert_snapshot!(text);
}

#[test]
fn namespaced_tools_read_as_static_methods_of_their_namespace() {
    let spec = namespaced();
    let text = stubs(&gate(&spec), "s", &Principal::operator(), Some(&spec)).unwrap();
    insta::assert_snapshot!(text);
}

#[tokio::test]
async fn a_program_calls_a_namespaced_tool_as_an_attribute_of_its_namespace() {
    let spec = namespaced();
    let gate = gate(&spec);
    let mode = CodeMode::new(WorkerCommand::program(env!(
        "CARGO_BIN_EXE_toolgate-code-worker"
    )));
    let code = "\
issue = github.create_issue(repo='acme/api', title='Crash on start')
open = github.list_issues(repo='acme/api')
[issue['number'], len(open), github.list(), ping(), jira.create_issue(project='OPS', summary='x')['key']]
";
    let run = mode.run(&gate, "s", &Principal::operator(), code).await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(
        run.value,
        Some(json!([42, 1, ["acme/api", "acme/web"], "pong", "OPS-7"]))
    );
    let missing = mode
        .run(
            &gate,
            "s",
            &Principal::operator(),
            "github.delete_repo(repo='acme/api')",
        )
        .await;
    let error = missing.error.expect("an error");
    assert!(
        error.message.contains("delete_repo"),
        "{}\n{}",
        error.message,
        error.traceback
    );
}
