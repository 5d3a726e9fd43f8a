use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(effect = write)]
struct LookupOrder;

fn main() {}
