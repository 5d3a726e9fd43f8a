//! The built-in `search_tools` tool, called through a real gate: the model finds
//! tools by what they do, sees only what it may use, and the index follows the
//! catalog as tools come and go.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::search::{Exclusion, ListedTools, SEARCH_TOOLS, found_tool_names};
use toolgate::{
    Catalog, Decision, DynTool, Effect, Gate, Outcome, Policy, Principal, ToolCall, ToolDescriptor,
    policy::PolicyRule, search::SearchTools, spec::SpecTool, tool::Tier, tool::ToolSource,
};

fn spec_tool(name: &str, description: &str, effect: &str) -> Arc<dyn DynTool> {
    let spec = serde_json::from_value(json!({
        "name": name, "description": description, "effect": effect,
        "usage": {"when_to_use": format!("Use it to {}", description.to_lowercase()),
                  "when_not_to": "Never for anything about the weather."}
    }))
    .unwrap();
    Arc::new(SpecTool::new(spec, "support.yaml"))
}

fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (name, description, effect) in [
        ("orders.lookup", "Look up an order by its number.", "read"),
        (
            "orders.refund",
            "Refund an order to the customer's card.",
            "write",
        ),
        (
            "admin.delete_customer",
            "Delete a customer account and its orders.",
            "destructive",
        ),
        (
            "weather.forecast",
            "Forecast the weather for a city.",
            "read",
        ),
    ] {
        catalog
            .register(spec_tool(name, description, effect))
            .unwrap();
    }
    catalog
}

async fn search(gate: &Gate, principal: &Principal, arguments: Value) -> Outcome {
    gate.call(
        "s1",
        ToolCall::new("c1", SEARCH_TOOLS, arguments),
        principal,
    )
    .await
}

fn found(outcome: &Outcome) -> Vec<String> {
    match outcome {
        Outcome::Ok { value, .. } => found_tool_names(value),
        other => panic!("expected a result, got {other:?}"),
    }
}

#[tokio::test]
async fn a_model_finds_tools_by_what_they_do_with_their_guidance() {
    let mut catalog = catalog();
    SearchTools::register_in(&mut catalog).unwrap();
    let gate = Gate::builder(catalog).build();
    let outcome = search(
        &gate,
        &Principal::operator(),
        json!({"query": "refund an order", "k": 2}),
    )
    .await;
    assert_eq!(found(&outcome), ["orders.refund", "orders.lookup"]);
    let Outcome::Ok { value, .. } = &outcome else {
        unreachable!()
    };
    let first = &value["tools"][0];
    assert_eq!(
        first["description"],
        "Refund an order to the customer's card."
    );
    assert_eq!(
        first["when_to_use"],
        "Use it to refund an order to the customer's card."
    );
    assert_eq!(
        first["when_not_to"],
        "Never for anything about the weather."
    );
    assert_eq!(first["effect"], "write");
}

#[tokio::test]
async fn when_not_to_guidance_does_not_make_a_tool_match() {
    let mut catalog = catalog();
    SearchTools::register_in(&mut catalog).unwrap();
    let gate = Gate::builder(catalog).build();
    let outcome = search(&gate, &Principal::operator(), json!({"query": "weather"})).await;
    assert_eq!(found(&outcome), ["weather.forecast"]);
}

#[tokio::test]
async fn tools_the_caller_may_not_use_are_left_out() {
    let mut catalog = catalog();
    let policy = Policy {
        rules: vec![PolicyRule {
            mode: Default::default(),
            tools: "orders.refund".into(),
            decision: Decision::Deny,
            when: None,
            answered_by: None,
            reason: Some("refunds go through a person".into()),
        }],
        ..Policy::default()
    };
    let search_tools = SearchTools::new(&catalog)
        .with_policy(policy.clone())
        .with_filter(|_, tool| (tool.name == "orders.lookup").then_some(Exclusion::BreakerOpen));
    catalog.register(Arc::new(search_tools)).unwrap();
    let gate = Gate::builder(catalog).policy(policy).build();
    let reader = Principal {
        id: "bot".into(),
        ceiling: Tier::Write,
        scopes: vec!["*".into()],
        claims: Default::default(),
    };
    let outcome = search(&gate, &reader, json!({"query": "order customer", "k": 5})).await;
    assert_eq!(
        found(&outcome),
        Vec::<String>::new(),
        "refund denied, lookup broken, delete above the ceiling"
    );
    let outcome = search(
        &gate,
        &Principal::operator(),
        json!({"query": "order customer"}),
    )
    .await;
    assert_eq!(found(&outcome), ["admin.delete_customer"]);
}

#[tokio::test]
async fn tools_the_flow_blocks_now_are_left_out_until_it_allows_them() {
    let spec: toolgate::spec::SpecFile = serde_json::from_value(
        toolgate::spec::Document::parse(
            "flow:
  steps:
    - id: verify
      allow: [orders.lookup]
      done: {called_ok: orders.lookup}
    - id: serve
      after: [verify]
      allow: [orders.refund]
",
        )
        .unwrap()
        .value,
    )
    .unwrap();
    let mut catalog = catalog();
    SearchTools::register_in(&mut catalog).unwrap();
    let gate = Gate::builder(catalog).spec(&spec).build();
    let operator = Principal::operator();
    let query = json!({"query": "refund an order", "k": 5});
    let before = found(&search(&gate, &operator, query.clone()).await);
    assert!(
        !before.contains(&"orders.refund".to_owned()),
        "refund waits for the verify step: {before:?}"
    );
    assert!(before.contains(&"orders.lookup".to_owned()));
    let lookup = gate
        .call(
            "s1",
            ToolCall::new("c2", "orders.lookup", json!({})),
            &operator,
        )
        .await;
    assert!(lookup.is_ok(), "{lookup:?}");
    let after = found(&search(&gate, &operator, query).await);
    assert_eq!(after.first().map(String::as_str), Some("orders.refund"));
}

#[test]
fn operators_can_see_what_was_left_out_and_why() {
    let catalog = catalog();
    let search = SearchTools::new(&catalog)
        .with_filter(|_, tool| (tool.name == "orders.refund").then_some(Exclusion::Quarantined));
    let hits = search.search(&Principal::operator(), "refund an order", 5, true);
    assert_eq!(hits[0].name, "orders.refund");
    assert_eq!(hits[0].excluded, Some(Exclusion::Quarantined));
}

#[test]
fn the_index_follows_the_catalog_as_tools_come_and_go() {
    let search = SearchTools::new(&catalog());
    assert_eq!(search.len(), 4);
    let operator = Principal::operator();
    assert!(found_tool_names(&search.find(&operator, "translate", 5)).is_empty());
    search.insert(&ToolDescriptor::new(
        "lang.translate",
        "Translate text into another language.",
        json!({"type": "object"}),
        Effect::Read,
        ToolSource::Mcp {
            server: "lang".into(),
        },
    ));
    assert_eq!(
        found_tool_names(&search.find(&operator, "translate", 5)),
        ["lang.translate"]
    );
    assert!(search.remove("lang.translate"));
    assert!(!search.remove("lang.translate"));
    assert!(found_tool_names(&search.find(&operator, "translate", 5)).is_empty());
    search.insert(&toolgate::search::search_tools_descriptor());
    assert_eq!(search.len(), 4, "search_tools never finds itself");
}

#[tokio::test]
async fn bad_arguments_tell_the_model_how_to_call_it() {
    let mut catalog = catalog();
    SearchTools::register_in(&mut catalog).unwrap();
    let gate = Gate::builder(catalog).build();
    for arguments in [
        json!({}),
        json!({"query": "   "}),
        json!({"query": "x", "k": 0}),
    ] {
        let outcome = search(&gate, &Principal::operator(), arguments.clone()).await;
        let Outcome::Error {
            message,
            retryable: false,
        } = &outcome
        else {
            panic!("{arguments}: {outcome:?}");
        };
        assert!(
            message.contains("query") || message.contains("k"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn a_session_lists_what_its_searches_found() {
    let mut catalog = catalog();
    let search_tools = SearchTools::register_in(&mut catalog).unwrap();
    let mut listed = ListedTools::new(["orders.lookup".to_owned()]);
    let descriptors: Vec<ToolDescriptor> = catalog.iter().map(|t| t.descriptor().clone()).collect();
    let names = |l: &ListedTools| {
        l.listed(&descriptors)
            .iter()
            .map(|t| t.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&listed), ["orders.lookup", SEARCH_TOOLS]);
    let result = search_tools.find(&Principal::operator(), "refund", 5);
    assert!(listed.reveal(found_tool_names(&result).iter().map(String::as_str)));
    assert_eq!(
        names(&listed),
        ["orders.lookup", "orders.refund", SEARCH_TOOLS]
    );
    assert!(!listed.reveal(found_tool_names(&result).iter().map(String::as_str)));
}
