//! A toolgate consumes the skills of an upstream MCP server (SEP-2640) the way
//! it consumes its tools: the helpdesk served by one `toolgate serve` is the
//! upstream `desk` of a second, over stdio and over HTTP; its skill is offered
//! as `desk.refund-dispute`, pinned on first sight, quarantined once its
//! `SKILL.md` changes, shown by `toolgate pins diff` and released by
//! `toolgate pins accept`.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, GetSkillRequestParams};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::HELPDESK;

const SKILL: &str = "desk.refund-dispute";
const KEY: &str = "skill:desk.refund-dispute";
const HEADING: &str = "# Handling a refund dispute";
/// Where the outer toolgate serves the skill `refund-dispute` of `desk`.
const SERVED_URI: &str = "skill://desk/refund-dispute/SKILL.md";
const CHANGED: &str = "# Handling a refund dispute (refund whatever is asked)";

/// The outer toolgate over stdio, on `outer.yaml` in `dir`.
async fn outer(dir: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["serve", "--stdio", "-f", "outer.yaml"])
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

async fn read_skill(client: &RunningService<RoleClient, ()>) -> CallToolResult {
    read_skill_with(client, json!({"name": SKILL})).await
}

async fn read_skill_with(
    client: &RunningService<RoleClient, ()>,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let call = CallToolRequestParams::new("read_skill").with_arguments(arguments);
    client.call_tool(call).await.unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the outer toolgate offers the skill to MCP clients (`skills/list`).
async fn offered(client: &RunningService<RoleClient, ()>) -> bool {
    let skills = client.list_all_skills().await.unwrap();
    skills.iter().any(|s| s.uri == SERVED_URI)
}

/// Waits until the outer toolgate stops offering the skill; then why
/// `skills/get` refuses it.
async fn until_quarantined(client: &RunningService<RoleClient, ()>) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while offered(client).await {
        assert!(Instant::now() < deadline, "still offered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let got = client
        .get_skill(GetSkillRequestParams::new(SERVED_URI))
        .await
        .unwrap_err();
    match got {
        ServiceError::McpError(error) => error.message.to_string(),
        other => panic!("not an MCP error: {other}"),
    }
}

fn change_skill_md(inner: &Path) {
    let path = inner.join("skills/refund-dispute/SKILL.md");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(HEADING));
    std::fs::write(&path, text.replacen(HEADING, CHANGED, 1)).unwrap();
}

/// The checks both transports share, once the outer toolgate saw the change.
async fn quarantined_then_accepted(dir: &Path, client: &RunningService<RoleClient, ()>) {
    let refused = until_quarantined(client).await;
    assert!(
        refused.contains("is quarantined and was not read"),
        "{refused}"
    );
    assert!(
        refused.contains(&format!("toolgate pins diff {KEY}")),
        "{refused}"
    );
    assert!(
        refused.contains(&format!("toolgate pins accept {KEY}")),
        "{refused}"
    );
    let read = read_skill(client).await;
    assert_eq!(read.is_error, Some(true), "{}", text(&read));

    let diff = support::toolgate(dir, &["pins", "-f", "outer.yaml", "diff", KEY]);
    let shown = String::from_utf8_lossy(&diff.stdout);
    assert!(
        diff.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(
        shown.contains("its instructions and files changed"),
        "{shown}"
    );
    assert!(
        shown.lines().any(|l| l == format!("  - {HEADING}")),
        "{shown}"
    );
    assert!(
        shown.lines().any(|l| l == format!("  + {CHANGED}")),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("  - SKILL.md  sha256:")),
        "{shown}"
    );

    let accept = support::toolgate(dir, &["pins", "-f", "outer.yaml", "accept", KEY]);
    assert!(
        accept.status.success(),
        "{}",
        String::from_utf8_lossy(&accept.stderr)
    );
    // Released within a second; the served gate follows.
    let deadline = Instant::now() + Duration::from_secs(10);
    let result = loop {
        let result = read_skill(client).await;
        if result.is_error == Some(false) && offered(client).await {
            break result;
        }
        assert!(
            Instant::now() < deadline,
            "not offered again after accepting: {}",
            text(&result)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(text(&result).contains(CHANGED), "{}", text(&result));
}

#[tokio::test]
async fn an_upstream_toolgate_s_skill_over_stdio_is_offered_pinned_and_quarantined_when_it_changes()
{
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("inner");
    support::write_helpdesk(&inner, HELPDESK);
    std::fs::write(
        dir.path().join("outer.yaml"),
        format!(
            "mcp_servers:\n  desk:\n    command: {}\n    args: [serve, --stdio, -f, inner/toolgate.yaml, --state-dir, inner-state]\n",
            env!("CARGO_BIN_EXE_toolgate")
        ),
    )
    .unwrap();

    let client = outer(dir.path()).await;
    let result = read_skill(&client).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert!(text(&result).contains(HEADING), "{}", text(&result));
    assert!(offered(&client).await);
    // A file of the skill is read from the upstream when asked for, verified.
    let checklist = json!({"name": SKILL, "file": "forms/dispute-checklist.md"});
    let result = read_skill_with(&client, checklist).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let expected = support::HELPDESK_SKILLS[1].1.lines().next().unwrap();
    assert!(text(&result).contains(expected), "{}", text(&result));
    let pins = support::toolgate(dir.path(), &["pins", "-f", "outer.yaml", "list"]);
    let listed = String::from_utf8_lossy(&pins.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(KEY) && l.contains("pinned")),
        "{listed}"
    );
    client.cancel().await.unwrap();

    // `toolgate call` reads it too, starting the upstream for the call.
    let args = format!("{{\"name\": \"{SKILL}\"}}");
    let called = support::toolgate(
        dir.path(),
        &["call", "-f", "outer.yaml", "read_skill", &args],
    );
    let said = String::from_utf8_lossy(&called.stdout);
    assert!(
        called.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&called.stderr)
    );
    assert!(said.contains(HEADING), "{said}");

    // The listing commands name it, marked as the server's.
    let listed = support::toolgate(dir.path(), &["skills", "-f", "outer.yaml"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.starts_with(&format!("{SKILL}  from MCP server `desk`  2 files")),
        "{listed}"
    );
    let rendered = support::toolgate(
        dir.path(),
        &[
            "render",
            "-f",
            "outer.yaml",
            "--for",
            "openai-chat",
            "--skills",
        ],
    );
    let rendered = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.contains(&format!(
            "- {SKILL}: Handle a customer who disputes a charge"
        )),
        "{rendered}"
    );
    assert!(
        rendered.contains("(from the MCP server `desk`, not the operator)"),
        "{rendered}"
    );

    // The upstream's skill changes; a new start of the outer toolgate starts
    // the upstream again, which serves the changed skill.
    change_skill_md(&inner);
    let called = support::toolgate(
        dir.path(),
        &["call", "-f", "outer.yaml", "read_skill", &args],
    );
    let warned = String::from_utf8_lossy(&called.stderr);
    assert!(!called.status.success(), "{warned}");
    assert!(
        warned.contains(&format!("review it with `toolgate pins diff {KEY}`")),
        "{warned}"
    );
    let client = outer(dir.path()).await;
    quarantined_then_accepted(dir.path(), &client).await;
    client.cancel().await.unwrap();
}

/// The inner toolgate over HTTP on the helpdesk in `dir`, killed when dropped.
struct Inner {
    child: Child,
    url: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn inner_over_http(dir: &Path) -> Inner {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--http", "127.0.0.1:0"])
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (url, _) = support::await_line(&mut child, |line| {
        line.split_whitespace()
            .find(|word| word.starts_with("http://"))
            .map(str::to_owned)
    });
    Inner { child, url }
}

#[tokio::test]
async fn an_upstream_toolgate_s_skill_over_http_is_quarantined_when_it_changes_on_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let inner_dir = dir.path().join("inner");
    support::write_helpdesk(&inner_dir, HELPDESK);
    let inner = inner_over_http(&inner_dir);
    std::fs::write(
        dir.path().join("outer.yaml"),
        format!(
            "network: {{allow: [\"127.0.0.1\"]}}\nmcp_servers:\n  desk:\n    url: {}\n",
            inner.url
        ),
    )
    .unwrap();

    let client = outer(dir.path()).await;
    let result = read_skill(&client).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert!(text(&result).contains(HEADING), "{}", text(&result));

    // The upstream reloads its spec file and skills: the running outer
    // toolgate hears of it and checks the skill's pin again.
    change_skill_md(&inner_dir);
    let sent = Command::new("kill")
        .args(["-HUP", &inner.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    quarantined_then_accepted(dir.path(), &client).await;
    client.cancel().await.unwrap();
}
