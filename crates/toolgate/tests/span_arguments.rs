//! A call's arguments reach its `execute_tool` span only when the spec's
//! `telemetry.span_arguments` names them, with secrets redacted as the audit
//! log has them and long values cut.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate::spec::SpecFile;
use toolgate::{Catalog, Gate, MemoryGateStore, Principal, ToolCall};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, span};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

const FIELD: &str = "gen_ai.tool.call.arguments";

/// What was recorded as a span's arguments, by span name.
#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<Vec<(String, String)>>>);

struct Visitor<'a>(&'a Recorded, String);

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == FIELD {
            let mut all = self.0.0.lock().unwrap();
            all.push((self.1.clone(), value.to_owned()));
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorded {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        attrs.record(&mut Visitor(self, attrs.metadata().name().to_owned()));
    }
    fn on_record(&self, id: &span::Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let name = ctx
            .span(id)
            .map(|s| s.name().to_owned())
            .unwrap_or_default();
        values.record(&mut Visitor(self, name));
    }
}

fn gate(telemetry: &str) -> Gate {
    let text = format!(
        r#"
{telemetry}
tools:
  - name: sign_in
    description: Sign a user in.
    effect: read
    parameters:
      type: object
      properties:
        user: {{type: string}}
        pin: {{type: string, writeOnly: true}}
        api_key: {{type: string}}
        bio: {{type: string}}
        extra: {{type: string}}
    response: {{ok: true}}
"#
    );
    let doc = toolgate::spec::Document::parse(&text).unwrap();
    let spec: SpecFile = serde_json::from_value(doc.value).unwrap();
    Gate::from_spec(
        &spec,
        "toolgate.yaml",
        &Catalog::new(),
        Arc::new(MemoryGateStore::default()),
    )
    .unwrap()
}

async fn recorded(gate: &Gate) -> Vec<(String, String)> {
    let recorded = Recorded::default();
    let subscriber = tracing_subscriber::registry().with(recorded.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let arguments = json!({
        "user": "ada",
        "pin": "4321",
        "api_key": "sk-live-secret",
        "bio": "b".repeat(3000),
        "extra": "not-named",
    });
    let outcome = gate
        .call(
            "s",
            ToolCall::new("c1", "sign_in", arguments),
            &Principal::operator(),
        )
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    recorded.0.lock().unwrap().clone()
}

#[tokio::test]
async fn a_call_span_has_no_arguments_unless_the_spec_opts_its_tool_in() {
    assert_eq!(recorded(&gate("")).await, vec![]);
    let other = gate("telemetry: {span_arguments: {other_tool: ['*']}}");
    assert_eq!(recorded(&other).await, vec![]);
}

#[tokio::test]
async fn an_opted_in_span_has_the_named_arguments_with_secrets_redacted_and_values_cut() {
    let gate = gate("telemetry: {span_arguments: {sign_in: [user, pin, api_key, bio]}}");
    let got = recorded(&gate).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "execute_tool");
    let text = &got[0].1;
    assert!(
        !text.contains("4321") && !text.contains("sk-live-secret"),
        "{text}"
    );
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(value["user"], "ada");
    assert_eq!(value["pin"], "[redacted]");
    assert_eq!(value["api_key"], "[redacted]");
    assert!(value.get("extra").is_none(), "{text}");
    let bio = value["bio"].as_str().unwrap();
    assert!(
        bio.starts_with("bbb") && bio.chars().count() < 400,
        "{}",
        bio.len()
    );
}

#[tokio::test]
async fn a_star_tool_entry_opts_every_tool_in() {
    let gate = gate("telemetry: {span_arguments: {'*': ['*']}}");
    let got = recorded(&gate).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let value: Value = serde_json::from_str(&got[0].1).unwrap();
    assert_eq!(value["extra"], "not-named");
    assert_eq!(value["pin"], "[redacted]");
}
