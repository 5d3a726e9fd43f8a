//! What a program may use, and the defaults. Each limit, when hit, ends the
//! program with an error that names it (`code_mode.NAME`, the spec file's
//! setting) and says how to raise it.

use std::time::Duration;

use toolgate_core::spec::CodeModeSection;

/// The limits of one program run. A spec file's `code_mode:` section sets them
/// ([`CodeLimits::from_spec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLimits {
    /// The whole run, tool calls included (default 60 s).
    pub wall_clock: Duration,
    /// Time spent interpreting, not counting time inside tool calls (default
    /// 10 s). The worker's CPU time is capped 2 s above it as a backstop.
    pub interpreter_time: Duration,
    /// Tool calls a program may make (default 100).
    pub max_calls: usize,
    /// Bytes a program may print; the result is capped to as many characters
    /// (default 64 KiB).
    pub max_output_bytes: usize,
    /// The worker's address space (default 1 GiB): a program that needs more ends.
    pub max_memory_bytes: u64,
    /// How deep Python calls may nest (default 200).
    pub max_recursion_depth: usize,
    /// Times a program may pause for approval (default 10).
    pub max_suspensions: usize,
    /// How long a paused program waits for its approval (default 24 h); resumed
    /// after that, the waiting call raises `PermissionError`.
    pub approval_wait: Duration,
    /// Programs running at once, across principals (default: twice the
    /// machine's CPUs): each worker may take `max_memory_bytes`.
    pub max_workers: usize,
    /// Programs one principal may run at once (default 2).
    pub max_workers_per_principal: usize,
}

/// The default cap on workers at once: two a CPU, since a program mostly
/// waits on its tool calls, and at least two.
fn default_max_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().saturating_mul(2))
        .unwrap_or(2)
        .max(2)
}

impl Default for CodeLimits {
    fn default() -> Self {
        CodeLimits {
            wall_clock: Duration::from_secs(60),
            interpreter_time: Duration::from_secs(10),
            max_calls: 100,
            max_output_bytes: 64 << 10,
            max_memory_bytes: 1 << 30,
            max_recursion_depth: 200,
            max_suspensions: 10,
            approval_wait: Duration::from_secs(24 * 60 * 60),
            max_workers: default_max_workers(),
            max_workers_per_principal: 2,
        }
    }
}

impl CodeLimits {
    /// The defaults, with what a spec file's `code_mode:` section sets (a value
    /// `toolgate check` refuses keeps its default here).
    pub fn from_spec(section: &CodeModeSection) -> Self {
        let defaults = CodeLimits::default();
        let duration = |text: &Option<String>, default: Duration| {
            text.as_deref()
                .and_then(|t| humantime::parse_duration(t).ok())
                .filter(|d| !d.is_zero())
                .unwrap_or(default)
        };
        let count = |value: Option<u64>, default: usize| {
            value
                .filter(|v| *v > 0)
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(default)
        };
        CodeLimits {
            wall_clock: duration(&section.wall_clock, defaults.wall_clock),
            interpreter_time: duration(&section.interpreter_time, defaults.interpreter_time),
            max_calls: count(section.max_calls, defaults.max_calls),
            max_output_bytes: count(section.max_output_bytes, defaults.max_output_bytes),
            max_memory_bytes: section
                .max_memory_bytes
                .filter(|b| *b >= toolgate_core::spec::MIN_CODE_MEMORY_BYTES)
                .unwrap_or(defaults.max_memory_bytes),
            max_recursion_depth: count(section.max_recursion_depth, defaults.max_recursion_depth),
            max_suspensions: count(section.max_suspensions, defaults.max_suspensions),
            approval_wait: duration(&section.approval_wait, defaults.approval_wait),
            max_workers: count(section.max_workers, defaults.max_workers),
            max_workers_per_principal: count(
                section.max_workers_per_principal,
                defaults.max_workers_per_principal,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_section_overrides_only_what_it_sets() {
        let section = CodeModeSection {
            interpreter_time: Some("3s".into()),
            max_calls: Some(7),
            max_memory_bytes: Some(1024),
            ..CodeModeSection::default()
        };
        let limits = CodeLimits::from_spec(&section);
        assert_eq!(limits.interpreter_time, Duration::from_secs(3));
        assert_eq!(limits.max_calls, 7);
        assert_eq!(
            limits.max_memory_bytes,
            CodeLimits::default().max_memory_bytes
        );
        assert_eq!(limits.wall_clock, CodeLimits::default().wall_clock);
    }
}
