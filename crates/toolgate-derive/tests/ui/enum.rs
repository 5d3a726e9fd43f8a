extern crate toolgate_core as toolgate; use toolgate_derive::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
enum LookupOrder {
    ById(u64),
}

fn main() {}
