//! `toolgate test`, `toolgate flow` and governed `toolgate call`s, run as a user
//! runs them: the real binary, real files, one process per command.

use std::path::{Path, PathBuf};
use std::process::Output;

use support::toolgate;

mod support;

use support::HELPDESK;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn helpdesk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk/toolgate.yaml")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// `(passed, failed)` from the closing line, which must be exactly `N passed, N failed`.
fn summary(printed: &str) -> (usize, usize) {
    let last = printed.lines().last().unwrap_or_default();
    let (passed, failed) = last
        .strip_suffix(" failed")
        .and_then(|rest| rest.split_once(" passed, "))
        .unwrap_or_else(|| panic!("not a summary line: {last:?}"));
    (passed.parse().unwrap(), failed.parse().unwrap())
}

#[test]
fn the_helpdesk_tests_pass_with_a_line_each_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolgate(dir.path(), &["test", helpdesk().to_str().unwrap()]);
    let printed = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{printed}{}", stderr(&out));
    let (passed, failed) = summary(&printed);
    assert!(passed >= 10, "{printed}");
    assert_eq!(failed, 0);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), passed + 1, "{printed}");
    assert!(
        lines[..passed].iter().all(|l| l.starts_with("ok    ")),
        "{printed}"
    );
    assert!(
        printed.contains("ok    orders stay closed until the customer is verified\n"),
        "{printed}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "tests run in memory: nothing is written"
    );
}

#[test]
fn a_broken_copy_fails_with_a_readable_trace() {
    let out = toolgate(&fixtures(), &["test", "helpdesk-broken.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let printed = stdout(&out);
    let (passed, failed) = summary(&printed);
    assert!(failed >= 1 && passed >= 1, "{printed}");
    insta::assert_snapshot!(printed);
}

#[test]
fn the_junit_report_is_well_formed_and_counts_every_test() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.xml");
    let fixture = fixtures().join("helpdesk-broken.yaml");
    let out = toolgate(
        dir.path(),
        &[
            "test",
            fixture.to_str().unwrap(),
            "--junit",
            report.to_str().unwrap(),
        ],
    );
    let (passed, failed) = summary(&stdout(&out));
    let xml = std::fs::read_to_string(&report).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        root.attribute("tests"),
        Some((passed + failed).to_string().as_str())
    );
    assert_eq!(
        root.attribute("failures"),
        Some(failed.to_string().as_str())
    );
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), passed + failed);
    let failures: Vec<_> = cases
        .iter()
        .filter_map(|c| c.children().find(|n| n.has_tag_name("failure")))
        .collect();
    assert_eq!(failures.len(), failed);
    let trace = failures[0].text().unwrap_or_default();
    assert!(trace.contains("at event"), "{trace}");
    assert!(
        failures[0]
            .attribute("message")
            .is_some_and(|m| !m.is_empty())
    );
    for case in &cases {
        assert!(case.attribute("name").is_some_and(|n| !n.is_empty()));
        assert!(
            case.attribute("time")
                .is_some_and(|t| t.parse::<f64>().is_ok())
        );
    }
}

#[test]
fn flow_graph_prints_the_helpdesk_flow_as_mermaid() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolgate(
        dir.path(),
        &["flow", "graph", "-f", helpdesk().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stdout(&out));
}

#[test]
fn a_directory_runs_every_spec_file_that_has_tests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("desk")).unwrap();
    support::write_helpdesk(&dir.path().join("desk"), HELPDESK);
    std::fs::copy(
        fixtures().join("helpdesk-broken.yaml"),
        dir.path().join("broken.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("other.yaml"),
        "tools: [{name: ping, description: Ping.}]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.yaml"), "just: notes\n").unwrap();
    let out = toolgate(dir.path(), &["test", "."]);
    assert_eq!(out.status.code(), Some(1));
    let printed = stdout(&out);
    let headers: Vec<&str> = printed
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with("ok") && !l.starts_with("FAIL"))
        .collect();
    assert_eq!(
        headers[..2],
        ["./broken.yaml", "./desk/toolgate.yaml"],
        "{printed}"
    );
    let (passed, failed) = summary(&printed);
    let one = summary(&stdout(&toolgate(
        dir.path(),
        &["test", "desk/toolgate.yaml"],
    )));
    let other = summary(&stdout(&toolgate(dir.path(), &["test", "broken.yaml"])));
    assert_eq!((passed, failed), (one.0 + other.0, one.1 + other.1));
}

#[test]
fn a_file_without_tests_or_with_errors_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.yaml"),
        "tools: [{name: ping, description: Ping.}]\n",
    )
    .unwrap();
    let out = toolgate(dir.path(), &["test"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("toolgate.yaml has no `tests:` section"),
        "{}",
        stderr(&out)
    );

    let broken = HELPDESK.replacen(
        "done: {called_ok: verify_customer}",
        "done: {called_ok: verify_custmer}",
        1,
    );
    support::write_helpdesk(dir.path(), &broken);
    let report = dir.path().join("report.xml");
    let out = toolgate(dir.path(), &["test", "--junit", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let printed = stdout(&out);
    assert!(
        printed.contains("did you mean `verify_customer`?"),
        "{printed}"
    );
    assert!(printed.ends_with("0 passed, 1 failed\n"), "{printed}");
    let xml = std::fs::read_to_string(report).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(doc.root_element().attribute("errors"), Some("1"));
}

#[test]
fn a_session_carries_the_flow_across_invocations() {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(dir.path(), HELPDESK);
    let lookup = ["call", "lookup_order", r#"{"order_id": "ORD-10422"}"#];
    let out = toolgate(dir.path(), &[&lookup[..], &["--session", "ada"]].concat());
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        stderr(&out),
        "denied: lookup_order is blocked until verify_customer has succeeded\n"
    );
    let verify = r#"{"email": "ada@example.com", "last4": "4242"}"#;
    let out = toolgate(
        dir.path(),
        &["call", "verify_customer", verify, "--session", "ada"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = toolgate(dir.path(), &[&lookup[..], &["--session", "ada"]].concat());
    assert!(
        out.status.success(),
        "the next process knows: {}",
        stderr(&out)
    );
    let out = toolgate(dir.path(), &[&lookup[..], &["--session", "bob"]].concat());
    assert_eq!(out.status.code(), Some(4), "another session starts over");

    let out = toolgate(dir.path(), &["flow", "status", "--session", "ada"]);
    let printed = stdout(&out);
    assert!(
        printed.starts_with("done     identify\nactive   assist\nactive   refund\n"),
        "{printed}"
    );
    assert!(
        printed.contains("  refund_order              blocked: refund_order is blocked until check_refund_eligibility has succeeded\n"),
        "{printed}"
    );
    let out = toolgate(
        dir.path(),
        &["flow", "status", "--session", "ada", "--json"],
    );
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["tools"]["lookup_order"]["status"], "allowed");
}

#[test]
fn state_reset_starts_the_conversation_over_flow_included() {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(dir.path(), HELPDESK);
    let verify = r#"{"email": "ada@example.com", "last4": "4242"}"#;
    let out = toolgate(
        dir.path(),
        &["call", "verify_customer", verify, "--session", "ada"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lookup = ["call", "lookup_order", r#"{"order_id": "ORD-10422"}"#];
    let out = toolgate(dir.path(), &[&lookup[..], &["--session", "ada"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));

    let out = toolgate(dir.path(), &["state", "reset", "--session", "ada"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = toolgate(dir.path(), &[&lookup[..], &["--session", "ada"]].concat());
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let printed = stdout(&toolgate(
        dir.path(),
        &["flow", "status", "--session", "ada"],
    ));
    assert!(
        printed.starts_with(
            "active   identify
"
        ),
        "{printed}"
    );
}

#[test]
fn check_reports_flow_mistakes_with_their_place_and_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let broken = HELPDESK
        .replacen("after: [identify]", "after: [identfy]", 1)
        .replacen("- once: refund_order", "- once: refund_ordr", 1);
    support::write_helpdesk(dir.path(), &broken);
    let out = toolgate(dir.path(), &["check"]);
    assert_eq!(out.status.code(), Some(1));
    let printed = stdout(&out);
    assert!(printed.contains("there is no step `identfy`"), "{printed}");
    assert!(printed.contains("did you mean `identify`?"), "{printed}");
    assert!(
        printed.contains("`refund_ordr` is not a tool this file declares"),
        "{printed}"
    );
    assert!(
        printed.contains("did you mean `refund_order`?"),
        "{printed}"
    );
}
