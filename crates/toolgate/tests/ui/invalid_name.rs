use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(name = "orders/lookup", effect = "read")]
struct LookupOrder;

fn main() {}
