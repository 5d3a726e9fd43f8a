use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "readonly")]
struct LookupOrder;

fn main() {}
