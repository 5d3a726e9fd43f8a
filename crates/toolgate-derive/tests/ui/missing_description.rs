extern crate toolgate_core as toolgate; use toolgate_derive::Tool;

#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

fn main() {}
