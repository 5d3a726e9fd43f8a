extern crate toolgate_core as toolgate; use toolgate_derive::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
union LookupOrder {
    id: u64,
}

fn main() {}
