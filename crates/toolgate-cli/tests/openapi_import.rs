//! `toolgate import --from openapi`, run as a user runs it: the real binary on
//! description files in a directory of their own.

mod support;

use std::path::Path;

use support::toolgate;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../toolgate-core/tests/data/openapi"
);
const TARGETS: [&str; 7] = [
    "openai-chat",
    "openai-responses",
    "qwen",
    "anthropic",
    "gemini",
    "vertex",
    "mcp",
];

/// A scratch directory holding the test descriptions.
fn desk() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in ["shop.yaml", "common.yaml", "pets-2.0.json"] {
        std::fs::copy(Path::new(DATA).join(file), dir.path().join(file)).unwrap();
    }
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn an_openapi_description_imports_as_a_spec_file_that_checks_and_renders_for_every_target() {
    let dir = desk();
    let out = toolgate(
        dir.path(),
        &[
            "import",
            "--from",
            "openapi",
            "shop.yaml",
            "--server",
            "http://127.0.0.1:4010",
            "-o",
            "shop.toolgate.yaml",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    insta::assert_snapshot!("shop_summary", text(&out.stderr));
    let spec = std::fs::read_to_string(dir.path().join("shop.toolgate.yaml")).unwrap();
    insta::assert_snapshot!("shop_spec", spec);
    let check = toolgate(dir.path(), &["check", "-f", "shop.toolgate.yaml"]);
    assert!(
        check.status.success(),
        "{}{}",
        text(&check.stdout),
        text(&check.stderr)
    );
    for target in TARGETS {
        let render = toolgate(
            dir.path(),
            &["render", "--for", target, "-f", "shop.toolgate.yaml"],
        );
        assert!(
            render.status.success(),
            "{target}: {}",
            text(&render.stderr)
        );
    }
    let out = toolgate(
        dir.path(),
        &["import", "--from", "openapi", "pets-2.0.json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    insta::assert_snapshot!("pets_spec", text(&out.stdout));
    insta::assert_snapshot!("pets_summary", text(&out.stderr));
}

#[test]
fn tags_globs_effects_and_deprecated_choose_what_is_imported() {
    let dir = desk();
    std::fs::write(
        dir.path().join("effects.yaml"),
        "'orders/*': external\n'DELETE /orders/*': destructive\n",
    )
    .unwrap();
    let out = toolgate(
        dir.path(),
        &[
            "import",
            "--from",
            "openapi",
            "shop.yaml",
            "--tags",
            "orders",
            "--exclude",
            "orders/get",
            "--effects",
            "effects.yaml",
            "--include-deprecated",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let spec: serde_json::Value = serde_saphyr::from_str(&text(&out.stdout)).unwrap();
    let tools: Vec<String> = spec["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t["name"].as_str().unwrap(),
                t["effect"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            "orders.list external",
            "orders.create external",
            "delete_orders_id destructive"
        ]
    );
    insta::assert_snapshot!("selected_summary", text(&out.stderr));
}

#[test]
fn bad_descriptions_and_options_are_clear_errors() {
    let dir = desk();
    std::fs::write(dir.path().join("bad.yaml"), "openapi: [3\n").unwrap();
    std::fs::write(dir.path().join("tools.json"), "[{\"name\": \"x\"}]").unwrap();
    std::fs::write(dir.path().join("effects.yaml"), "'orders/*': sometimes\n").unwrap();
    let mut errors = Vec::new();
    for args in [
        &["import", "--from", "openapi", "bad.yaml"][..],
        &["import", "--from", "openapi", "tools.json"],
        &["import", "--from", "openapi", "absent.yaml"],
        &[
            "import",
            "--from",
            "openapi",
            "shop.yaml",
            "--include",
            "orders/[x",
        ],
        &[
            "import",
            "--from",
            "openapi",
            "shop.yaml",
            "--effects",
            "effects.yaml",
        ],
        &["import", "--from", "openapi", "shop.yaml", "--server", "3"],
        &["import", "--from", "swagger", "shop.yaml"],
        &["import", "--from", "bfcl", "tools.json", "--tags", "a"],
    ] {
        let out = toolgate(dir.path(), args);
        assert!(!out.status.success(), "{args:?}");
        errors.push(format!(
            "$ toolgate {}\n{}",
            args.join(" "),
            text(&out.stderr)
        ));
    }
    insta::assert_snapshot!("errors", errors.join("\n"));
}
