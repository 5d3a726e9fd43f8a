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

#[test]
fn a_description_whose_server_is_private_imports_with_a_warning_and_allow_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let doc = r#"{"openapi": "3.0.3", "info": {"title": "Instance", "version": "1"},
        "servers": [{"url": "http://{host}/", "variables": {"host": {"default": "169.254.169.254"}}}],
        "paths": {"/latest/meta-data": {"get": {"operationId": "meta", "responses": {"200": {"description": "ok"}}}}}}"#;
    std::fs::write(dir.path().join("meta.json"), doc).unwrap();
    std::fs::write(
        dir.path().join("local.json"),
        doc.replace("169.254.169.254", "127.0.0.1:8080"),
    )
    .unwrap();
    let import = |file: &str, extra: &[&str]| {
        let mut args = vec!["import", "--from", "openapi", file, "-o", "out.yaml"];
        args.extend_from_slice(extra);
        let out = toolgate(dir.path(), &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let spec = std::fs::read_to_string(dir.path().join("out.yaml")).unwrap();
        let check = toolgate(dir.path(), &["check", "-f", "out.yaml"]);
        (
            text(&out.stderr),
            spec,
            format!("{}{}", text(&check.stdout), text(&check.stderr)),
        )
    };

    let (stderr, spec, check) = import("meta.json", &[]);
    assert!(
        stderr.contains("warning: the description's server `169.254.169.254` is the address of a cloud metadata service")
            && stderr.contains("Pass `--allow 169.254.169.254` if the tools are meant to reach it"),
        "{stderr}"
    );
    assert!(
        spec.contains("url: http://169.254.169.254/latest/meta-data"),
        "{spec}"
    );
    assert!(!spec.contains("network:"), "{spec}");
    assert!(!check.contains(": ok"), "{check}");
    assert!(check.contains("calls will be refused"), "{check}");

    let (stderr, spec, check) = import("local.json", &[]);
    assert!(
        stderr.contains("warning: the description's server `127.0.0.1:8080` is a loopback address")
            && stderr.contains("Pass `--allow 127.0.0.1:8080`"),
        "{stderr}"
    );
    assert!(!spec.contains("network:"), "{spec}");
    assert!(check.contains("calls will be refused"), "{check}");

    let (stderr, spec, check) = import("local.json", &["--allow", "127.0.0.1:8080"]);
    assert!(!stderr.contains("warning:"), "{stderr}");
    assert!(
        spec.contains("network:\n  allow:\n  - 127.0.0.1:8080"),
        "{spec}"
    );
    assert_eq!(check, "out.yaml: ok, 1 tool\n");
}
