//! The handles of the per-call metrics, kept by label set once the Prometheus
//! recorder is installed, so that counting a call is a lookup of its labels.
//!
//! Without them each call registers its metrics again: it builds the metric's
//! key (an allocation a label), and the registry hashes it and compares it with
//! the key it holds, sorting both label lists to do so. The label sets are the
//! bounded ones the recorder keeps anyway (tools × outcomes × principals).

use std::sync::{OnceLock, PoisonError, RwLock};

use hashbrown::{Equivalent, HashMap};
use metrics::{Counter, Histogram};

use super::names::{calls_counter, duration_histogram};

/// The handles, from when [`keep`] was called (by
/// [`MetricsEndpoint::install`](super::MetricsEndpoint::install)).
static HANDLES: OnceLock<CallHandles> = OnceLock::new();

/// Keep the handles from now on: the process's recorder is installed.
pub(crate) fn keep() {
    HANDLES.get_or_init(CallHandles::default);
}

/// The handles, once they are kept; before that a recording point registers
/// its metric each time, through whatever recorder there is.
pub(crate) fn kept() -> Option<&'static CallHandles> {
    HANDLES.get()
}

/// The handles by label set.
#[derive(Default)]
pub(crate) struct CallHandles {
    by_labels: RwLock<HashMap<Labels, Handles>>,
}

/// A call's labels, as kept.
#[derive(Hash, PartialEq, Eq)]
struct Labels {
    tool: Box<str>,
    outcome: &'static str,
    principal: Box<str>,
}

/// A call's labels, as looked up: hashed as [`Labels`] is (field by field, in
/// the same order), so that a lookup allocates nothing.
#[derive(Hash)]
struct Lookup<'a>(&'a str, &'a str, &'a str);

impl Equivalent<Labels> for Lookup<'_> {
    fn equivalent(&self, key: &Labels) -> bool {
        self.0 == &*key.tool && self.1 == key.outcome && self.2 == &*key.principal
    }
}

/// The metrics of one label set.
struct Handles {
    calls: Counter,
    /// Registered when a call with these labels first records its duration, so
    /// that calls that never run (refused ones) make no empty histogram.
    duration: OnceLock<Histogram>,
}

impl CallHandles {
    /// Counts a call that came to `outcome`, and records how long it took when
    /// it ran (`ran`, in seconds).
    pub(crate) fn count(
        &self,
        tool: &str,
        outcome: &'static str,
        principal: &str,
        ran: Option<f64>,
    ) {
        let record = |handles: &Handles| {
            handles.calls.increment(1);
            if let Some(seconds) = ran {
                let duration = handles
                    .duration
                    .get_or_init(|| duration_histogram(tool, outcome));
                duration.record(seconds);
            }
        };
        let lookup = Lookup(tool, outcome, principal);
        if let Some(handles) = self
            .by_labels
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&lookup)
        {
            return record(handles);
        }
        let mut kept = self
            .by_labels
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let labels = Labels {
            tool: tool.into(),
            outcome,
            principal: principal.into(),
        };
        record(kept.entry(labels).or_insert_with(|| Handles {
            calls: calls_counter(tool, outcome, principal),
            duration: OnceLock::new(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn a_lookup_hashes_as_the_labels_it_finds() {
        let state = hashbrown::DefaultHashBuilder::default();
        let labels = Labels {
            tool: "fx.convert".into(),
            outcome: "ok",
            principal: "alice".into(),
        };
        let lookup = Lookup("fx.convert", "ok", "alice");
        assert_eq!(state.hash_one(&labels), state.hash_one(&lookup));
        assert!(lookup.equivalent(&labels));
        assert!(!Lookup("fx.convert", "ok", "bob").equivalent(&labels));
    }

    #[test]
    fn a_label_set_is_registered_once_and_counted_every_time() {
        let handles = CallHandles::default();
        for _ in 0..3 {
            handles.count("fx.convert", "ok", "alice", Some(0.001));
            handles.count("fx.convert", "denied", "alice", None);
        }
        let kept = handles.by_labels.read().unwrap();
        assert_eq!(kept.len(), 2);
        let ok = kept.get(&Lookup("fx.convert", "ok", "alice")).unwrap();
        assert!(ok.duration.get().is_some());
        let denied = kept.get(&Lookup("fx.convert", "denied", "alice")).unwrap();
        assert!(
            denied.duration.get().is_none(),
            "a call that never ran has no duration"
        );
    }
}
