use toolgate::Tool;

#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

fn main() {}
