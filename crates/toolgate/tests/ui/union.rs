use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
union LookupOrder {
    id: u64,
}

fn main() {}
