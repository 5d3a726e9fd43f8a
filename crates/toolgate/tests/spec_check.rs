//! Every check `toolgate check` makes on a spec file: one fixture under
//! `fixtures/spec/` per check, an assertion on what it reports, and a snapshot of
//! the rendered diagnostic (file:line:col, the line, a caret, help).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use toolgate::{spec::SpecReadError, spec::SpecSource};
use toolgate_core::spec::{Diagnostic, Severity};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spec")
}

/// Checks a fixture under a fixed display path, so snapshots do not depend on the machine.
fn check(name: &str) -> SpecSource {
    let text = std::fs::read_to_string(fixtures().join(name))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"));
    SpecSource::from_text(format!("fixtures/spec/{name}"), text)
}

/// The one diagnostic a fixture produces.
fn only(source: &SpecSource) -> &Diagnostic {
    let diagnostics = &source.checked.diagnostics;
    assert_eq!(
        diagnostics.len(),
        1,
        "expected one diagnostic:\n{}",
        source.render_diagnostics()
    );
    &diagnostics[0]
}

/// The text a diagnostic's caret marks.
fn marked<'a>(source: &'a SpecSource, diagnostic: &Diagnostic) -> &'a str {
    let span = diagnostic
        .span
        .unwrap_or_else(|| panic!("`{}` has no position", diagnostic.message));
    &source.text[span.offset..span.offset + span.len]
}

fn help(diagnostic: &Diagnostic) -> &str {
    diagnostic.help.as_deref().unwrap_or_default()
}

fn assert_error(source: &SpecSource, message: &str, marks: &str, help_text: &str) {
    let d = only(source);
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.message, message);
    assert_eq!(marked(source, d), marks);
    assert_eq!(help(d), help_text);
    assert!(!source.checked.is_ok());
}

// Syntax.

#[test]
fn a_yaml_syntax_error_points_at_where_the_parser_stopped() {
    let source = check("yaml_syntax.yaml");
    assert_error(
        &source,
        "this is not valid YAML or JSON: unclosed quote",
        "\"",
        "add the closing quote; a quoted string runs until its matching quote",
    );
    assert!(source.checked.spec.is_none());
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_json_syntax_error_points_at_the_entry_after_the_missing_comma() {
    let source = check("json_syntax.json");
    let d = only(&source);
    assert_eq!(d.severity, Severity::Error);
    assert!(
        d.message.starts_with("this is not valid YAML or JSON: ")
            && d.message.contains("did not find expected ','"),
        "{}",
        d.message
    );
    assert_eq!(
        source.text[d.span.unwrap().offset..].lines().next(),
        Some("\"effect\": \"read\"")
    );
    assert!(help(d).contains("separate the entries with `,`"));
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_key_repeated_in_a_mapping_is_reported_at_the_repeat() {
    let source = check("duplicate_key.yaml");
    assert_error(
        &source,
        "`effect` appears twice in the same mapping",
        "effect",
        "each key may appear once in a mapping; remove or rename one",
    );
    assert_eq!(
        source.text[..only(&source).span.unwrap().offset]
            .lines()
            .count(),
        5
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_document_nested_too_deep_is_refused_without_overflowing_the_stack() {
    let source = check("too_deeply_nested.yaml");
    let d = only(&source);
    assert_eq!(
        d.message,
        "the document nests more than 64 levels deep, which no spec file needs"
    );
    assert_eq!(marked(&source, d), "[");
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_alias_bomb_is_refused() {
    let started = Instant::now();
    let source = check("alias_bomb.yaml");
    let d = only(&source);
    assert_eq!(
        d.message,
        "the document holds more than 200,000 values once its aliases are expanded, which no spec file needs"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    insta::assert_snapshot!(source.render_diagnostics());
}

// Structure: unknown and missing keys, types, allowed values.

#[test]
fn an_unknown_key_in_a_tool_is_reported_with_a_did_you_mean() {
    let source = check("unknown_key_in_tool.yaml");
    // One mistake, one report: no separate "missing `description`".
    assert_error(
        &source,
        "unknown key `descripton` in tool `lookup_order`",
        "descripton",
        "did you mean `description`?",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_unknown_key_in_usage_is_reported_with_a_did_you_mean() {
    let source = check("unknown_key_in_usage.yaml");
    assert_error(
        &source,
        "unknown key `when_not_too` in `usage`",
        "when_not_too",
        "did you mean `when_not_to`?",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_unknown_key_in_an_http_binding_is_reported_with_a_did_you_mean() {
    let source = check("unknown_key_in_http.yaml");
    assert_error(
        &source,
        "unknown key `header` in an `http` binding",
        "header",
        "did you mean `headers`?",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_unknown_top_level_key_is_reported_with_a_did_you_mean() {
    let source = check("unknown_key_at_top_level.yaml");
    assert_error(
        &source,
        "unknown key `tool` in the spec file",
        "tool",
        "did you mean `tools`?",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_tool_without_a_description_is_an_error() {
    let source = check("missing_description.yaml");
    let d = only(&source);
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(
        d.message,
        "tool `lookup_order` is missing the required key `description`"
    );
    assert_eq!(d.path, "/tools/0");
    assert_eq!(
        help(d),
        "add `description:` saying what the tool does; the model reads it to pick tools"
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_value_of_the_wrong_type_says_which_type_is_expected() {
    let source = check("wrong_type.yaml");
    assert_error(
        &source,
        "`tags` must be a list, not the string `orders`",
        "orders",
        "write a list, e.g. `tags: [orders]`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_bad_effect_is_reported_with_a_did_you_mean_and_the_valid_effects() {
    let source = check("bad_effect.yaml");
    assert_error(
        &source,
        "`effect` cannot be `raed`",
        "raed",
        "did you mean `read`? (one of `read`, `idempotent`, `write`, `execute`, `destructive`, `external`)",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_bad_http_method_lists_the_valid_methods() {
    let source = check("bad_http_method.yaml");
    assert_error(
        &source,
        "`method` cannot be `FETCH`",
        "FETCH",
        "use one of `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `HEAD`, `OPTIONS`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

// Names.

#[test]
fn an_invalid_tool_name_is_reported_with_a_valid_one_to_use() {
    let source = check("invalid_tool_name.yaml");
    assert_error(
        &source,
        "tool name `look up order` contains ' '; use only letters, digits, `_`, `-`, and `.` between namespace parts",
        "look up order",
        "rename it, e.g. `name: look_up_order`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_tool_name_declared_twice_points_at_the_first_declaration() {
    let source = check("duplicate_tool_names.yaml");
    let d = only(&source);
    assert_eq!(d.message, "tool `lookup_order` is declared twice");
    assert_eq!(d.path, "/tools/2/name");
    assert_eq!(marked(&source, d), "lookup_order");
    assert_eq!(
        help(d),
        "the first declaration is tool #1 (line 2); rename or remove one"
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

// Schemas, responses and examples.

#[test]
fn parameters_that_are_not_json_schema_are_reported_at_the_bad_keyword() {
    let source = check("invalid_parameters_schema.yaml");
    assert_error(
        &source,
        "`parameters` is not a valid JSON Schema: `strng` is not a JSON Schema type",
        "strng",
        "did you mean `string`? (one of `string`, `number`, `integer`, `boolean`, `object`, `array`, `null`)",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn parameters_must_describe_an_object() {
    let source = check("parameters_not_an_object.yaml");
    assert_error(
        &source,
        "`parameters` must describe an object: tools take named arguments",
        "string",
        "set `type: object` and list the arguments under `properties:`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn returns_that_is_not_json_schema_is_reported_at_the_bad_keyword() {
    let source = check("invalid_returns_schema.yaml");
    let d = only(&source);
    assert_eq!(
        d.message,
        "`returns` is not a valid JSON Schema: `required` must be a list, not the string `status`"
    );
    assert_eq!(d.path, "/tools/0/returns/required");
    assert_eq!(marked(&source, d), "status");
    assert_eq!(help(d), "write a list, e.g. `required: [status]`");
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_response_that_does_not_match_returns_is_reported_at_the_bad_value() {
    let source = check("response_does_not_match_returns.yaml");
    assert_error(
        &source,
        "the mock response does not match `returns`: `total_cents` must be an integer, not the string `79.98`",
        "\"79.98\"",
        "change the canned response or the `returns` schema so they agree",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn without_a_response_the_default_ok_true_must_match_returns() {
    let source = check("default_response_does_not_match_returns.yaml");
    let d = only(&source);
    assert_eq!(d.severity, Severity::Error);
    assert!(
        d.message.starts_with(
            "without a `response:`, this mock returns {\"ok\": true}, which does not match `returns`: "
        ),
        "{}",
        d.message
    );
    assert!(d.message.contains("the required key `order_id` is missing"));
    assert!(
        d.message
            .contains("key `ok` is not declared under `properties`")
    );
    assert_eq!(marked(&source, d), "returns");
    assert_eq!(
        help(d),
        "add a `response:` with a value that matches `returns`"
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_example_that_does_not_match_parameters_is_an_error() {
    let source = check("example_does_not_match_parameters.yaml");
    assert_error(
        &source,
        "this example does not match `parameters`: `limit` is greater than the maximum of 50",
        "500",
        "change the example or `parameters` so they agree",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

// Bindings.

#[test]
fn a_tool_with_both_http_and_mcp_is_an_error() {
    let source = check("http_and_mcp.yaml");
    assert_error(
        &source,
        "a tool has one binding, `http` or `mcp`, not both",
        "npx -y @example/orders-mcp",
        "remove one of them; a tool with neither is a mock",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_empty_mcp_binding_is_an_error() {
    let source = check("empty_mcp.yaml");
    assert_error(
        &source,
        "`mcp` is empty",
        "\"\"",
        "give the server's command line or its http(s) URL",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_mcp_server_needs_a_command_or_a_url() {
    let source = check("mcp_without_command_or_url.yaml");
    let d = only(&source);
    assert_eq!(
        d.message,
        "an `mcp` binding needs exactly one of `command` (stdio) or `url` (HTTP)"
    );
    assert_eq!(marked(&source, d), "mcp");
    assert!(help(d).starts_with("add `command:`"));
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_http_url_must_be_absolute() {
    let source = check("relative_url.yaml");
    assert_error(
        &source,
        "`/orders` is not an absolute URL",
        "/orders",
        "start it with https:// or http://",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_http_url_must_be_http_or_https() {
    let source = check("unsupported_url_scheme.yaml");
    assert_error(
        &source,
        "URL scheme `ftp` is not supported",
        "ftp://files.example.com/orders",
        "use https:// or http://",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_http_url_must_name_a_host() {
    let source = check("url_without_host.yaml");
    assert_error(
        &source,
        "`https:///orders` names no host",
        "https:///orders",
        "write the host after `://`, as in `https://api.example.com/orders`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_http_url_whose_host_is_a_placeholder_is_refused() {
    let source = check("placeholder_host.yaml");
    assert_error(
        &source,
        "the URL's host comes from a placeholder; arguments and state may only fill the path and query",
        "{args.host}",
        "write the host literally, as in `https://api.example.com/{args.path}`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_timeout_that_is_not_a_duration_is_an_error() {
    let source = check("bad_timeout.yaml");
    assert_error(
        &source,
        "`10 seconds please` is not a duration",
        "10 seconds please",
        "write a number and a unit, e.g. `500ms`, `30s` or `2m`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_argument_limit_of_zero_is_an_error_that_says_what_to_write() {
    let source = check("zero_max_argument_bytes.yaml");
    assert_error(
        &source,
        "`max_argument_bytes` is 0, so no call could carry arguments",
        "0",
        "write a number of bytes, e.g. `65536` (64 KiB); leave it out for the default of 1048576 (1 MiB)",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn an_argument_limit_written_as_a_size_asks_for_the_number_of_bytes() {
    let source = check("max_argument_bytes_as_a_size.yaml");
    assert_error(
        &source,
        "`max_argument_bytes` must be empty or an integer, not the string `512 KiB`",
        "512 KiB",
        "write the number of bytes, e.g. `max_argument_bytes: 65536` for 64 KiB",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

// Telemetry.

#[test]
fn opting_a_secret_argument_into_spans_is_a_warning_that_says_it_stays_redacted() {
    let source = check("span_arguments_secret.yaml");
    let found: Vec<(Severity, &str, &str)> = source
        .checked
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.message.as_str(), marked(&source, d)))
        .collect();
    assert_eq!(
        found,
        [
            (
                Severity::Warning,
                "argument `pin` of `login` is marked secret in its schema, so spans record it as `[redacted]`",
                "pin"
            ),
            (
                Severity::Warning,
                "argument `password` of `login` is named like a secret, so spans record it as `[redacted]`",
                "password"
            ),
            (
                Severity::Warning,
                "`*` opts in every argument of `lookup`, but spans record its secret argument `api_key` as `[redacted]`",
                "\"*\""
            ),
        ]
    );
    assert!(source.checked.is_ok());
    insta::assert_snapshot!(source.render_diagnostics());
}

// State and placeholders.

#[test]
fn writing_an_undeclared_state_key_is_a_warning_with_a_did_you_mean() {
    let source = check("undeclared_state_key.yaml");
    let [set_state, save_response_as] = source.checked.diagnostics.as_slice() else {
        panic!("expected two warnings:\n{}", source.render_diagnostics());
    };
    assert_eq!(set_state.severity, Severity::Warning);
    assert_eq!(
        set_state.message,
        "state key `customer_di` is not declared under `state:`"
    );
    assert_eq!(marked(&source, set_state), "customer_di");
    assert_eq!(help(set_state), "did you mean `customer_id`?");
    assert_eq!(save_response_as.severity, Severity::Warning);
    assert_eq!(
        save_response_as.message,
        "state key `last_ordr` is not declared under `state:`"
    );
    assert_eq!(marked(&source, save_response_as), "last_ordr");
    assert_eq!(help(save_response_as), "did you mean `last_order`?");
    // Warnings alone leave the file usable.
    assert!(source.checked.is_ok());
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_state_default_of_the_wrong_type_is_an_error() {
    let source = check("state_default_of_the_wrong_type.yaml");
    assert_error(
        &source,
        "the default of `refund_threshold_cents` is the string `50 EUR`, but its `type` is `integer`",
        "\"50 EUR\"",
        "make the default an integer, or change `type`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_placeholder_naming_an_unknown_argument_is_reported_with_a_did_you_mean() {
    let source = check("unknown_argument_placeholder.yaml");
    assert_error(
        &source,
        "`{args.orderid}` names no argument of `lookup_order`",
        "{args.orderid}",
        "did you mean `order_id`?",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_placeholder_naming_an_unknown_state_key_is_an_error() {
    let source = check("unknown_state_placeholder.yaml");
    assert_error(
        &source,
        "`{state.loyalty_tier}` names no declared state key",
        "{state.loyalty_tier}",
        "declare `loyalty_tier` under `state:`",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

// Whole files.

#[test]
fn a_file_with_several_problems_reports_all_of_them() {
    let source = check("several_problems.yaml");
    let found: Vec<(Severity, &str, &str)> = source
        .checked
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.message.as_str(), marked(&source, d)))
        .collect();
    assert_eq!(
        found,
        [
            (
                Severity::Error,
                "tool name `verify customer` contains ' '; use only letters, digits, `_`, `-`, and `.` between namespace parts",
                "verify customer"
            ),
            (Severity::Error, "`soon` is not a duration", "soon"),
            (
                Severity::Warning,
                "state key `customer` is not declared under `state:`",
                "customer"
            ),
            (
                Severity::Error,
                "`{args.id}` names no argument of `lookup_order`",
                "{args.id}"
            ),
            // A structural problem in one tool does not hide the others' problems.
            (Severity::Error, "`effect` cannot be `externel`", "externel"),
        ]
    );
    assert!(
        source
            .render_diagnostics()
            .ends_with("fixtures/spec/several_problems.yaml: 4 errors, 1 warning\n")
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_structural_problem_in_a_tool_hides_none_of_its_other_problems() {
    let source = check("several_problems_in_one_tool.yaml");
    let found: Vec<(Severity, &str, &str)> = source
        .checked
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.message.as_str(), marked(&source, d)))
        .collect();
    assert_eq!(
        found,
        [
            (
                Severity::Error,
                "tool `lookup_order` is declared twice",
                "lookup_order"
            ),
            (
                Severity::Error,
                "unknown key `descripton` in tool `lookup_order`",
                "descripton"
            ),
            (Severity::Error, "`effect` cannot be `reed`", "reed"),
            (Severity::Error, "`soon` is not a duration", "soon"),
            (
                Severity::Error,
                "`{args.id}` names no argument of `lookup_order`",
                "{args.id}"
            ),
            (
                Severity::Error,
                "`{state.tier}` names no declared state key",
                "{state.tier}"
            ),
        ]
    );
    assert!(source.checked.spec.is_none());
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn a_structural_problem_in_a_section_hides_no_problem_in_another() {
    let text = "\
tools:
  - name: lookup_order
    description: Fetch one order.
    effect: read
    tags: [orders, 7]
policy:
  rules:
    - tools: 'orders.*.x'
      decision: deny
";
    let source = SpecSource::from_text("policy.yaml", text);
    let messages: Vec<&str> = source
        .checked
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "`1` must be a string, not the number 7",
            "`orders.*.x` is not a tool pattern"
        ],
        "{}",
        source.render_diagnostics()
    );
}

#[test]
fn a_cut_binding_or_state_section_adds_no_misleading_report() {
    // `http` without its `url` is cut: the tool must not then be read as a mock whose
    // default response breaks `returns`. A broken `state:` hides no duplicate name,
    // and state keys it may declare are not reported as undeclared.
    let text = "\
state: [not, a, mapping]
tools:
  - name: lookup_order
    description: Fetch one order.
    returns: {type: object, required: [id]}
    http: {method: GET}
    set_state: {last_order: x}
  - name: lookup_order
    description: Fetch it again.
";
    let source = SpecSource::from_text("cut.yaml", text);
    let messages: Vec<&str> = source
        .checked
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "`state` must be a mapping, not a list",
            "an `http` binding is missing the required key `url`",
            "tool `lookup_order` is declared twice",
        ],
        "{}",
        source.render_diagnostics()
    );
}

#[test]
fn a_tool_without_a_name_still_has_its_placeholders_checked() {
    let text = "\
tools:
  - description: Fetch one order.
    parameters: {type: object, properties: {order_id: {type: string}}}
    response: {id: '{args.id}'}
";
    let source = SpecSource::from_text("nameless.yaml", text);
    let messages: Vec<&str> = source
        .checked
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "a tool is missing the required key `name`",
            "`{args.id}` names no argument of this tool"
        ],
        "{}",
        source.render_diagnostics()
    );
}

#[test]
fn an_empty_file_is_one_clear_error() {
    let source = check("empty.yaml");
    let d = only(&source);
    assert_eq!(d.message, "the file is empty");
    assert_eq!(d.span, None);
    assert_eq!(
        help(d),
        "declare at least `tools:`; `toolgate schema` prints the format"
    );
    let rendered = source.render_diagnostics();
    assert!(rendered.contains("fixtures/spec/empty.yaml: the file is empty"));
    insta::assert_snapshot!(rendered);
}

#[test]
fn a_file_that_is_a_list_is_not_a_spec_file() {
    let source = check("not_a_mapping.yaml");
    assert_error(
        &source,
        "the file is a list, but a spec file must be a mapping with a `tools:` key",
        "-",
        "if these are tools, put `tools:` on the first line and indent the list under it",
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn text_over_the_size_limit_is_refused_before_parsing() {
    let text = "#".repeat(toolgate_core::spec::MAX_SPEC_BYTES + 1);
    let started = Instant::now();
    let source = SpecSource::from_text("big.yaml", text);
    assert!(started.elapsed() < Duration::from_secs(1));
    let d = only(&source);
    assert_eq!(
        d.message,
        "the file is 8,388,609 bytes, more than a spec file may hold (8 MiB)"
    );
    insta::assert_snapshot!(source.render_diagnostics());
}

#[test]
fn the_helpdesk_example_checks_clean() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk/toolgate.yaml");
    let source = SpecSource::read(&path).expect("the example is readable");
    assert_eq!(
        source.checked.diagnostics,
        [],
        "{}",
        source.render_diagnostics()
    );
    assert!(source.checked.is_ok());
    let spec = source.checked.spec.as_ref().expect("a model");
    assert!(spec.tools.len() >= 10);
    // Shown under the path a reader at the repository's root would give.
    let shown = SpecSource {
        path: "examples/helpdesk/toolgate.yaml".into(),
        ..source
    };
    insta::assert_snapshot!(shown.render_diagnostics());
}

// Reading from disk.

/// An error message with the temporary directory replaced, for snapshots.
fn one_line(error: &SpecReadError, dir: &Path) -> String {
    let message = error.to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
    message.replace(&dir.display().to_string(), "[dir]")
}

#[test]
fn a_missing_file_is_one_line_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let error = SpecSource::read(dir.path().join("toolgate.yaml")).unwrap_err();
    assert!(matches!(error, SpecReadError::Io { .. }));
    insta::assert_snapshot!(
        one_line(&error, dir.path()),
        @"cannot read spec file [dir]/toolgate.yaml: No such file or directory (os error 2); create it or name another with -f FILE"
    );
}

#[test]
fn a_file_that_is_not_utf8_is_one_line_with_the_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.yaml");
    std::fs::write(
        &path,
        b"tools:\n  - name: caf\xe9\n    description: Coffee.\n",
    )
    .unwrap();
    let error = SpecSource::read(&path).unwrap_err();
    assert!(matches!(
        error,
        SpecReadError::NotText {
            offset: 20,
            byte: 0xE9,
            line: 2,
            column: 14,
            ..
        }
    ));
    insta::assert_snapshot!(
        one_line(&error, dir.path()),
        @"[dir]/toolgate.yaml is not UTF-8 text (byte 0xE9 at line 2, column 14); a spec file is YAML or JSON, saved as UTF-8"
    );
}

#[test]
fn a_50_mb_file_of_garbage_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.yaml");
    // Deterministic noise: bytes of every value, no structure.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let garbage: Vec<u8> = (0..50 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    std::fs::write(&path, &garbage).unwrap();
    let started = Instant::now();
    let error = SpecSource::read(&path).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(
        error,
        SpecReadError::TooLarge {
            size: 52_428_800,
            ..
        }
    ));
    insta::assert_snapshot!(
        one_line(&error, dir.path()),
        @"[dir]/toolgate.yaml is 50 MiB, more than a spec file may hold (8 MiB); check that this is the spec file you meant"
    );
}

#[test]
fn code_mode_limits_that_cannot_hold_a_program_are_errors_that_say_what_to_write() {
    let source = check("code_mode_limits.yaml");
    let messages: Vec<&str> = source
        .checked
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert!(
        messages[0].starts_with("`interpreter_time` is `ten seconds`, which is not a duration")
    );
    insta::assert_snapshot!(source.render_diagnostics());
}
