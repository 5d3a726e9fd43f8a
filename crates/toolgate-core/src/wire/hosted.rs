//! Provider-hosted tools: search, code execution, file search and remote MCP run by
//! the model's provider, declared in a spec file's `hosted:` section.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the provider runs. Each target carries the ones it supports and reports
/// the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HostedTool {
    /// Web search (OpenAI `web_search`, Qwen `web_search`, Gemini `googleSearch`).
    WebSearch {
        /// Provider-specific options passed through as they are, e.g. `search_context_size`.
        #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
        options: IndexMap<String, Value>,
    },
    /// Qwen's page extractor; needs `web_search` beside it.
    WebExtractor {},
    /// Code execution (OpenAI `code_interpreter`, Qwen `code_interpreter`, Gemini `codeExecution`).
    CodeInterpreter {
        /// OpenAI's container: an id, or `{type: auto, ...}` (default `{type: auto}`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        container: Option<Value>,
    },
    /// Qwen's text-to-image search.
    WebSearchImage {},
    /// Qwen's image-to-image search.
    ImageSearch {},
    /// Search over the provider's vector stores.
    FileSearch {
        /// The vector stores to search.
        vector_store_ids: Vec<String>,
        /// How many results at the most; the provider's default when omitted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_num_results: Option<u32>,
    },
    /// A remote MCP server the provider connects to.
    Mcp {
        /// The name the provider gives the server's tools.
        server_label: String,
        /// Where the provider reaches the server.
        server_url: String,
        /// What the server is for, shown to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_description: Option<String>,
        /// Headers the provider sends with each request (credentials, usually).
        #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
        headers: IndexMap<String, String>,
        /// Qwen: the transport, `sse` (the only one it supports).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_protocol: Option<String>,
        /// OpenAI: the server's tools the model may use.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allowed_tools: Vec<String>,
        /// OpenAI: `always`, `never`, or the object form.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        require_approval: Option<Value>,
    },
}

impl HostedTool {
    /// The `type` name, as written in spec files.
    pub fn kind(&self) -> &'static str {
        match self {
            HostedTool::WebSearch { .. } => "web_search",
            HostedTool::WebExtractor {} => "web_extractor",
            HostedTool::CodeInterpreter { .. } => "code_interpreter",
            HostedTool::WebSearchImage {} => "web_search_image",
            HostedTool::ImageSearch {} => "image_search",
            HostedTool::FileSearch { .. } => "file_search",
            HostedTool::Mcp { .. } => "mcp",
        }
    }
}
