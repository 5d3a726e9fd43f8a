use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(description = "  ", effect = "read")]
struct LookupOrder;

fn main() {}
