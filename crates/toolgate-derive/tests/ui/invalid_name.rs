extern crate toolgate_core as toolgate; use toolgate_derive::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(name = "orders/lookup", effect = "read")]
struct LookupOrder;

fn main() {}
