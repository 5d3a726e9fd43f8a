//! The type-erased tool the catalog stores, and the adapter from typed tools.

use std::any::type_name;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::handler::output_schema_of;
use crate::{Effect, ToolCtx, ToolDescriptor, ToolError, ToolHandler, ToolSource, schema_of};

/// An object-safe tool: a descriptor and a call on JSON values.
///
/// Tools whose identity is only known at run time (spec files, HTTP, MCP) implement
/// it directly; typed tools get it through [`Native`].
pub trait DynTool: Send + Sync + 'static {
    /// Everything known about the tool.
    fn descriptor(&self) -> &ToolDescriptor;

    /// Runs the tool on JSON arguments.
    fn call<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;

    /// The idempotency key carried by these arguments, if the tool has one.
    fn idempotency_key(&self, _input: &Value) -> Option<String> {
        None
    }

    /// Whether a call's idempotency key reaches what the tool acts on, so that
    /// repeating the call under its key changes nothing more: true by default
    /// (a Rust tool reads [`ToolCtx::idempotency_key`]); an HTTP binding says
    /// so only when it names an `idempotency_header`, an upstream MCP tool never.
    /// Only then does the gate retry an `idempotent` tool's call.
    fn passes_idempotency_key(&self) -> bool {
        true
    }

    /// The arguments the gateway fills at call time (a spec tool's `inject:`:
    /// parameter and template), which the model is never shown and may not
    /// supply; none by default.
    fn injected(&self) -> Option<&indexmap::IndexMap<String, String>> {
        None
    }

    /// Whether the tool can run now. A tool that cannot (an upstream tool quarantined
    /// by its pin, or behind an open circuit) says why; the gate refuses the call
    /// before validating or authorizing it, so nobody is asked to approve a call that
    /// could not run.
    fn available(&self) -> Result<(), ToolError> {
        Ok(())
    }

    /// Whether the tool answers about the other tools as the conversation stands
    /// (search does): the gate then puts its flow's view in the call's
    /// [`ToolCtx::flow_view`], so that the answer leaves out what the flow blocks now.
    fn reads_flow(&self) -> bool {
        false
    }

    /// Whether the tool's output may reach a model as it is. Output from untrusted
    /// sources (MCP servers, HTTP endpoints) is sanitized and fenced as data first.
    fn trusted(&self) -> bool {
        !matches!(self.descriptor().source, ToolSource::Mcp { .. })
    }

    /// The tool's canonical name, read off its descriptor.
    fn name(&self) -> &str {
        &self.descriptor().name
    }

    /// What the tool does, read off its descriptor.
    fn description(&self) -> &str {
        &self.descriptor().description
    }

    /// What running the tool can do, read off its descriptor.
    fn effect(&self) -> Effect {
        self.descriptor().effect
    }

    /// The JSON Schema of the tool's arguments, read off its descriptor.
    fn input_schema(&self) -> &Value {
        &self.descriptor().input_schema
    }

    /// The JSON Schema of what the tool returns, when its descriptor has one.
    fn output_schema(&self) -> Option<&Value> {
        self.descriptor().output_schema.as_ref()
    }
}

/// A typed [`ToolHandler`] seen as a [`DynTool`]: arguments are deserialized into
/// `T::Input` (a failure is the model's error and the handler never runs) and the
/// output serialized back to JSON.
pub struct Native<T> {
    tool: T,
    descriptor: ToolDescriptor,
}

impl<T: ToolHandler> Native<T> {
    /// Wraps `tool`, describing it from its constants, its input and output types'
    /// schemas and its usage.
    pub fn new(tool: T) -> Self {
        let mut descriptor = ToolDescriptor::new(
            T::NAME,
            T::DESCRIPTION,
            schema_of::<T::Input>(),
            T::EFFECT,
            ToolSource::Native {
                type_name: Some(type_name::<T>().to_owned()),
            },
        );
        descriptor.output_schema = output_schema_of::<T::Output>();
        descriptor.usage = T::usage();
        Native { tool, descriptor }
    }

    /// The typed tool inside.
    pub fn inner(&self) -> &T {
        &self.tool
    }
}

impl<T: ToolHandler> DynTool for Native<T> {
    fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let input: T::Input = decode_input(input)?;
            let output = self.tool.call(ctx, input).await?;
            serde_json::to_value(output).map_err(|e| {
                ToolError::permanent(format!(
                    "tool `{}` returned a value that is not JSON: {e}",
                    T::NAME
                ))
            })
        })
    }

    fn idempotency_key(&self, input: &Value) -> Option<String> {
        let value = input.get(T::IDEMPOTENCY_KEY?)?;
        Some(match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

/// Deserializes arguments, naming the field that was wrong.
fn decode_input<I: serde::de::DeserializeOwned>(input: Value) -> Result<I, ToolError> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ToolError::invalid_input(inner.to_string())
        } else {
            ToolError::invalid_input(format!("at `{path}`: {inner}"))
        }
    })
}
