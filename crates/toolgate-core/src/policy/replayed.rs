//! A conversation as an audit log tells it, for a replay: its calls so far,
//! and its state as the new spec's tools would have written it — the declared
//! defaults, then each successful call's `set_state`, filled from the
//! arguments its intent recorded.
//!
//! What the log cannot tell is marked unknown rather than guessed: a key a
//! result wrote (`save_response_as`: results are not logged), or one filled
//! from arguments the log kept only in part. State a host or an operator wrote
//! (`toolgate state set`, a test's `set:`) is not in the log at all, so a
//! replay reads the defaults there.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::simulate::whole;
use crate::flow::CallRecord;
use crate::spec::SpecFile;
use crate::spec::template::{Scope, placeholders_in, render};
use crate::{AuditEntry, RecordKind};

/// One conversation, replayed up to the record being judged.
#[derive(Debug, Default)]
pub(super) struct Replayed<'r> {
    /// Each finished call: its tool, whether it succeeded, and when.
    pub(super) calls: Vec<(&'r str, bool, &'r str)>,
    /// The state the new spec's tools would have written.
    pub(super) state: Map<String, Value>,
    /// Keys whose value the log cannot tell.
    pub(super) unknown: BTreeSet<String>,
    /// The arguments of each intent not yet completed, by run.
    pending: HashMap<&'r str, &'r Value>,
}

impl<'r> Replayed<'r> {
    /// A conversation at its start: the spec's declared defaults.
    pub(super) fn new(spec: Option<&SpecFile>) -> Self {
        let state = spec
            .map(|spec| {
                spec.state
                    .iter()
                    .filter_map(|(key, declared)| Some((key.clone(), declared.default.clone()?)))
                    .collect()
            })
            .unwrap_or_default();
        Replayed {
            state,
            ..Replayed::default()
        }
    }

    /// Takes in one record of the conversation: an intent's arguments wait
    /// for its completion, which adds the call to the history and, when it
    /// succeeded, its writes to the state.
    pub(super) fn record(&mut self, entry: &'r AuditEntry, spec: Option<&SpecFile>) {
        match entry.kind {
            RecordKind::Intent => {
                self.pending.insert(&entry.run_id, &entry.arguments);
            }
            RecordKind::Completion => {
                let arguments = self.pending.remove(entry.run_id.as_str());
                if entry.outcome.as_deref() == Some("cancelled") {
                    return;
                }
                let ok = entry.outcome.as_deref() == Some("ok");
                self.calls.push((&entry.tool, ok, &entry.time));
                if let (true, Some(spec)) = (ok, spec) {
                    self.write(spec, &entry.tool, arguments);
                }
            }
            _ => {}
        }
    }

    /// The writes of a successful call of `tool` with `arguments`.
    fn write(&mut self, spec: &SpecFile, tool: &str, arguments: Option<&Value>) {
        let Some(declared) = spec.tools.iter().find(|t| t.name == tool) else {
            return;
        };
        let known = arguments.filter(|a| whole(a));
        for (key, template) in &declared.set_state {
            let reads_arguments = placeholders_in(template)
                .iter()
                .any(|p| p.scope == Scope::Args);
            match (known, reads_arguments) {
                (Some(arguments), _) => self.set(key, render(template, arguments, &self.state)),
                (None, false) => self.set(key, render(template, &Value::Null, &self.state)),
                (None, true) => {
                    self.unknown.insert(key.clone());
                }
            }
        }
        if let Some(key) = &declared.save_response_as {
            self.unknown.insert(key.clone());
        }
    }

    fn set(&mut self, key: &str, value: Value) {
        self.state.insert(key.to_owned(), value);
        self.unknown.remove(key);
    }

    /// The history as the flow and the rules read it.
    pub(super) fn history(&self) -> Vec<CallRecord> {
        self.calls
            .iter()
            .map(|(tool, ok, _)| CallRecord::new(*tool, *ok))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(
        kind: RecordKind,
        run: &str,
        tool: &str,
        fill: impl FnOnce(&mut AuditEntry),
    ) -> AuditEntry {
        let mut entry = AuditEntry::new(
            "2026-12-04T12:00:00.000Z",
            kind,
            run,
            "c",
            "s",
            "operator",
            tool,
        );
        fill(&mut entry);
        entry
    }

    #[test]
    fn state_is_rebuilt_from_the_intents_arguments_and_what_a_result_wrote_is_unknown() {
        let spec: SpecFile = serde_json::from_value(json!({
            "state": {"verified": {"type": "boolean", "default": false}, "order": {"type": "string"}},
            "tools": [
                {"name": "verify", "description": "d", "set_state": {"verified": true}},
                {"name": "lookup", "description": "d", "set_state": {"order": "{args.id}"}},
                {"name": "fetch", "description": "d", "save_response_as": "page"},
            ],
        }))
        .unwrap();
        let log = [
            entry(RecordKind::Intent, "r1", "verify", |_| {}),
            entry(RecordKind::Completion, "r1", "verify", |e| {
                e.outcome = Some("ok".into())
            }),
            entry(RecordKind::Intent, "r2", "lookup", |e| {
                e.arguments = json!({"id": "ORD-1"})
            }),
            entry(RecordKind::Completion, "r2", "lookup", |e| {
                e.outcome = Some("ok".into())
            }),
            entry(RecordKind::Intent, "r3", "fetch", |_| {}),
            entry(RecordKind::Completion, "r3", "fetch", |e| {
                e.outcome = Some("ok".into())
            }),
            entry(RecordKind::Intent, "r4", "lookup", |e| {
                e.arguments = json!({"id": "ORD-2"})
            }),
            entry(RecordKind::Completion, "r4", "lookup", |e| {
                e.outcome = Some("error".into())
            }),
        ];
        let mut replayed = Replayed::new(Some(&spec));
        assert_eq!(
            replayed.state,
            json!({"verified": false}).as_object().unwrap().clone()
        );
        for e in &log {
            replayed.record(e, Some(&spec));
        }
        assert_eq!(
            Value::Object(replayed.state.clone()),
            json!({"verified": true, "order": "ORD-1"}),
            "the failed lookup wrote nothing"
        );
        assert_eq!(replayed.unknown, BTreeSet::from(["page".to_owned()]));
        assert_eq!(replayed.history().len(), 4);
    }
}
