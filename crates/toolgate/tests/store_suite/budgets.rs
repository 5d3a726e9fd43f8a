//! Budgets counted in the store: eight callers on two gates sharing it (two
//! processes on an SQLite file, two instances on PostgreSQL) get exactly the
//! calls a budget allows, and every handle reads what it has spent.

use super::*;
use toolgate::{Catalog, Gate, ToolCall};

const SPEC: &str = r#"
principals:
  support_bot: {ceiling: external, scopes: ["*"]}
policy:
  effects: {external: allow}
budgets:
  - {principal: support_bot, tools: "refund*", calls: 30, per: 1d}
  - {principal: "*", tools: "*", cost: 100000, per: 1d}
tools:
  - name: refund
    description: Refund an order.
    effect: external
    parameters:
      type: object
      properties: {cents: {type: integer}}
      required: [cents]
    cost: {arg: cents}
    response: {refunded: "{args.cents}"}
"#;

pub(super) fn a_budget_lets_exactly_its_calls_through_eight_callers_on_two_gates(
    backend: &dyn Backend,
) {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    let spec: toolgate::spec::SpecFile = serde_json::from_value(doc.value).unwrap();
    let gate = |store: Arc<dyn Store>| {
        Arc::new(Gate::from_spec(&spec, "toolgate.yaml", &Catalog::new(), store).unwrap())
    };
    let gates = [gate(backend.open().unwrap()), gate(backend.open().unwrap())];
    let bot = spec.principals["support_bot"].to_principal("support_bot");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .enable_all()
        .build()
        .unwrap();
    let (ran, refused) = runtime.block_on(async {
        let callers: Vec<_> = (0..8)
            .map(|caller| {
                let (gate, bot) = (gates[caller % 2].clone(), bot.clone());
                tokio::spawn(async move {
                    let (mut ran, mut refused) = (0, Vec::new());
                    for i in 0..10 {
                        let call = ToolCall::new(
                            format!("c{caller}-{i}"),
                            "refund",
                            json!({"cents": 100}),
                        );
                        match gate.call(&format!("s{caller}"), call, &bot).await {
                            Outcome::Ok { .. } => ran += 1,
                            Outcome::Denied { reason } => refused.push(reason),
                            other => panic!("{other:?}"),
                        }
                    }
                    (ran, refused)
                })
            })
            .collect();
        let (mut ran, mut refused) = (0, Vec::new());
        for caller in callers {
            let (r, mut d) = caller.await.unwrap();
            ran += r;
            refused.append(&mut d);
        }
        (ran, refused)
    });
    assert_eq!(ran, 30);
    assert_eq!(refused.len(), 50);
    assert!(
        refused[0].starts_with(
            "over budget (support_bot's calls to `refund*`: 30 calls per 1d): 30 of 30 calls spent this window, so it would make 31 (1 over); the budget starts afresh at "
        ),
        "{}",
        refused[0]
    );
    // A third handle reads what both gates spent: 30 calls, and 30 × 100 cents.
    let store = backend.open().unwrap();
    let used =
        toolgate::budgets::budgets_in_use(&spec.budgets, &*store, SystemTime::now()).unwrap();
    let spent: Vec<(Option<&str>, u64, u64)> = used
        .iter()
        .map(|u| (u.principal.as_deref(), u.spent, u.limit))
        .collect();
    assert_eq!(
        spent,
        [
            (Some("support_bot"), 30, 30),
            (Some("support_bot"), 3000, 100000)
        ]
    );
}
