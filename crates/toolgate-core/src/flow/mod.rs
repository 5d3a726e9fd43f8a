//! Governed conversations: a spec file's `flow:` says which tools may run when, and
//! its `tests:` script conversations that show it.
//!
//! A [`Flow`] has steps (each active after the steps it comes after are done and
//! while its gate holds; done once its `done` guard holds), constraints over the
//! whole conversation (`once`, `before`, `never_until`, `require`) and tools that
//! need the user's confirmation. The [`Monitor`] turns a flow, a conversation's
//! state and its call history into a [`FlowView`]: the active and done steps and,
//! for every tool, allowed or blocked with a reason a model can act on ("refund_order
//! is blocked until lookup_order has succeeded"). Everything here is pure; the gate
//! in the `toolgate` crate consults the monitor before it authorizes a call.

mod check;
mod guard;
mod history;
mod mermaid;
mod model;
mod monitor;
mod satisfy;
mod script;
mod status;
mod visibility;

pub use check::check_flow;
pub(crate) use guard::{Cond, Facts, HIDDEN_STEP, compared_values, eval};
pub use guard::{disguised_in_path, normalize_path, values_equal};
pub use history::CallRecord;
pub use mermaid::mermaid;
pub use model::{
    Above, Ambient, Before, Confirm, ConfirmWhen, Constraint, Flow, Guard, NeverUntil, Require,
    StartsWith, Step,
};
pub use monitor::Monitor;
pub use script::{Approval, CallEvent, Event, Expect, ExpectedOutcome, TestScript};
pub use status::{FlowView, Requirement, StepStatus, StepView, ToolStatus};
pub use visibility::{FlowVisibility, NOT_AVAILABLE_YET, is_visible, visible_tools};

/// What a guard says, in words: `lookup_order has succeeded`, `` `verified` is true ``.
pub fn describe_guard(guard: &Guard) -> String {
    guard::describe(guard)
}
