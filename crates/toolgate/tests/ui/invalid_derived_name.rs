use toolgate::Tool;

/// Order a coffee.
#[derive(Tool)]
#[tool(effect = "external")]
struct Café;

fn main() {}
