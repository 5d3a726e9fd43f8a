//! The Model Context Protocol, both ways, on the official Rust SDK (`rmcp`): the
//! catalog served to any MCP client ([`server`]), and MCP servers' tools used as
//! catalog tools ([`client`]). Every call in either direction goes through the gate.
//! [`Downstream`], the client a served call came from, is read by both: the
//! server registers it, and a call relayed upstream reports back to it.

pub mod client;
mod downstream;
pub mod server;

pub use downstream::Downstream;
pub(crate) use downstream::LogLevel;
