//! Governed conversations at run time: the gate's admission stage (a call the
//! flow blocks is refused with what must happen first; a `confirm:` tool asks a
//! person), what a model is shown of a governed conversation, and the offline
//! runner of a spec file's `tests:` with its text and JUnit reports.
//!
//! The flow itself and its monitor are pure and live in
//! [`toolgate_core::flow`]; the call history the monitor reads is kept by the
//! gate's store ([`CallHistory`](crate::store::CallHistory)), beside the state.

mod admission;
mod junit;
mod report;
mod runner;
mod view;

pub use toolgate_core::flow::*;

pub(crate) use admission::{Admitted, FlowGate, Turns};
pub use junit::{BrokenFile, junit_xml};
pub use report::{render_failure, render_tests, summary_line};
pub use runner::{FileTests, ScriptedCall, TEST_CLOCK, TestFailure, TestResult, TestRunner};
