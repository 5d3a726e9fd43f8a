//! What `tools/list` shows a principal: every tool the policy does not deny it and
//! the owner does not withhold — in a conversation with a flow, as the flow offers
//! them now — rendered by the MCP wire format (annotations read off each tool's
//! effect).

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::Value;
use toolgate_core::wire::{self, CallReader, RenderOptions, Target};
use toolgate_core::{Decision, Principal, SanitizeOptions, ToolDescriptor, sanitize_description};

use crate::Gate;

/// Tools rendered for MCP, and the map from their wire names back to the catalog's.
pub(crate) struct ToolList {
    pub(crate) tools: Arc<Vec<Tool>>,
    pub(crate) reader: CallReader,
    /// Tools the principal may use that MCP cannot carry, each with the reason.
    pub(crate) left_out: Vec<(String, String)>,
    /// Whether a tool's schema mirrors an argument into an `Mcp-Param-*` header
    /// (`x-mcp-header`, SEP-2243), so calls' headers need checking.
    header_params: bool,
}

impl ToolList {
    /// The whole catalog as `principal` may see it.
    pub(crate) fn build(gate: &Gate, principal: &Principal, withheld: &[String]) -> Self {
        let descriptors = gate
            .catalog()
            .iter()
            .map(|tool| tool.descriptor().clone())
            .collect();
        Self::of(gate, principal, withheld, descriptors)
    }

    /// `descriptors` (the catalog's, or a flow's view of them) as `principal` may
    /// see them.
    pub(crate) fn of(
        gate: &Gate,
        principal: &Principal,
        withheld: &[String],
        descriptors: Vec<ToolDescriptor>,
    ) -> Self {
        let visible: Vec<ToolDescriptor> = descriptors
            .into_iter()
            .filter(|d| shown(gate, principal, withheld, d))
            .map(|mut descriptor| {
                let trusted = gate
                    .catalog()
                    .get(&descriptor.name)
                    .is_ok_and(|tool| tool.trusted());
                if !trusted {
                    descriptor.description = sanitize_description(
                        &descriptor.description,
                        &SanitizeOptions::for_description(),
                    )
                    .text;
                }
                descriptor
            })
            .collect();
        let rendered = wire::render(Target::Mcp, &visible, &[], RenderOptions::default());
        let mut left_out: Vec<(String, String)> = rendered
            .problems
            .iter()
            .filter_map(|note| Some((note.tool.clone()?, note.message.clone())))
            .collect();
        let mut tools = Vec::with_capacity(rendered.tools.len());
        for (descriptor, mut entry) in visible.iter().zip(rendered.tools) {
            if left_out.iter().any(|(name, _)| *name == descriptor.name) {
                continue;
            }
            carry_secure_schema(&mut entry);
            match serde_json::from_value::<Tool>(entry) {
                Ok(tool) => tools.push(tool),
                Err(e) => left_out.push((
                    descriptor.name.clone(),
                    format!("not a valid MCP tool: {e}"),
                )),
            }
        }
        let header_params = tools.iter().any(|tool| {
            toolgate_core::mentions_mcp_keywords(&Value::Object(tool.input_schema.as_ref().clone()))
        });
        ToolList {
            tools: Arc::new(tools),
            reader: rendered.reader,
            left_out,
            header_params,
        }
    }

    /// The served tool called `wire`, where its schema names `Mcp-Param-*`
    /// headers; `None` where no tool's does (nothing to check).
    pub(crate) fn with_header_params(&self, wire: &str) -> Option<Tool> {
        if !self.header_params {
            return None;
        }
        self.tools.iter().find(|tool| tool.name == wire).cloned()
    }

    /// The catalog name of the tool called as `wire`.
    pub(crate) fn canonical<'a>(&'a self, wire: &'a str) -> &'a str {
        self.reader.names.canonical(wire).unwrap_or(wire)
    }

    /// The wire names, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }
}

/// Whether `tools/list` shows `descriptor` to `principal`: not withheld, not denied.
fn shown(
    gate: &Gate,
    principal: &Principal,
    withheld: &[String],
    descriptor: &ToolDescriptor,
) -> bool {
    !withheld.contains(&descriptor.name)
        && gate.policy().decide(descriptor, principal).decision != Decision::Deny
}

/// The catalog names of the `descriptors` that [`ToolList::of`] would list, without
/// rendering them: enough to tell whether a session's list changed.
pub(crate) fn shown_names<'a>(
    gate: &Gate,
    principal: &Principal,
    withheld: &[String],
    descriptors: impl IntoIterator<Item = &'a ToolDescriptor>,
) -> Vec<String> {
    descriptors
        .into_iter()
        .filter(|d| shown(gate, principal, withheld, d))
        .map(|d| d.name.clone())
        .collect()
}

/// The arguments of a `tools/call` as the gate takes them: absent means `{}`.
pub(crate) fn arguments(arguments: Option<serde_json::Map<String, Value>>) -> Value {
    Value::Object(arguments.unwrap_or_default())
}

/// The SDK's `Tool` has no field for SEP-3221's top-level `secureInputSchema`
/// (a draft), so a served tool carries it in its `_meta`, under
/// `toolgate/secureInputSchema`.
fn carry_secure_schema(entry: &mut Value) {
    let Some(object) = entry.as_object_mut() else {
        return;
    };
    if let Some(secure) = object.remove("secureInputSchema") {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("toolgate/secureInputSchema".into(), secure);
        }
    }
}
