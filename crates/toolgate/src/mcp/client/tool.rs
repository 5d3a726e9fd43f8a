//! An upstream tool in the catalog: its calls go to its server, and its output is
//! untrusted. What it offers (name, schemas, effect) is read from the server's
//! listing by `listed.rs`.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use toolgate_core::{DynTool, ToolCtx, ToolDescriptor, ToolError};

use super::listed::RemoteTool;
use super::server::Server;

/// An upstream tool in the catalog. Calls go to its server; its output is untrusted.
pub struct UpstreamTool {
    server: Arc<Server>,
    remote: String,
    descriptor: ToolDescriptor,
}

impl UpstreamTool {
    pub(super) fn new(server: Arc<Server>, tool: &RemoteTool) -> Self {
        UpstreamTool {
            server,
            remote: tool.name.clone(),
            descriptor: tool.descriptor.clone(),
        }
    }

    /// The tool's name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

impl DynTool for UpstreamTool {
    fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            self.server
                .check_tool(&self.remote, &self.descriptor.name)?;
            self.server.call(&self.remote, input, ctx).await
        })
    }

    fn available(&self) -> Result<(), ToolError> {
        self.server
            .check_tool(&self.remote, &self.descriptor.name)?;
        self.server.check_circuit()
    }

    fn passes_idempotency_key(&self) -> bool {
        false
    }

    fn trusted(&self) -> bool {
        false
    }
}
