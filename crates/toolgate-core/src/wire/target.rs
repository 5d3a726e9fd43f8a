//! The model APIs toolgate speaks.

use std::fmt;
use std::str::FromStr;

use super::NameRules;

/// A model API's tool wire format, named as on the command line (`--for`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// OpenAI Chat Completions.
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Qwen on Alibaba Cloud Model Studio (DashScope), Responses in compatible mode.
    Qwen,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini API (AI Studio).
    Gemini,
    /// Gemini on Vertex AI.
    Vertex,
    /// Model Context Protocol `tools/list` and `tools/call`.
    Mcp,
}

impl Target {
    /// Every target, in the order `--target` lists them.
    pub const ALL: [Target; 7] = [
        Target::OpenAiChat,
        Target::OpenAiResponses,
        Target::Qwen,
        Target::Anthropic,
        Target::Gemini,
        Target::Vertex,
        Target::Mcp,
    ];

    /// The `--target` name (`openai-chat`).
    pub fn as_str(self) -> &'static str {
        match self {
            Target::OpenAiChat => "openai-chat",
            Target::OpenAiResponses => "openai-responses",
            Target::Qwen => "qwen",
            Target::Anthropic => "anthropic",
            Target::Gemini => "gemini",
            Target::Vertex => "vertex",
            Target::Mcp => "mcp",
        }
    }

    /// The function names this API accepts.
    pub fn name_rules(self) -> NameRules {
        match self {
            Target::OpenAiChat | Target::OpenAiResponses | Target::Qwen => NameRules::OPENAI,
            Target::Anthropic => NameRules::ANTHROPIC,
            Target::Gemini | Target::Vertex => NameRules::GEMINI,
            Target::Mcp => NameRules::MCP,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--for` value that names no target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown target `{0}`: expected one of openai-chat, openai-responses, qwen, anthropic, gemini, vertex, mcp"
)]
pub struct UnknownTarget(pub String);

impl FromStr for Target {
    type Err = UnknownTarget;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Target::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownTarget(s.to_owned()))
    }
}
