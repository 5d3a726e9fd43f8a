//! Native tools: define tools in Rust with `#[derive(Tool)]` and a `ToolHandler`
//! impl, register them in a catalog, and print their descriptors as JSON.
//!
//! Run it with `cargo run -p toolgate --example native_tools`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate::{Catalog, Tool, ToolCtx, ToolError, ToolHandler, tool::ToolUsage};

/// Create a ticket in the support queue.
#[derive(Tool)]
#[tool(effect = "write")]
pub struct CreateTicket;

/// What the ticket is about.
#[derive(Deserialize, JsonSchema)]
pub struct TicketRequest {
    /// One line summing up the problem.
    pub subject: String,
    /// The customer's own words, as much as they gave.
    pub body: String,
    /// How soon someone must look at it.
    #[serde(default)]
    pub priority: Priority,
}

#[derive(Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    Urgent,
}

/// The ticket that was created.
#[derive(Serialize, JsonSchema)]
pub struct TicketRef {
    /// The ticket's id, e.g. `T-1042`.
    pub ticket_id: String,
    /// The queue it waits in.
    pub priority: Priority,
}

impl ToolHandler for CreateTicket {
    type Input = TicketRequest;
    type Output = TicketRef;

    async fn call(&self, ctx: &ToolCtx, input: TicketRequest) -> Result<TicketRef, ToolError> {
        if input.subject.trim().is_empty() || input.body.trim().is_empty() {
            return Err(ToolError::invalid_input(
                "`subject` and `body` must say what the problem is",
            ));
        }
        Ok(TicketRef {
            ticket_id: format!("T-{}", ctx.call_id()),
            priority: input.priority,
        })
    }
}

/// Fetch a web page and return its text.
#[derive(Tool)]
#[tool(effect = "external")]
pub struct HTTPFetch;

#[derive(Deserialize, JsonSchema)]
pub struct FetchRequest {
    /// The absolute http(s) URL to fetch.
    pub url: String,
}

impl ToolHandler for HTTPFetch {
    type Input = FetchRequest;
    type Output = serde_json::Value;

    async fn call(
        &self,
        _ctx: &ToolCtx,
        input: FetchRequest,
    ) -> Result<serde_json::Value, ToolError> {
        Err(ToolError::permanent(format!(
            "this example does not reach the network ({})",
            input.url
        )))
    }

    fn usage() -> ToolUsage {
        ToolUsage {
            when_to_use: Some("The user names a page whose content you need.".into()),
            when_not_to: Some("General questions you can answer without the page.".into()),
            cost: Some("network call".into()),
            tier: Some("external".into()),
            ..ToolUsage::default()
        }
    }
}

/// The example's catalog.
pub fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    catalog
        .register_native(CreateTicket)
        .expect("example tool names are valid and distinct");
    catalog
        .register_native(HTTPFetch)
        .expect("example tool names are valid and distinct");
    catalog
}

/// Every descriptor in the catalog, as pretty JSON.
pub fn descriptors_json() -> String {
    let descriptors: Vec<_> = catalog()
        .iter()
        .map(|tool| tool.descriptor().clone())
        .collect();
    serde_json::to_string_pretty(&descriptors).expect("descriptors serialize")
}

#[allow(dead_code)]
fn main() {
    println!("{}", descriptors_json());
}
