use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
enum LookupOrder {
    ById(u64),
}

fn main() {}
