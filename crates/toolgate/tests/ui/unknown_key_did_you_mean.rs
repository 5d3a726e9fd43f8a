use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
#[tool(efect = "read")]
struct LookupOrder;

fn main() {}
