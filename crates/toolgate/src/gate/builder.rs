//! How a gate is put together: its options, and the builder that takes a
//! catalog, a spec file's effects and limits, a store, a clock and (for a gate
//! that replaces another) what the previous gate shares with it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;
use toolgate_core::spec::SpecFile;
use toolgate_core::{Catalog, Policy};

use super::arguments::ArgumentChecker;
use super::task::{self, DEFAULT_TASK_TTL};
use super::{Clock, Entry, Gate, RateLimiter};
use crate::store::{GateStore, MemoryGateStore};

/// Limits and switches of a gate.
#[derive(Debug, Clone, Copy)]
pub struct GateOptions {
    /// The deadline of a tool that declares no `timeout`.
    pub default_timeout: Duration,
    /// Attempts at most for tools whose effect permits retrying.
    pub max_attempts: u32,
    /// The first retry's backoff; each retry doubles it.
    pub backoff: Duration,
    /// Calls of one tool that may run at once (`call_all`).
    pub per_tool_concurrency: usize,
    /// Fail a call whose value does not match the tool's `returns` (else report it).
    pub fail_on_output_mismatch: bool,
    /// The largest arguments a call may have, as compact JSON; larger ones are
    /// refused before anything reads them. A spec file's `limits.max_argument_bytes`
    /// replaces it ([`GateBuilder::spec`]).
    pub max_argument_bytes: usize,
    /// How long a finished background task stays readable (see [`Gate::task`]).
    pub task_ttl: Duration,
    /// Background tasks one principal may have running in this gate at once
    /// (default 32); one more is refused before anything runs.
    pub max_tasks_per_principal: usize,
    /// The largest outcome a finished task keeps, as JSON (default 256 KiB): a
    /// larger result is kept as its size, hash and start, with a note.
    pub max_task_result_bytes: usize,
    /// How long a call made under an idempotency key keeps its outcome for a
    /// repeat with the same key (default 24 hours).
    pub idempotency_retention: Duration,
}

/// The default of [`GateOptions::max_argument_bytes`]: 1 MiB.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 1 << 20;

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            default_timeout: Duration::from_secs(30),
            max_attempts: 3,
            backoff: Duration::from_millis(100),
            per_tool_concurrency: 8,
            fail_on_output_mismatch: false,
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
            task_ttl: DEFAULT_TASK_TTL,
            max_tasks_per_principal: 32,
            max_task_result_bytes: 256 << 10,
            idempotency_retention: Duration::from_secs(24 * 60 * 60),
        }
    }
}

/// Builds a [`Gate`]: the catalog, and optionally a spec file's state effects,
/// defaults, timeouts and policy, a store, options and a clock.
pub struct GateBuilder {
    catalog: Catalog,
    spec: Option<SpecFile>,
    policy: Option<Policy>,
    store: Option<Arc<dyn GateStore>>,
    options: GateOptions,
    clock: Clock,
    flow_visibility: toolgate_core::flow::FlowVisibility,
    turns: Option<Arc<crate::flow::Turns>>,
    tasks: Option<Arc<task::Tasks>>,
    limiter: Option<Arc<RateLimiter>>,
    skills: Option<Arc<crate::skills::Skills>>,
}

impl GateBuilder {
    /// Takes state effects, state defaults, timeouts, the policy and the
    /// `limits` from a spec file (its limits replace those of [`GateOptions`]).
    pub fn spec(mut self, spec: &SpecFile) -> Self {
        self.spec = Some(spec.clone());
        self
    }

    /// The policy (overrides the spec file's).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Where state, approvals and the audit log live (default: in memory).
    pub fn store(mut self, store: Arc<dyn GateStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Limits and switches (default: [`GateOptions::default`]); a spec file's
    /// `limits.max_argument_bytes` replaces its own.
    pub fn options(mut self, options: GateOptions) -> Self {
        self.options = options;
        self
    }

    /// The clock for timestamps and grant expiry (tests fix it).
    pub fn clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How tools the flow blocks are shown to a model: hidden (default) or marked.
    pub fn flow_visibility(mut self, visibility: toolgate_core::flow::FlowVisibility) -> Self {
        self.flow_visibility = visibility;
        self
    }

    /// The skills it offers: `read_skill` joins the catalog (unless one is
    /// there already), and the MCP server serves them through the skills
    /// extension.
    pub fn skills(mut self, skills: Arc<crate::skills::Skills>) -> Self {
        if !self.catalog.contains(toolgate_core::skill::READ_SKILL) {
            let tool = crate::skills::ReadSkill::new(skills.clone());
            // The name is free: checked just above.
            let _ = self.catalog.register(Arc::new(tool));
        }
        self.skills = Some(skills);
        self
    }

    /// Builds the gate that replaces `previous` (its catalog changed while it
    /// served): a conversation's calls take turns across both, so a flow's `once`
    /// still holds while calls on the old gate finish.
    pub fn succeeding(mut self, previous: &Gate) -> Self {
        self.turns = Some(previous.flow.turns().clone());
        self.tasks = Some(previous.tasks.clone());
        self.limiter = Some(previous.limiter.clone());
        self
    }

    /// The gate: each tool's schemas compiled and its spec file entry (state
    /// effects, timeout) read once, here, not on every call.
    pub fn build(self) -> Gate {
        let spec = self.spec.unwrap_or_default();
        let flow = crate::flow::FlowGate::new(spec.flow.clone(), self.flow_visibility, self.turns);
        let declared: HashMap<&str, &toolgate_core::spec::ToolSpec> =
            spec.tools.iter().map(|t| (t.name.as_str(), t)).collect();
        let (policy, observer) = self.policy.unwrap_or(spec.policy).split_shadow();
        let reads_taint =
            policy.reads_any_taint() || observer.as_ref().is_some_and(|o| o.reads_any_taint());
        let entries = self
            .catalog
            .iter()
            .map(|tool| {
                let declared = declared.get(tool.name());
                let entry = Entry {
                    definition: serde_json::to_value(tool.descriptor())
                        .map(|d| toolgate_core::content_hash(&d))
                        .unwrap_or_default(),
                    arguments: ArgumentChecker::new(tool.input_schema()),
                    output: tool
                        .output_schema()
                        .and_then(|schema| jsonschema::draft202012::new(schema).ok()),
                    set_state: declared
                        .map(|t| {
                            t.set_state
                                .iter()
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        })
                        .unwrap_or_default(),
                    save_response_as: declared.and_then(|t| t.save_response_as.clone()),
                    timeout: declared
                        .and_then(|t| t.timeout.as_deref())
                        .and_then(|t| humantime::parse_duration(t).ok()),
                    slots: Arc::new(Semaphore::new(self.options.per_tool_concurrency.max(1))),
                    span_arguments: spec
                        .telemetry
                        .span_arguments_of(tool.name())
                        .map(<[String]>::to_vec),
                    fingerprints: reads_taint && tool.descriptor().output.untrusted,
                    schema_redacts: toolgate_core::schema_marks_secrets(tool.input_schema()),
                };
                (tool.name().to_owned(), Arc::new(entry))
            })
            .collect();
        let mut options = self.options;
        if let Some(bytes) = spec.limits.max_argument_bytes {
            options.max_argument_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        let defaults = spec
            .state
            .iter()
            .filter_map(|(key, declared)| Some((key.clone(), declared.default.clone()?)))
            .collect();
        let limiter = match self.limiter {
            Some(previous) if previous.is_for(&spec.limits.rate) => previous,
            _ => Arc::new(RateLimiter::new(&spec.limits.rate)),
        };
        let labelled = self
            .catalog
            .iter()
            .any(|tool| !tool.descriptor().output.is_empty());
        Gate {
            labelled,
            seen_cache: Default::default(),
            catalog: self.catalog,
            entries,
            defaults,
            policy,
            observer,
            store: self
                .store
                .unwrap_or_else(|| Arc::new(MemoryGateStore::default())),
            options,
            clock: self.clock,
            run_prefix: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
            runs: AtomicU64::new(1),
            flow,
            tasks: self.tasks.unwrap_or_default(),
            limiter,
            budgets: spec.budgets.clone(),
            skills: self.skills,
        }
    }
}

impl Gate {
    /// A builder of a gate over `catalog`: no spec file, the default policy, a
    /// store in memory, default options and the system clock until told
    /// otherwise.
    pub fn builder(catalog: Catalog) -> GateBuilder {
        GateBuilder {
            catalog,
            spec: None,
            policy: None,
            store: None,
            options: GateOptions::default(),
            clock: Arc::new(SystemTime::now),
            flow_visibility: Default::default(),
            turns: None,
            tasks: None,
            limiter: None,
            skills: None,
        }
    }
}
