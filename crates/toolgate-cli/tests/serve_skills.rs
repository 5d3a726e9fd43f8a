//! `toolgate serve --http` offers the spec file's skills through MCP's skills
//! extension (SEP-2640), to clients of both protocol revisions: an rmcp client
//! lists and gets the helpdesk's skill and reads its files, whose bytes match
//! the manifest's digests; a principal outside the skill's scopes sees none;
//! every read is a `read_skill` call in the audit log; an upstream server's
//! skill is served under its namespace, and not at the server's own URIs.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{
    ErrorCode, GetSkillRequestParams, ProtocolVersion, ReadResourceDirectoryRequestParams,
    ReadResourceRequestParams, ResourceContents, SkillResources,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use support::HELPDESK;

const SKILL: &str = "skill://refund-dispute/SKILL.md";
const CHECKLIST: &str = "skill://refund-dispute/forms/dispute-checklist.md";

/// A running `toolgate serve --http 127.0.0.1:0 ARGS` in a helpdesk folder,
/// killed when dropped.
struct Served {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Served {
    serve_spec(HELPDESK, args)
}

fn serve_spec(spec: &str, args: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(dir.path(), spec);
    serve_in(dir, args)
}

/// `toolgate serve --http` on the `toolgate.yaml` in `dir`.
fn serve_in(dir: tempfile::TempDir, args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .current_dir(dir.path())
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
    Served { child, url, dir }
}

/// A client of 2025-11-25 (a session), or of 2026-07-28 (no session).
async fn client(url: &str, stateless: bool) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    if stateless {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        ().serve_with_lifecycle(transport, lifecycle).await.unwrap()
    } else {
        ().serve(transport).await.unwrap()
    }
}

async fn read_text(client: &RunningService<RoleClient, ()>, uri: &str) -> String {
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    match read.contents.as_slice() {
        [ResourceContents::TextResourceContents { text, .. }] => text.clone(),
        other => panic!("{uri}: not one text: {other:?}"),
    }
}

/// The children of a directory resource: each one's URI and media type.
async fn directory(client: &RunningService<RoleClient, ()>, uri: &str) -> Vec<(String, String)> {
    let read = ReadResourceDirectoryRequestParams::new(uri);
    let listed = client.read_resource_directory(read).await.unwrap();
    let kind = |r: &rmcp::model::Resource| r.mime_type.clone().unwrap_or_default();
    listed
        .resources
        .iter()
        .map(|r| (r.uri.clone(), kind(r)))
        .collect()
}

fn mcp_error(error: ServiceError) -> rmcp::ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => panic!("not an MCP error: {other}"),
    }
}

#[tokio::test]
async fn an_mcp_client_lists_and_gets_the_helpdesk_skill_and_its_files_match_their_digests() {
    let served = serve(&["--as", "support_bot"]);
    for stateless in [false, true] {
        let client = client(&served.url, stateless).await;
        let skills = client.list_skills(None).await.unwrap();
        assert_eq!(skills.ttl_ms.is_some(), stateless, "{skills:?}");
        let [listed] = skills.skills.as_slice() else {
            panic!("one skill: {skills:?}");
        };
        assert_eq!(listed.uri, SKILL);
        assert_eq!(listed.frontmatter.name, "refund-dispute");
        assert!(
            listed
                .frontmatter
                .description
                .starts_with("Handle a customer")
        );
        assert_eq!(listed.frontmatter.extra["license"], "Apache-2.0");
        assert_eq!(
            listed.frontmatter.extra["metadata"]["owner"],
            "support-operations"
        );

        let got = client
            .get_skill(GetSkillRequestParams::new(SKILL))
            .await
            .unwrap();
        assert_eq!(&got.skill, listed);
        assert_eq!(got.ttl_ms.is_some(), stateless);

        let SkillResources::Files(files) = &got.skill.resources else {
            panic!("a manifest of files: {:?}", got.skill.resources);
        };
        let uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
        assert_eq!(uris, [SKILL, CHECKLIST]);
        for file in files {
            let text = read_text(&client, &file.uri).await;
            file.verify(text.as_bytes())
                .unwrap_or_else(|e| panic!("stateless: {stateless}: {e}"));
        }
        assert!(read_text(&client, CHECKLIST).await.contains("chargeback"));
        let missing = client
            .read_resource(ReadResourceRequestParams::new(
                "skill://refund-dispute/forms/missing.md",
            ))
            .await
            .map(|_| ())
            .map_err(mcp_error)
            .unwrap_err();
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        assert!(
            missing
                .message
                .contains("its files are: SKILL.md, forms/dispute-checklist.md"),
            "{}",
            missing.message
        );

        let resources = client.list_all_resources().await.unwrap();
        let skill_md = resources.iter().find(|r| r.uri == SKILL).unwrap();
        assert_eq!(skill_md.name, "refund-dispute");
        assert_eq!(skill_md.mime_type.as_deref(), Some("text/markdown"));

        // The skill's folder and its subfolder, as directories.
        assert_eq!(
            directory(&client, "skill://refund-dispute").await,
            [
                ("skill://refund-dispute/SKILL.md", "text/markdown"),
                ("skill://refund-dispute/forms", "inode/directory"),
            ]
            .map(|(uri, kind)| (uri.to_owned(), kind.to_owned()))
        );
        assert_eq!(
            directory(&client, "skill://refund-dispute/forms").await,
            [(CHECKLIST.to_owned(), "text/markdown".to_owned())]
        );
        let not_a_directory = client
            .read_resource_directory(ReadResourceDirectoryRequestParams::new(CHECKLIST))
            .await
            .map(|_| ())
            .map_err(mcp_error)
            .unwrap_err();
        assert_eq!(not_a_directory.code, ErrorCode::INVALID_PARAMS);
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_principal_outside_the_skill_s_scopes_sees_no_skill_and_gets_it_as_unknown() {
    let served = serve(&["--as", "faq_bot"]);
    for stateless in [false, true] {
        let client = client(&served.url, stateless).await;
        let skills = client.list_skills(None).await.unwrap();
        assert!(skills.skills.is_empty(), "{skills:?}");

        let hidden = client
            .get_skill(GetSkillRequestParams::new(SKILL))
            .await
            .map(|_| ())
            .map_err(mcp_error)
            .unwrap_err();
        assert_eq!(hidden.code, ErrorCode::INVALID_PARAMS);
        let missing = client
            .get_skill(GetSkillRequestParams::new("skill://no-such-skill/SKILL.md"))
            .await
            .map(|_| ())
            .map_err(mcp_error)
            .unwrap_err();
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(
            hidden.message.replace(SKILL, "URI"),
            missing
                .message
                .replace("skill://no-such-skill/SKILL.md", "URI"),
            "out of scope reads as unknown"
        );
        assert!(
            hidden
                .message
                .contains("`skills/list` lists the skills you may read"),
            "{}",
            hidden.message
        );

        let file = client
            .read_resource(ReadResourceRequestParams::new(CHECKLIST))
            .await
            .map(|_| ())
            .map_err(mcp_error)
            .unwrap_err();
        let not_found = match stateless {
            true => ErrorCode::INVALID_PARAMS,
            false => ErrorCode::RESOURCE_NOT_FOUND,
        };
        assert_eq!(file.code, not_found, "{file:?}");
        assert_eq!(file.data, Some(serde_json::json!({"uri": CHECKLIST})));
        let resources = client.list_all_resources().await.unwrap();
        assert!(resources.iter().all(|r| r.uri != SKILL), "{resources:?}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_skills_get_and_a_file_read_are_read_skill_calls_in_the_audit_log() {
    let served = serve(&["--as", "support_bot"]);
    let client = client(&served.url, false).await;
    client
        .get_skill(GetSkillRequestParams::new(SKILL))
        .await
        .unwrap();
    read_text(&client, CHECKLIST).await;
    client.cancel().await.unwrap();

    // Each read is an intent (with its arguments) and a completion (with its outcome).
    let deadline = Instant::now() + Duration::from_secs(10);
    let reads = loop {
        let out = support::toolgate(served.dir.path(), &["audit", "tail", "--json"]);
        let reads: Vec<Value> = support::json(&out)
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool"] == "read_skill")
            .cloned()
            .collect();
        if reads.len() >= 4 || Instant::now() > deadline {
            break reads;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let kinds: Vec<&str> = reads.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["intent", "completion", "intent", "completion"],
        "{reads:#?}"
    );
    for read in &reads {
        assert_eq!(read["principal"], "support_bot", "{read}");
    }
    assert_eq!(reads[0]["arguments"]["name"], "refund-dispute");
    assert_eq!(reads[0]["arguments"].get("file"), None);
    assert_eq!(reads[1]["outcome"], "ok");
    assert_eq!(reads[2]["arguments"]["file"], "forms/dispute-checklist.md");
    assert_eq!(reads[3]["outcome"], "ok");
}

#[tokio::test]
async fn a_spec_without_skills_declares_neither_the_extension_nor_resources() {
    let spec = HELPDESK.replace("skills: {dir: ./skills}\n", "");
    assert_ne!(spec, HELPDESK);
    let served = serve_spec(&spec, &[]);
    for stateless in [false, true] {
        let client = client(&served.url, stateless).await;
        let capabilities = &client.peer_info().unwrap().capabilities;
        assert!(!capabilities.supports_skills(), "{capabilities:?}");
        assert!(capabilities.resources.is_none(), "{capabilities:?}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn an_upstream_server_s_skill_is_served_under_its_namespace_and_not_at_its_own_uri() {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(&dir.path().join("inner"), HELPDESK);
    let spec = format!(
        "mcp_servers:\n  desk:\n    command: {}\n    args: [serve, --stdio, -f, inner/toolgate.yaml, --state-dir, inner-state]\n",
        env!("CARGO_BIN_EXE_toolgate")
    );
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    let served = serve_in(dir, &[]);
    let client = client(&served.url, false).await;

    let served_uri = "skill://desk/refund-dispute/SKILL.md";
    let skills = client.list_all_skills().await.unwrap();
    let [skill] = skills.as_slice() else {
        panic!("one skill: {skills:?}");
    };
    assert_eq!(skill.uri, served_uri);
    assert_eq!(skill.frontmatter.name, "refund-dispute");
    let SkillResources::Files(files) = &skill.resources else {
        panic!("a manifest of files: {:?}", skill.resources);
    };
    let uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            served_uri,
            "skill://desk/refund-dispute/forms/dispute-checklist.md"
        ]
    );
    for file in files {
        file.verify(read_text(&client, &file.uri).await.as_bytes())
            .unwrap();
    }

    // The upstream's own URIs are not passed on around the pin and the gate.
    let around = client
        .read_resource(ReadResourceRequestParams::new(SKILL))
        .await
        .map(|_| ())
        .map_err(mcp_error)
        .unwrap_err();
    assert_eq!(around.code, ErrorCode::INVALID_PARAMS);
    assert!(
        around
            .message
            .contains("toolgate serves those skills as `skill://SERVER/NAME/...`"),
        "{}",
        around.message
    );
    let resources = client.list_all_resources().await.unwrap();
    let listed: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(listed.contains(&served_uri), "{listed:?}");
    assert!(
        !listed
            .iter()
            .any(|uri| uri.starts_with("skill://refund-dispute/")),
        "{listed:?}"
    );
    client.cancel().await.unwrap();
}
