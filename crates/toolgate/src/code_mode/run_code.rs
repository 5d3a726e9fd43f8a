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

/// The name of the tool that resumes a program paused for approval.
pub const RESUME_CODE: &str = "resume_code";

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

/// The descriptor of `resume_code`: it goes on with a program that `run_code`
/// left `pending_approval`, from the call that waited (an entry point hands its
/// `run_id` to [`super::CodeMode::resume`]). Its effect is `run_code`'s: the
/// rest of the program runs.
pub fn resume_code_descriptor(effect: Effect) -> ToolDescriptor {
    let mut descriptor = ToolDescriptor::new(
        RESUME_CODE,
        "Resume a program that run_code paused because one of its calls needs a person's \
         approval. Call it once the user says the approval is answered, with the run_id \
         run_code returned. The program goes on from the call that waited: approved, the call \
         runs; denied, it raises PermissionError there. The result is like run_code's; if the \
         approval is still unanswered, it says so and the program stays paused."
            .to_owned(),
        json!({
            "type": "object",
            "properties": {
                "run_id": {
                    "type": "string",
                    "description": "The run_id of the paused program, as run_code returned it."
                }
            },
            "required": ["run_id"],
            "additionalProperties": false
        }),
        effect,
        ToolSource::Builtin,
    );
    descriptor.title = Some("Resume a paused program".into());
    descriptor
}

/// `run_code` as `principal` is offered it through `gate` in `session`: the stubs
/// of the tools it may call, and the strongest effect among them.
pub fn run_code_tool(
    gate: &crate::Gate,
    session: &str,
    principal: &toolgate_core::Principal,
    spec: Option<&toolgate_core::spec::SpecFile>,
) -> Result<ToolDescriptor, crate::store::StoreError> {
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
