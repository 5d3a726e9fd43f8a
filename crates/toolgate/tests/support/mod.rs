//! What the MCP server's integration tests share: an rmcp client that answers
//! elicitation as told and keeps what it hears, and an `McpServer` on one end of
//! a pipe or on a loopback port.

#![allow(dead_code)]

pub mod mcp;
