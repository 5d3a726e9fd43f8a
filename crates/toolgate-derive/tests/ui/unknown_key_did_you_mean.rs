extern crate toolgate_core as toolgate; use toolgate_derive::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(efect = "read")]
struct LookupOrder;

fn main() {}
