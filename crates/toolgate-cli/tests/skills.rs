//! Skills on the command line: `check` refuses a skill it cannot serve where
//! `skills:` names it, `skills` lists and shows them as a principal sees them,
//! and `render --skills`, `parse --skills`, `digest` and code mode offer them
//! to models through `read_skill`.

mod support;

use support::{HELPDESK, json, toolgate, write_helpdesk};

fn desk() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_helpdesk(dir.path(), HELPDESK);
    dir
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn check_refuses_a_broken_skill_at_skills_naming_the_file_and_what_to_do() {
    let dir = desk();
    let checklist = dir
        .path()
        .join("skills/refund-dispute/forms/dispute-checklist.md");
    std::fs::remove_file(&checklist).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &checklist).unwrap();
    let out = toolgate(dir.path(), &["check"]);
    assert!(!out.status.success());
    let said = stdout(&out).replace(&dir.path().display().to_string(), "[desk]");
    insta::assert_snapshot!(said);
}

#[test]
fn skills_lists_and_shows_them_as_a_principal_sees_them() {
    let dir = desk();
    let out = toolgate(dir.path(), &["skills", "--json"]);
    let listed = json(&out);
    assert_eq!(listed[0]["name"], "refund-dispute");
    assert_eq!(listed[0]["files"][1]["path"], "forms/dispute-checklist.md");
    let out = toolgate(dir.path(), &["skills", "list", "--as", "faq_bot"]);
    assert_eq!(
        stdout(&out),
        "faq_bot sees none of the 1 skill(s): its scopes admit none of their names\n"
    );
    let out = toolgate(
        dir.path(),
        &["skills", "show", "refund-dispute", "--as", "faq_bot"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no skill is named `refund-dispute`"));
    let out = toolgate(dir.path(), &["skills", "show", "refund-dispute"]);
    let shown = stdout(&out);
    assert!(
        shown.contains("forms/dispute-checklist.md  587 bytes  sha256:"),
        "{shown}"
    );
    assert!(
        shown.contains("SKILL.md:\n# Handling a refund dispute"),
        "{shown}"
    );
}

#[test]
fn render_with_skills_adds_read_skill_and_parse_reads_its_calls() {
    let dir = desk();
    let plain = json(&toolgate(dir.path(), &["render", "--for", "anthropic"]));
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!names(&plain).contains(&"read_skill".to_owned()));
    let with = json(&toolgate(
        dir.path(),
        &["render", "--for", "anthropic", "--skills"],
    ));
    let read_skill = with["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_skill")
        .unwrap();
    insta::assert_json_snapshot!(read_skill);
    let response = serde_json::json!({
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_skill", "input": {"name": "refund-dispute"}}],
        "stop_reason": "tool_use"
    });
    std::fs::write(dir.path().join("response.json"), response.to_string()).unwrap();
    let parsed = json(&toolgate(
        dir.path(),
        &["parse", "--for", "anthropic", "--skills", "response.json"],
    ));
    assert_eq!(parsed[0]["name"], "read_skill", "{parsed}");
}

#[test]
fn render_skills_without_skills_says_how_to_name_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.yaml"),
        "tools: [{name: ping, description: Ping.}]\n",
    )
    .unwrap();
    let out = toolgate(dir.path(), &["render", "--for", "openai-chat", "--skills"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("offers no skills; --skills offers those its `skills:` section names")
    );
}

#[test]
fn digest_ends_with_the_skills_a_principal_is_offered() {
    let dir = desk();
    let support_bot = stdout(&toolgate(dir.path(), &["digest", "--as", "support_bot"]));
    let skills = support_bot
        .split("## Skills")
        .nth(1)
        .expect("a skills section");
    assert!(skills.contains("read it with `read_skill`"));
    assert!(skills.contains("- refund-dispute: Handle a customer who disputes a charge"));
    let faq_bot = stdout(&toolgate(dir.path(), &["digest", "--as", "faq_bot"]));
    assert!(!faq_bot.contains("## Skills"));
}

#[test]
fn code_mode_offers_read_skill_in_its_stubs() {
    let dir = desk();
    let rendered = json(&toolgate(
        dir.path(),
        &["render", "--for", "openai-chat", "--code-mode"],
    ));
    let run_code = rendered["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(run_code.contains("def read_skill("), "{run_code}");
}

#[test]
fn the_helpdesk_tests_read_the_refund_dispute_skill() {
    let dir = desk();
    let out = toolgate(dir.path(), &["test"]);
    let said = stdout(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(
            "ok    a dispute starts by reading the refund-dispute skill, and its checklist"
        ),
        "{said}"
    );
}

#[test]
fn a_program_in_code_mode_reads_a_skill_then_the_file_it_links_to() {
    let dir = desk();
    let program = "skill = read_skill(name=\"refund-dispute\")\n\
                   form = read_skill(name=\"refund-dispute\", file=skill[\"files\"][0])\n\
                   print(form[\"text\"].splitlines()[0])\n";
    std::fs::write(dir.path().join("program.py"), program).unwrap();
    let out = toolgate(dir.path(), &["code", "run", "program.py"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout(&out).contains("# Dispute checklist"),
        "{}",
        stdout(&out)
    );
}
