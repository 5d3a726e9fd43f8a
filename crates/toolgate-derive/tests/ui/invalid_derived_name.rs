extern crate toolgate_core as toolgate; use toolgate_derive::Tool;

/// Order a coffee.
#[derive(Tool)]
#[tool(effect = "external")]
struct Café;

fn main() {}
