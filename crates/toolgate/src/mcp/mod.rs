//! The Model Context Protocol, both ways, on the official Rust SDK (`rmcp`): the
//! catalog served to any MCP client ([`server`]), and MCP servers' tools used as
//! catalog tools ([`client`]). Every call in either direction goes through the gate.

pub mod client;
pub mod server;
