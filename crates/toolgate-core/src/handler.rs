//! The typed tool contract: a data trait the derive writes, a behaviour trait the user writes.

use std::future::Future;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Effect, ToolCtx, ToolError, ToolUsage};

/// A tool's static identity. `#[derive(Tool)]` writes it from the type's name, doc
/// comment and `#[tool(...)]` attributes; it has no behaviour.
pub trait ToolMeta {
    /// The canonical name, e.g. `create_ticket`.
    const NAME: &'static str;
    /// What the tool does, for the model.
    const DESCRIPTION: &'static str;
    /// What calling it does to the world.
    const EFFECT: Effect;
}

/// A tool's typed behaviour.
///
/// The input schema is derived from [`ToolHandler::Input`] with schemars (doc
/// comments on fields become descriptions); the output schema from
/// [`ToolHandler::Output`], unless it is an unconstrained value such as
/// `serde_json::Value`, which declares no output schema.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use toolgate_core::{Effect, ToolCtx, ToolError, ToolHandler, ToolMeta};
///
/// struct Echo;
/// impl ToolMeta for Echo {
///     const NAME: &'static str = "echo";
///     const DESCRIPTION: &'static str = "Repeat the text.";
///     const EFFECT: Effect = Effect::Read;
/// }
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Text { /// What to repeat.
///     text: String }
///
/// impl ToolHandler for Echo {
///     type Input = Text;
///     type Output = String;
///     async fn call(&self, _ctx: &ToolCtx, input: Text) -> Result<String, ToolError> {
///         Ok(input.text)
///     }
/// }
/// ```
pub trait ToolHandler: ToolMeta + Send + Sync + 'static {
    /// The arguments, as the model sends them.
    type Input: DeserializeOwned + JsonSchema + Send;
    /// What the tool returns.
    type Output: Serialize + JsonSchema + Send;

    /// The input field whose value makes a repeated call safe, for idempotent tools.
    const IDEMPOTENCY_KEY: Option<&'static str> = None;

    /// Runs the tool.
    fn call(
        &self,
        ctx: &ToolCtx,
        input: Self::Input,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// Guidance for the planner; none by default.
    fn usage() -> ToolUsage {
        ToolUsage::default()
    }
}

/// The JSON Schema (2020-12) of `T`, as a tool schema: no `$schema` and no
/// Rust type name as `title` at the root.
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    value
}

/// The output schema of `T`, or `None` when it constrains nothing.
pub(crate) fn output_schema_of<T: JsonSchema>() -> Option<Value> {
    let value = schema_of::<T>();
    let unconstrained =
        value == Value::Bool(true) || value.as_object().is_some_and(|o| o.is_empty());
    (!unconstrained).then_some(value)
}
