//! The native-tool example, run as a specification of the typed tool contract.

#[path = "../../../examples/native_tools.rs"]
mod example;

use serde_json::{Value, json};
use toolgate::{DynTool, Principal, ToolCtx, ToolError};

fn descriptors() -> Vec<Value> {
    serde_json::from_str(&example::descriptors_json()).unwrap()
}

fn ctx() -> ToolCtx {
    ToolCtx::new("42", Principal::operator())
}

#[test]
fn the_example_prints_each_descriptor_as_json() {
    insta::assert_snapshot!(example::descriptors_json());
}

#[test]
fn a_derived_tool_is_named_and_described_from_its_struct() {
    let ticket = &descriptors()[0];
    assert_eq!(ticket["name"], "create_ticket");
    assert_eq!(
        ticket["description"],
        "Create a ticket in the support queue."
    );
    assert_eq!(ticket["effect"], "write");
    assert_eq!(
        descriptors()[1]["name"],
        "http_fetch",
        "acronyms become one word"
    );
}

#[test]
fn the_input_schema_comes_from_the_input_type_with_field_descriptions() {
    let schema = &descriptors()[0]["input_schema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["subject"]["description"],
        "One line summing up the problem."
    );
    assert_eq!(schema["required"], json!(["subject", "body"]));
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
}

#[test]
fn a_tool_without_guidance_has_no_usage_key_and_one_with_guidance_shows_it() {
    assert!(descriptors()[0].get("usage").is_none());
    assert_eq!(descriptors()[1]["usage"]["cost"], "network call");
}

#[test]
fn a_typed_output_gives_an_output_schema_and_a_json_value_gives_none() {
    assert_eq!(
        descriptors()[0]["output_schema"]["properties"]["ticket_id"]["type"],
        "string"
    );
    assert!(descriptors()[1].get("output_schema").is_none());
}

#[tokio::test]
async fn a_valid_call_runs_the_handler_and_returns_json() {
    let catalog = example::catalog();
    let tool = catalog.get("create_ticket").unwrap();
    let out = tool
        .call(&ctx(), json!({"subject": "Broken", "body": "It broke."}))
        .await
        .unwrap();
    assert_eq!(out, json!({"ticket_id": "T-42", "priority": "normal"}));
}

#[tokio::test]
async fn input_that_does_not_deserialize_is_the_models_error_naming_the_field() {
    let catalog = example::catalog();
    let tool = catalog.get("create_ticket").unwrap();
    let err = tool
        .call(
            &ctx(),
            json!({"subject": "Broken", "body": "It broke.", "priority": "asap"}),
        )
        .await
        .unwrap_err();
    let ToolError::InvalidInput { message } = err else {
        panic!("expected invalid input, got {err:?}")
    };
    assert!(
        message.starts_with("at `priority`: unknown variant `asap`"),
        "{message}"
    );

    let err = tool
        .call(&ctx(), json!({"subject": "Broken"}))
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::invalid_input("missing field `body`"));
}

#[tokio::test]
async fn a_handler_error_keeps_its_kind() {
    let catalog = example::catalog();
    let err = catalog
        .get("http_fetch")
        .unwrap()
        .call(&ctx(), json!({"url": "https://example.com"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Permanent { .. }));
    assert!(!err.is_retryable());
}

#[test]
fn the_descriptor_carries_the_safety_fields_derived_from_the_effect() {
    let fetch = &descriptors()[1];
    assert_eq!(fetch["safety"]["tier"], "external");
    assert_eq!(fetch["safety"]["retry"], "never");
    assert_eq!(fetch["safety"]["annotations"]["openWorldHint"], true);
}

#[test]
fn an_idempotent_tool_reads_its_key_from_the_named_field() {
    use toolgate::{Tool, ToolHandler};

    /// Charge a card once per payment id.
    #[derive(Tool)]
    #[tool(effect = "idempotent")]
    struct Charge;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct ChargeRequest {
        payment_id: String,
        #[allow(dead_code)]
        cents: u64,
    }

    impl ToolHandler for Charge {
        type Input = ChargeRequest;
        type Output = String;
        const IDEMPOTENCY_KEY: Option<&'static str> = Some("payment_id");
        async fn call(&self, _ctx: &ToolCtx, input: ChargeRequest) -> Result<String, ToolError> {
            Ok(input.payment_id)
        }
    }

    let tool = toolgate::Native::new(Charge);
    assert_eq!(
        tool.idempotency_key(&json!({"payment_id": "p-7", "cents": 100})),
        Some("p-7".into())
    );
    assert_eq!(tool.idempotency_key(&json!({"cents": 100})), None);
}
