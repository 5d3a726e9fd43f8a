//! Code mode: a model writes one short Python program that calls tools as
//! functions, and every call in it takes the gate — validation, flow, policy,
//! approvals, deadlines, audit — exactly as if the model had made it.
//!
//! Programs run in [Monty](https://github.com/pydantic/monty), a sandboxed Python
//! interpreter, inside a **worker process** started for each run under OS limits
//! (`RLIMIT_AS` for memory, `RLIMIT_CPU` as a backstop for time, no core dumps)
//! with an empty environment. Monty enforces its memory limit only with its own
//! allocator installed, and an allocation failure aborts the process that made it;
//! in the worker, that ends the worker, and the gateway reports the limit and
//! goes on serving. The worker and the gate talk over the worker's stdin and stdout
//! in length-prefixed JSON frames: the worker sends each call, the gate runs it
//! through [`crate::Gate::call`] and answers with the value or the exception to
//! raise at the call site.
//!
//! The worker is the current executable run with [`WORKER_ARG`] (the `toolgate`
//! binary handles it), or any binary whose `main` calls [`worker_main`]
//! ([`WorkerCommand`]).
//!
//! A program has no files, network, environment or clock: every OS call it tries
//! raises `PermissionError`. Limits: [`CodeLimits`].

mod ask;
mod audit;
mod call_args;
mod calls;
mod convert;
mod drive;
mod hints;
mod host;
mod limits;
mod names;
mod process;
mod protocol;
mod replies;
mod resume;
mod rewrite;
mod run_code;
mod run_result;
mod slots;
mod snapshot;
mod spin;
mod stubs;
mod wall_clock;
mod worker;

pub use ask::{AskApproval, NeverAsk};
pub use host::CodeMode;
pub use limits::CodeLimits;
pub use names::{PythonNames, identifier};
pub use process::{WORKER_ARG, WorkerCommand};
pub use run_code::{
    RESUME_CODE, RUN_CODE, resume_code_descriptor, run_code_descriptor, run_code_tool,
};
pub use run_result::{CodeError, CodeRun, Waiting};
pub use stubs::{python_literal, stubs};
pub use worker::worker_main;
