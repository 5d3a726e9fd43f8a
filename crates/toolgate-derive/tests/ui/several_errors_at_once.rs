extern crate toolgate_core as toolgate; use toolgate_derive::Tool;

// No doc comment, no effect, an unknown key and a duplicate: all four are reported.
#[derive(Tool)]
#[tool(name = "lookup_order", nmae = "x", name = "lookup")]
struct LookupOrder;

fn main() {}
