use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read", timeout = "5s")]
struct LookupOrder;

fn main() {}
