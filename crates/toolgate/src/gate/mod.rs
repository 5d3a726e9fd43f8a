//! The gate: the one path every call takes, whoever makes it.
//!
//! Every call enters by [`Gate::call_with`] (or its plain forms [`Gate::call`],
//! [`Gate::call_all`] and [`Gate::start`]) and goes through these stages, in
//! this order:
//!
//! bound (the arguments' size) ▶ resolve (known to the caller, not denied it,
//! ready) ▶ validate (and fill injected parameters) ▶ recall (an idempotency key's earlier outcome, a call in
//! doubt) ▶ admit (flow) ▶ authorize (policy, approvals) ▶ rate limit ▶ task
//! place (a background call) ▶ slot (the tool's concurrency, or cancellation
//! while waiting) ▶ claim (the idempotency key) ▶ record intent ▶ launch (a background call, on a
//! task of its own) or execute (deadline, retries, cancellation) ▶ apply state ▶
//! check output ▶ sanitize ▶ record completion.
//!
//! Each stage that refuses a call produces an [`Outcome`] the model can act on;
//! nothing panics and no call is dropped. A read's intent is committed together
//! with its completion (one transaction instead of two; a read that dies
//! half-way has nothing to reconcile). A call the conversation's flow governs
//! has its intent committed with its admission, in one step of the store, so
//! that admission holds across processes.
//!
//! This file holds the gate and what it answers about itself; the call path is
//! in `call`, the run after the intent in `execution`, background tasks in
//! `task`, what must not run twice in `once`, the authorize stage in `authorize`
//! (its policy facts, labels and taint included, in `policy_call`), injected
//! parameters in `inject`, the context a tool runs with in `tool_context`.

mod arguments;
mod authenticated;
mod authorize;
mod budget;
mod builder;
mod call;
mod call_span;
mod execution;
mod inject;
mod limiter;
mod once;
mod policy_call;
mod read_skill;
mod run;
mod seen_cache;
mod store_failure;
mod task;
mod tool_context;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use toolgate_core::{Catalog, Policy, Principal, ToolError, clip_text};

pub use arguments::{ArgumentProblem, invalid_arguments_message};
pub use authenticated::Authenticated;
pub use builder::{DEFAULT_MAX_ARGUMENT_BYTES, GateBuilder, GateOptions};
pub use call::CallOptions;
pub(crate) use call_span::trace_end;
pub use limiter::{Limited, RateLimiter, RatePermit, RateRefused};
pub use task::{DEFAULT_TASK_TTL, TaskError, TaskFilter, TaskFuture, TaskScope};
pub use toolgate_core::{Outcome, ToolCall};

use crate::store::{GateStore, StoreError};
use arguments::ArgumentChecker;

/// How much of an error message the audit log keeps (the caller gets it whole).
const AUDIT_MESSAGE_CHARS: usize = 4096;

/// What the gate knows about one tool beyond its descriptor.
struct Entry {
    /// The hash of the tool's definition as this gate holds it (an upstream
    /// tool's as pinned): part of every call's hash.
    definition: String,
    arguments: ArgumentChecker,
    output: Option<jsonschema::Validator>,
    set_state: Vec<(String, Value)>,
    save_response_as: Option<String>,
    timeout: Option<Duration>,
    slots: Arc<Semaphore>,
    /// The arguments its span may record (`telemetry.span_arguments`).
    span_arguments: Option<Vec<String>>,
    /// Its results are untrusted and a policy rule reads `tainted:`: each
    /// leaves its fingerprints in the conversation.
    fingerprints: bool,
    /// Its input schema marks some value secret (`writeOnly`, `x-secret`,
    /// `format: password`), so the audit's redaction walks it; without, keys
    /// alone decide, and every call is spared the walk.
    schema_redacts: bool,
}

type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Runs calls against a catalog, each through every stage of the gate.
pub struct Gate {
    catalog: Catalog,
    entries: HashMap<String, Arc<Entry>>,
    defaults: Map<String, Value>,
    policy: Policy,
    /// The spec's policy when it is in shadow mode: it observes every call
    /// while `policy` (toolgate's defaults) decides.
    observer: Option<Policy>,
    store: Arc<dyn GateStore>,
    options: GateOptions,
    clock: Clock,
    /// Run ids are this prefix (random per gate) and a counter: unique, and cheap.
    run_prefix: String,
    runs: AtomicU64,
    /// Some tool's results carry labels (untrusted, private), so a
    /// conversation may have seen them; without any, nothing is read for them.
    labelled: bool,
    /// What each conversation has seen, as far as its calls so far.
    seen_cache: seen_cache::SeenCache,
    /// The conversation flow the admission stage enforces.
    pub(crate) flow: crate::flow::FlowGate,
    /// The background tasks running here (shared with the gates that succeed it).
    tasks: Arc<task::Tasks>,
    /// The spec's rate limits and what they counted (kept by a successor gate
    /// whose limits are the same).
    limiter: Arc<RateLimiter>,
    /// The spec's budgets (their counters are the store's).
    budgets: Vec<toolgate_core::spec::Budget>,
    /// The skills it offers, read through `read_skill`.
    skills: Option<Arc<crate::skills::Skills>>,
}

impl Gate {
    /// The tools this gate runs calls to (every principal's; [`Gate::knows`]
    /// says which one principal may use).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The policy that authorizes each call (the spec file's, or the one the
    /// builder was given).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The largest arguments a call may have, in bytes of compact JSON.
    pub fn max_argument_bytes(&self) -> usize {
        self.options.max_argument_bytes
    }

    /// Where this gate keeps state, approvals, tasks and the audit log.
    pub fn store(&self) -> &Arc<dyn GateStore> {
        &self.store
    }

    /// A conversation's state: what was written, over the declared defaults.
    pub fn state(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        Ok(self.over_defaults(self.store.load(session)?))
    }

    /// `written` over the declared defaults.
    pub(crate) fn over_defaults(&self, written: Map<String, Value>) -> Map<String, Value> {
        let mut state = self.defaults.clone();
        state.extend(written);
        state
    }

    /// Whether `principal` may know of the tool `name`: it is in the catalog and
    /// in the principal's view ([`Principal::sees`]). A call to any other name is
    /// refused as unknown.
    pub fn knows(&self, name: &str, principal: &Principal) -> bool {
        self.catalog
            .find(name)
            .is_some_and(|tool| principal.sees(tool.descriptor()))
    }

    /// Whether words for `principal` may name `name` ([`Principal::may_name`]):
    /// what a flow's reasons and digests hold to.
    pub(crate) fn may_name_to<'p>(
        &'p self,
        principal: &'p Principal,
    ) -> impl Fn(&str) -> bool + 'p {
        |name| principal.may_name(name, self.catalog.find(name).map(|t| t.descriptor()))
    }

    pub(crate) fn now(&self) -> String {
        humantime::format_rfc3339_millis(self.clock_time()).to_string()
    }

    /// The gate's clock (fixed in a test or a flow's scripted conversation).
    pub(crate) fn clock_time(&self) -> std::time::SystemTime {
        (self.clock)()
    }
}

/// An outcome's message as the audit log keeps it: cut when long.
fn audit_message(outcome: &Outcome) -> String {
    clip_text(&outcome.message_for_model(), AUDIT_MESSAGE_CHARS).into_owned()
}

fn tool_error(tool: &str, error: ToolError) -> Outcome {
    match error {
        ToolError::Retryable { message, .. } => {
            Outcome::error(format!("`{tool}` failed: {message}"), true)
        }
        ToolError::Permanent { message } => {
            Outcome::error(format!("`{tool}` failed: {message}"), false)
        }
        ToolError::InvalidInput { message } => {
            Outcome::error(format!("`{tool}` refused its input: {message}"), false)
        }
        // Where repeating is safe (a read, a keyed idempotent call): retryable.
        ToolError::Unknown { message } => {
            Outcome::error(format!("`{tool}` failed: {message}"), true)
        }
    }
}
