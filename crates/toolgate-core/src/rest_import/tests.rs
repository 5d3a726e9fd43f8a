//! The import end to end, on small descriptions of each version.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// Files by path, as a directory holding a description would.
pub(super) struct Files(pub HashMap<String, String>);

impl Sources for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| "no such file".to_owned())
    }
}

pub(super) fn fixtures() -> Files {
    Files(HashMap::from([
        (
            "shop.yaml".to_owned(),
            include_str!("../../tests/data/openapi/shop.yaml").to_owned(),
        ),
        (
            "common.yaml".to_owned(),
            include_str!("../../tests/data/openapi/common.yaml").to_owned(),
        ),
        (
            "styles.yaml".to_owned(),
            include_str!("../../tests/data/openapi/styles.yaml").to_owned(),
        ),
        (
            "pets.json".to_owned(),
            include_str!("../../tests/data/openapi/pets-2.0.json").to_owned(),
        ),
    ]))
}

pub(super) fn import(root: &str, options: &RestImportOptions) -> RestImported {
    import_openapi(root, &fixtures(), options).unwrap()
}

fn tool<'a>(imported: &'a RestImported, name: &str) -> &'a ToolSpec {
    imported
        .spec
        .tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[test]
fn each_operation_is_one_tool_with_a_canonical_name_and_its_effect() {
    let imported = import("shop.yaml", &RestImportOptions::default());
    let names: Vec<(&str, Effect)> = imported
        .spec
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.effect()))
        .collect();
    assert_eq!(
        names,
        [
            ("orders.list", Effect::Read),
            ("orders.create", Effect::Write),
            ("orders.get", Effect::Read),
            ("delete_orders_id", Effect::Destructive),
            ("login", Effect::Write),
        ]
    );
    let list = tool(&imported, "orders.list");
    assert_eq!(list.description, "List orders.\n\nNewest first.");
    assert_eq!(list.tags, ["orders"]);
    assert_eq!(
        imported
            .left_out
            .iter()
            .map(|l| l.reason.as_str())
            .collect::<Vec<_>>(),
        [
            "deprecated (--include-deprecated imports it)",
            "its request body is application/octet-stream, which toolgate does not send (it sends JSON, form-urlencoded, multipart form fields and text)"
        ]
    );
}

#[test]
fn parameters_and_the_body_merge_into_one_schema() {
    let imported = import("shop.yaml", &RestImportOptions::default());
    let list = tool(&imported, "orders.list");
    assert_eq!(
        list.parameters.as_ref().unwrap(),
        &json!({"type": "object", "properties": {
            "status": {"type": "array", "items": {"type": "string", "enum": ["open", "shipped"]}, "description": "Only orders in these states."},
            "limit": {"type": "integer", "default": 20, "minimum": 1, "maximum": 100},
            "X-Trace-Id": {"type": "string"}}})
    );
    let create = tool(&imported, "orders.create");
    let schema = create.parameters.as_ref().unwrap();
    assert_eq!(
        schema["required"],
        json!(["item", "quantity"]),
        "readOnly `id` left out"
    );
    assert!(schema["properties"].get("id").is_none());
    assert_eq!(
        schema["properties"]["note"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        schema["$defs"]["Category"]["properties"]["parent"],
        json!({"$ref": "#/$defs/Category"}),
        "a recursive schema from a file beside the document is kept under $defs"
    );
    assert!(
        create.returns.as_ref().unwrap()["properties"]
            .get("id")
            .is_some()
    );
    let login = tool(&imported, "login");
    assert_eq!(
        login.parameters.as_ref().unwrap()["properties"]["password"]["writeOnly"],
        json!(true)
    );
    let meta = jsonschema::draft202012::meta::validator();
    for t in &imported.spec.tools {
        for schema in [&t.parameters, &t.returns].into_iter().flatten() {
            assert!(meta.is_valid(schema), "{}: {schema}", t.name);
            assert!(jsonschema::draft202012::new(schema).is_ok(), "{}", t.name);
        }
    }
}

#[test]
fn a_name_taken_by_a_path_parameter_is_given_its_location() {
    let files = Files(HashMap::from([(
        "a.json".to_owned(),
        json!({"openapi": "3.1.0", "info": {"title": "A", "version": "1"}, "servers": [{"url": "https://a.example"}], "paths": {"/things/{id}": {"put": {
            "operationId": "put",
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                           {"name": "id", "in": "query", "schema": {"type": "integer"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "a.b": {"type": "string"}}}}}},
            "responses": {"200": {"description": "ok"}}}}}})
        .to_string(),
    )]));
    let imported = import_openapi("a.json", &files, &RestImportOptions::default()).unwrap();
    let schema = imported.spec.tools[0].parameters.clone().unwrap();
    let names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["id", "query_id", "body_id", "a_b"]);
    assert_eq!(schema["required"], json!(["id", "body_id"]));
    let notes: Vec<&str> = imported
        .notes
        .iter()
        .filter(|n| n.kind == NoteKind::Argument)
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
}

#[test]
fn swagger_2_reads_into_the_same_model() {
    let imported = import("pets.json", &RestImportOptions::default());
    let find = tool(&imported, "findPets");
    let add = tool(&imported, "addPet");
    assert_eq!(
        find.parameters.as_ref().unwrap()["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        find.returns.as_ref().unwrap()["items"]["properties"]["name"],
        json!({"type": "string"}),
        "a return value keeps its fields' types"
    );
    assert_eq!(
        add.parameters.as_ref().unwrap()["properties"]["name"]["examples"],
        json!(["Rex"])
    );
    assert_eq!(
        add.parameters.as_ref().unwrap(),
        &json!({"type": "object", "properties": {
            "name": {"type": "string", "examples": ["Rex"]},
            "tag": {"type": ["string", "null"]}}, "required": ["name"]})
    );
    let upload = tool(&imported, "uploadPhoto");
    assert_eq!(
        upload.parameters.as_ref().unwrap()["properties"]["file"],
        json!({"type": "string", "format": "binary"})
    );
}

#[test]
fn tags_include_exclude_and_effects_select_and_override() {
    let options = RestImportOptions {
        tags: vec!["orders".into()],
        exclude: vec!["DELETE /orders/*".parse().unwrap()],
        effects: parse_effects("'orders/*': external\n'orders/get': read\n").unwrap(),
        ..RestImportOptions::default()
    };
    let imported = import("shop.yaml", &options);
    let names: Vec<(&str, Effect)> = imported
        .spec
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.effect()))
        .collect();
    assert_eq!(
        names,
        [
            ("orders.list", Effect::External),
            ("orders.create", Effect::External),
            ("orders.get", Effect::Read)
        ]
    );
    let options = RestImportOptions {
        include: vec!["/categories/*".parse().unwrap()],
        include_deprecated: true,
        ..RestImportOptions::default()
    };
    let imported = import("shop.yaml", &options);
    assert_eq!(imported.spec.tools.len(), 1);
    assert_eq!(imported.spec.tools[0].name, "categories.get");
}

#[test]
fn bad_documents_are_clear_errors() {
    let one = |text: &str| {
        let files = Files(HashMap::from([("x.yaml".to_owned(), text.to_owned())]));
        import_openapi("x.yaml", &files, &RestImportOptions::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(one("a: [1"), one("a: [1"));
    assert!(
        one("a: [1").starts_with("x.yaml is not JSON or YAML"),
        "{}",
        one("a: [1")
    );
    assert!(one("{\"tools\": []}").contains("neither an `openapi` nor a `swagger` field"));
    assert!(one("openapi: 3.0.0\npaths: 3\n").contains("not a mapping"));
    assert!(one("swagger: '1.2'\npaths: {}\n").contains("Swagger 2.0"));
    let missing =
        import_openapi("nope.yaml", &fixtures(), &RestImportOptions::default()).unwrap_err();
    assert_eq!(missing.to_string(), "cannot read nope.yaml: no such file");
}

/// Every value at every place of a document, for mutation.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            pointers(
                v,
                format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                out,
            )
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| pointers(v, format!("{at}/{i}"), out)),
        _ => {}
    }
}

fn junk() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z#/{}$.]{0,12}".prop_map(Value::from),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/paths"})),
        Just(json!({"$ref": "common.yaml#/Nope"})),
        Just(json!({"$ref": "../../etc/passwd"})),
        Just(json!([{"$ref": "#/components/parameters/Trace"}])),
        Just(
            json!({"type": "object", "properties": {"a": {"$ref": "#/components/schemas/Order"}}})
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_mutated_document_imports_or_is_refused_but_never_panics(
        picks in proptest::collection::vec((any::<prop::sample::Index>(), junk()), 1..6),
        root in prop_oneof![Just("shop.yaml"), Just("pets.json")],
    ) {
        let files = fixtures();
        let mut doc: Value = document::parse(root, &files.0[root]).unwrap();
        for (index, junk) in picks {
            let mut all = Vec::new();
            pointers(&doc, String::new(), &mut all);
            let at = index.get(&all).clone();
            match doc.pointer_mut(&at) {
                Some(slot) if !at.is_empty() => *slot = junk,
                _ => {}
            }
        }
        let mut files = files;
        files.0.insert(root.to_owned(), doc.to_string());
        if let Ok(imported) = import_openapi(root, &files, &RestImportOptions::default()) {
            for t in &imported.spec.tools {
                prop_assert!(crate::validate_name(&t.name).is_ok());
            }
            let _ = imported.summary();
        }
    }

    #[test]
    fn any_text_imports_or_is_refused_but_never_panics(text in "\\PC{0,200}") {
        let files = Files(HashMap::from([("x".to_owned(), text)]));
        let _ = import_openapi("x", &files, &RestImportOptions::default());
    }
}

#[test]
fn each_tool_is_bound_to_its_request() {
    let imported = import("shop.yaml", &RestImportOptions::default());
    insta::assert_json_snapshot!("shop_tools", imported.spec);
    insta::assert_snapshot!("shop_summary", imported.summary().join("\n"));
    let imported = import("pets.json", &RestImportOptions::default());
    insta::assert_json_snapshot!("pets_tools", imported.spec);
    insta::assert_snapshot!("pets_summary", imported.summary().join("\n"));
}

#[test]
fn a_server_on_loopback_is_allowed_under_network() {
    let options = RestImportOptions {
        server: Some("http://127.0.0.1:4010".into()),
        ..RestImportOptions::default()
    };
    let imported = import("shop.yaml", &options);
    assert_eq!(imported.spec.network.allow, ["127.0.0.1:4010"]);
    assert!(
        imported.spec.tools[0]
            .http
            .as_ref()
            .unwrap()
            .url
            .starts_with("http://127.0.0.1:4010/orders")
    );
    let checked = crate::spec::check(&serde_json::to_string(&imported.spec).unwrap());
    let errors: Vec<_> = checked
        .diagnostics
        .iter()
        .map(|d| d.message.clone())
        .collect();
    assert!(checked.is_ok(), "{errors:?}");
}

#[test]
fn path_styles_allow_reserved_and_basic_credentials_reach_the_binding() {
    let imported = import("styles.yaml", &RestImportOptions::default());
    let bindings: Vec<Value> = imported
        .spec
        .tools
        .iter()
        .map(|t| {
            let http = t.http.as_ref().unwrap();
            json!({
                "tool": t.name,
                "url": http.url,
                "path": http.path,
                "query": http.query,
                "basic_auth": http.basic_auth,
            })
        })
        .collect();
    insta::assert_json_snapshot!("styles_bindings", bindings);
    let summary = imported.summary().join("\n");
    assert!(!summary.contains("sends as `simple`"), "{summary}");
    let checked = crate::spec::check(&serde_json::to_string(&imported.spec).unwrap());
    assert!(checked.is_ok(), "{:?}", checked.diagnostics);
}

#[test]
fn a_header_parameter_exploded_in_the_simple_style_is_named_in_explode_headers() {
    let document = r#"
openapi: 3.1.0
info: {title: Headers, version: 1.0.0}
servers: [{url: "https://headers.example"}]
paths:
  /colors:
    get:
      operationId: colors
      parameters:
        - {name: X-Color, in: header, style: simple, explode: true, schema: {type: object}}
        - {name: X-Shade, in: header, style: simple, explode: false, schema: {type: object}}
        - {name: X-Tone, in: header, schema: {type: object}}
      responses:
        "200": {description: Found.}
"#;
    let files = Files(HashMap::from([(
        "headers.yaml".to_owned(),
        document.to_owned(),
    )]));
    let imported = import_openapi("headers.yaml", &files, &RestImportOptions::default()).unwrap();
    let http = tool(&imported, "colors").http.as_ref().unwrap();
    let headers: Vec<&str> = http.headers.keys().map(String::as_str).collect();
    assert_eq!(headers, ["X-Color", "X-Shade", "X-Tone"]);
    assert_eq!(http.explode_headers, ["X-Color"]);
    let checked = crate::spec::check(&serde_json::to_string(&imported.spec).unwrap());
    assert!(checked.is_ok(), "{:?}", checked.diagnostics);
}

/// A description whose only server is `server` (with `variables`), one GET operation,
/// and a second operation with a server of its own when `op_server` is given.
fn served(server: Value, op_server: Option<&str>) -> Files {
    let mut paths = json!({"/latest/meta-data": {"get": {"operationId": "meta", "responses": {"200": {"description": "ok"}}}}});
    if let Some(url) = op_server {
        paths["/keys"] = json!({"get": {"operationId": "keys", "servers": [{"url": url}], "responses": {"200": {"description": "ok"}}}});
    }
    let doc = json!({
        "openapi": "3.0.3",
        "info": {"title": "Instance", "version": "1"},
        "servers": [server],
        "paths": paths,
    });
    Files(HashMap::from([("doc.json".to_owned(), doc.to_string())]))
}

fn import_served(files: &Files, allow: &[&str]) -> RestImported {
    let options = RestImportOptions {
        allow: allow.iter().map(|a| (*a).to_owned()).collect(),
        ..RestImportOptions::default()
    };
    import_openapi("doc.json", files, &options).unwrap()
}

fn check_warnings(imported: &RestImported) -> Vec<String> {
    let checked = crate::spec::check(&serde_json::to_string(&imported.spec).unwrap());
    checked
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.path, d.message))
        .collect()
}

#[test]
fn an_imported_server_on_a_link_local_host_is_not_allowed_without_allow() {
    let files = served(
        json!({"url": "http://{host}/", "variables": {"host": {"default": "169.254.169.254"}}}),
        None,
    );
    let imported = import_served(&files, &[]);
    assert!(
        imported.spec.network.allow.is_empty(),
        "{:?}",
        imported.spec.network
    );
    assert_eq!(
        imported.spec.tools[0].http.as_ref().unwrap().url,
        "http://169.254.169.254/latest/meta-data"
    );
    assert_eq!(
        imported.warnings,
        [
            "the description's server `169.254.169.254` is the address of a cloud metadata service, which hands out the machine's credentials; it is not added to `network.allow`, so calls of the tool bound to it will be refused. Pass `--allow 169.254.169.254` if the tools are meant to reach it"
        ]
    );
    assert!(
        !imported
            .summary()
            .iter()
            .any(|l| l.contains("allowed under `network:`")),
        "{:?}",
        imported.summary()
    );
    // `check` no longer says ok: calls to it will be refused.
    let warnings = check_warnings(&imported);
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("/tools/0/http/url: calls will be refused")),
        "{warnings:?}"
    );
}

#[test]
fn an_imported_server_on_loopback_or_a_private_name_needs_allow_and_allow_opens_it() {
    for (server, entry) in [
        ("http://127.0.0.1:8080/", "127.0.0.1:8080"),
        ("http://localhost:8080/", "localhost:8080"),
        ("http://10.0.0.7/", "10.0.0.7"),
        ("http://[fe80::1]:81/", "[fe80::1]:81"),
        ("https://billing.internal/v1", "billing.internal"),
        (
            "http://metadata.google.internal/",
            "metadata.google.internal",
        ),
    ] {
        let files = served(json!({"url": server}), None);
        let refused = import_served(&files, &[]);
        assert!(refused.spec.network.allow.is_empty(), "{server}");
        assert_eq!(refused.warnings.len(), 1, "{server}");
        assert!(
            refused.warnings[0].contains(&format!("server `{entry}` is "))
                && refused.warnings[0].contains(&format!("Pass `--allow {entry}`")),
            "{}",
            refused.warnings[0]
        );
        let allowed = import_served(&files, &[entry]);
        assert_eq!(allowed.spec.network.allow, [entry], "{server}");
        assert!(allowed.warnings.is_empty(), "{:?}", allowed.warnings);
        assert!(
            allowed.summary().iter().any(|l| l.contains(&format!(
                "`{entry}` is not a public host: allowed under `network:`, as --allow lets it through"
            ))),
            "{:?}",
            allowed.summary()
        );
    }
    // An entry for another port, or another host, does not cover it.
    let files = served(json!({"url": "http://127.0.0.1:8080/"}), None);
    for other in ["127.0.0.1:9090", "10.0.0.0/8", "localhost:8080"] {
        let imported = import_served(&files, &[other]);
        assert!(imported.spec.network.allow.is_empty(), "{other}");
        assert_eq!(imported.warnings.len(), 1, "{other}");
    }
    // A range covers an address in it; the entry written is the narrow one.
    let files = served(json!({"url": "http://10.1.2.3:8443/"}), None);
    let imported = import_served(&files, &["10.0.0.0/8"]);
    assert_eq!(imported.spec.network.allow, ["10.1.2.3:8443"]);
}

#[test]
fn an_operations_own_private_server_is_left_out_too_and_public_servers_need_nothing() {
    let files = served(
        json!({"url": "https://api.example.com"}),
        Some("http://192.168.1.10:9000"),
    );
    let imported = import_served(&files, &[]);
    assert!(imported.spec.network.allow.is_empty());
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    assert!(
        imported.warnings[0].starts_with(
            "the description's server `192.168.1.10:9000` is a private-network address"
        ),
        "{}",
        imported.warnings[0]
    );
    let public = import_served(
        &served(json!({"url": "https://api.example.com"}), None),
        &[],
    );
    assert!(public.spec.network.allow.is_empty());
    assert!(public.warnings.is_empty());
}

#[test]
fn a_server_index_picks_the_descriptions_host_and_still_needs_allow() {
    let files = served(json!({"url": "http://127.0.0.1:8080"}), None);
    let options = RestImportOptions {
        server: Some("0".into()),
        ..RestImportOptions::default()
    };
    let imported = import_openapi("doc.json", &files, &options).unwrap();
    assert!(imported.spec.network.allow.is_empty());
    assert_eq!(imported.warnings.len(), 1);
}
