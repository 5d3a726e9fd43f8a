//! `run_code`, the tool that offers code mode to any model API: its input is a
//! program, its description carries the stubs of the tools the program may call.
//!
//! It is not a tool of the catalog: the gate does not run it. An entry point that
//! offers it (`toolgate render --code-mode`, `toolgate code run`) hands its `code`
//! to [`super::CodeMode::run`], where each call the program makes takes the gate
//! on its own — so a flow need not list `run_code`, and its deadline is the
//! program's wall clock, not a tool timeout.

use serde_json::json;
use toolgate_core::{Effect, ToolDescriptor, ToolSource};

/// The name of the tool.
pub const RUN_CODE: &str = "run_code";

/// The descriptor of `run_code` for `stubs` (from [`super::stubs`]); `effect` is
/// the strongest effect among the tools a program may call, so a client's
/// annotations never understate what a program can do.
pub fn run_code_descriptor(stubs: &str, effect: Effect) -> ToolDescriptor {
    let description = format!(
        "Run a short Python program that calls the tools below as functions, loops \
         over their results and returns only what matters. Prefer it to a chain of \
         separate tool calls. The result is the program's last expression (or \
         `return` value) and what it printed.\n\n{stubs}"
    );
    let mut descriptor = ToolDescriptor::new(
        RUN_CODE,
        description,
        json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The Python program. Call tools with keyword arguments."
                }
            },
            "required": ["code"],
            "additionalProperties": false
        }),
        effect,
        ToolSource::Builtin,
    );
    descriptor.title = Some("Run a program".into());
    descriptor
}

/// `run_code` as `principal` is offered it through `gate` in `session`: the stubs
/// of the tools it may call, and the strongest effect among them.
pub fn run_code_tool(
    gate: &crate::Gate,
    session: &str,
    principal: &toolgate_core::Principal,
    spec: Option<&toolgate_core::spec::SpecFile>,
) -> Result<ToolDescriptor, crate::StoreError> {
    let stubs = super::stubs(gate, session, principal, spec)?;
    let effect = gate
        .catalog()
        .iter()
        .filter(|tool| gate.knows(tool.name(), principal))
        .map(|tool| tool.effect())
        .max()
        .unwrap_or(Effect::Read);
    Ok(run_code_descriptor(&stubs, effect))
}
