//! How an `http:` binding writes a list or an object into its URL: OpenAPI's path
//! styles (`simple`, `label`, `matrix`, after RFC 6570's `{x}`, `{.x}` and `{;x}`),
//! and the query value that lets reserved characters through (`allowReserved`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A path placeholder's serialization, keyed in `path:` by the argument the
/// placeholder reads (`id` for `{args.id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StyledPath {
    /// How the value is written (default `simple`).
    #[serde(default, skip_serializing_if = "PathStyle::is_simple")]
    pub style: PathStyle,
    /// `true` gives each list item or object member a prefix of its own
    /// (`.a.b`, `;id=a;id=b`, `.x=1.y=2`); `false` (the default) joins them with `,`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explode: bool,
    /// The parameter's name as `matrix` writes it (`;NAME=`), when it is not the
    /// argument's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// OpenAPI's path parameter styles, shown for `5`, `[3, 4]` and `{x: 1, y: 2}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PathStyle {
    /// `5`, `3,4`, `x,1,y,2` (exploded: `x=1,y=2`).
    #[default]
    Simple,
    /// `.5`, `.3,4` (exploded: `.3.4`), `.x,1,y,2` (exploded: `.x=1.y=2`).
    Label,
    /// `;id=5`, `;id=3,4` (exploded: `;id=3;id=4`), `;id=x,1,y,2` (exploded: `;x=1;y=2`).
    Matrix,
}

impl PathStyle {
    fn is_simple(&self) -> bool {
        *self == PathStyle::Simple
    }

    /// The style's name as the spec file writes it (`style: label`).
    pub fn as_str(self) -> &'static str {
        match self {
            PathStyle::Simple => "simple",
            PathStyle::Label => "label",
            PathStyle::Matrix => "matrix",
        }
    }
}
