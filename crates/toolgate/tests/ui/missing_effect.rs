use toolgate::Tool;

/// Look up an order.
#[derive(Tool)]
struct LookupOrder;

fn main() {}
