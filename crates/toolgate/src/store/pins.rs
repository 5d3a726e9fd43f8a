//! Pinned tool definitions: the defence against a server that changes a tool after
//! it was trusted (a "rug pull").
//!
//! The first time a tool from a source the operator does not control is seen, its
//! definition (name, title, description, schemas, annotations) is pinned by
//! [`content_hash`](toolgate_core::content_hash). Each later sighting is compared with the
//! pin: the same hash passes; a different one is recorded beside the pin as a
//! *change* and the tool is quarantined until a person accepts that change
//! ([`PinStore::accept_pin`]), which makes the recorded definition the new pin. What
//! is accepted is exactly what was recorded and shown, never whatever the server
//! says at the moment of accepting.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use super::StoreError;

/// The parts of a definition a pin covers, in the order changes are named, with
/// the words used for them: a tool's, then a skill's own (its whole `SKILL.md`,
/// and each file's digest by path).
pub const PINNED_FIELDS: [(&str, &str); 8] = [
    ("name", "name"),
    ("title", "title"),
    ("description", "description"),
    ("inputSchema", "input schema"),
    ("outputSchema", "output schema"),
    ("annotations", "annotations"),
    ("instructions", "instructions"),
    ("files", "files"),
];

/// A pinned definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pin {
    /// The tool's name in the catalog, e.g. `fs.read_text_file`.
    pub tool: String,
    /// The content hash of `definition`.
    pub hash: String,
    /// What was pinned.
    pub definition: Value,
    /// When it was pinned (or last accepted), RFC 3339 UTC.
    pub pinned_at: String,
    /// The latest different definition seen, waiting for a person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<PinChange>,
}

/// A definition that differs from the pin, as last seen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PinChange {
    /// The changed definition's content hash.
    pub hash: String,
    /// The changed definition, exactly as seen (what accepting pins).
    pub definition: Value,
    /// When it was last seen, RFC 3339 UTC.
    pub seen_at: String,
}

impl Pin {
    /// The parts that differ between the pin and the recorded change, in words
    /// (`description`, `input schema`, ...); empty when nothing changed.
    pub fn changed_fields(&self) -> Vec<&'static str> {
        self.change
            .as_ref()
            .map(|c| changed_fields(&self.definition, &c.definition))
            .unwrap_or_default()
    }
}

/// The parts of two definitions that differ, in words, in [`PINNED_FIELDS`] order.
pub fn changed_fields(pinned: &Value, seen: &Value) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = PINNED_FIELDS
        .iter()
        .filter(|(key, _)| pinned.get(key) != seen.get(key))
        .map(|(_, words)| *words)
        .collect();
    let known = |k: &String| PINNED_FIELDS.iter().any(|(key, _)| key == k);
    let extra = |a: &Value, b: &Value| {
        a.as_object()
            .into_iter()
            .flatten()
            .any(|(k, v)| !known(k) && b.get(k) != Some(v))
    };
    if extra(pinned, seen) || extra(seen, pinned) {
        out.push("other fields");
    }
    out
}

/// The parts in words, joined for a sentence: `description and input schema`.
pub fn join_fields(fields: &[&str]) -> String {
    match fields {
        [] => "nothing".into(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// How a sighting compared with the pin.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // made once per tool sighting; boxing buys nothing
pub enum PinCheck {
    /// Never seen before: pinned now.
    Pinned,
    /// The same as the pin (a change recorded earlier, if any, is dropped).
    Matches,
    /// Different from the pin; recorded as the tool's change.
    Changed(Pin),
}

/// A pin could not be read, found or accepted. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The store itself failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No tool is pinned under this name.
    #[error("no tool is pinned as `{tool}`{}", unknown_hint(suggestions))]
    Unknown {
        /// The name asked for.
        tool: String,
        /// Pinned names close to it, best first.
        suggestions: Vec<String>,
    },
    /// The tool has not changed since it was pinned.
    #[error(
        "`{tool}` has not changed since it was pinned at {pinned_at}; there is nothing to accept"
    )]
    Unchanged {
        /// The tool asked for.
        tool: String,
        /// When its pin was taken, RFC 3339 UTC.
        pinned_at: String,
    },
    /// A stored pin cannot be read back, typically because the row was edited by hand.
    #[error(
        "pin store at {location}: the pin of `{tool}` has {problem}; delete the row so the tool is pinned afresh on next sight"
    )]
    Corrupt {
        /// The store: a SQLite file's path (or `:memory:`), or a database URL with
        /// its password masked.
        location: String,
        /// The tool whose pin cannot be read.
        tool: String,
        /// What in the row cannot be read.
        problem: String,
    },
}

fn unknown_hint(suggestions: &[String]) -> String {
    match suggestions.first() {
        Some(best) => format!("; did you mean `{best}`?"),
        None => "; `toolgate pins list` shows the pinned tools".into(),
    }
}

/// Where pins live.
///
/// [`SqliteStore`](super::SqliteStore) keeps them in `state.db`, so `toolgate pins
/// accept` in one terminal releases a tool quarantined by a gate running in
/// another; [`MemoryPins`](super::MemoryPins) keeps them in memory.
pub trait PinStore: Send + Sync {
    /// Compares `definition` with the pin of `tool`: pins it on first sight, and
    /// records it as the tool's change when it differs. Atomic per tool.
    fn observe_tool(
        &self,
        tool: &str,
        definition: &Value,
        now: SystemTime,
    ) -> Result<PinCheck, PinError>;

    /// The pin of one tool, or `None`.
    fn pin(&self, tool: &str) -> Result<Option<Pin>, PinError>;

    /// Every pin, by tool name.
    fn pins(&self) -> Result<Vec<Pin>, PinError>;

    /// Makes the recorded change of `tool` its pin, and returns the new pin.
    fn accept_pin(&self, tool: &str, now: SystemTime) -> Result<Pin, PinError>;
}

/// RFC 3339 UTC with milliseconds, clamped to what the format can hold.
pub(super) fn timestamp(time: SystemTime) -> String {
    const LATEST: Duration = Duration::from_millis(253_402_300_799_999);
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    humantime::format_rfc3339_millis(UNIX_EPOCH + since_epoch.min(LATEST)).to_string()
}

pub(super) fn unknown(tool: &str, pinned: impl IntoIterator<Item = String>) -> PinError {
    let names: Vec<String> = pinned.into_iter().collect();
    PinError::Unknown {
        tool: tool.to_owned(),
        suggestions: toolgate_core::closest_names(tool, names.iter().map(String::as_str)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::{MemoryPins, SqliteStore};

    fn stores() -> Vec<(&'static str, Box<dyn PinStore>)> {
        vec![
            ("memory", Box::new(MemoryPins::new())),
            ("sqlite", Box::new(SqliteStore::in_memory().unwrap())),
        ]
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
    }

    #[test]
    fn a_tool_is_pinned_on_first_sight_and_matches_after() {
        for (kind, pins) in stores() {
            let v1 = json!({"name": "read", "description": "Read."});
            assert_eq!(
                pins.observe_tool("fs.read", &v1, at(0)).unwrap(),
                PinCheck::Pinned,
                "{kind}"
            );
            assert_eq!(
                pins.observe_tool("fs.read", &v1, at(1)).unwrap(),
                PinCheck::Matches,
                "{kind}"
            );
            let pin = pins.pin("fs.read").unwrap().unwrap();
            assert_eq!(pin.hash, toolgate_core::content_hash(&v1), "{kind}");
            assert_eq!(pin.pinned_at, "2023-11-14T22:13:20.000Z", "{kind}");
        }
    }

    #[test]
    fn a_change_is_recorded_until_accepted_and_then_becomes_the_pin() {
        for (kind, pins) in stores() {
            let v1 =
                json!({"name": "read", "description": "Read.", "inputSchema": {"type": "object"}});
            let v2 = json!({"name": "read", "description": "Read, then mail it out.", "inputSchema": {"type": "object"}});
            pins.observe_tool("fs.read", &v1, at(0)).unwrap();
            let PinCheck::Changed(pin) = pins.observe_tool("fs.read", &v2, at(5)).unwrap() else {
                panic!("{kind}: a change was not reported");
            };
            assert_eq!(pin.definition, v1, "{kind}");
            assert_eq!(pin.changed_fields(), ["description"], "{kind}");
            // Still changed on the next sighting, and listed as such.
            assert!(matches!(
                pins.observe_tool("fs.read", &v2, at(6)).unwrap(),
                PinCheck::Changed(_)
            ));
            assert!(pins.pins().unwrap()[0].change.is_some(), "{kind}");
            let accepted = pins.accept_pin("fs.read", at(10)).unwrap();
            assert_eq!(accepted.definition, v2, "{kind}");
            assert_eq!(accepted.change, None, "{kind}");
            assert_eq!(
                pins.observe_tool("fs.read", &v2, at(11)).unwrap(),
                PinCheck::Matches,
                "{kind}"
            );
        }
    }

    #[test]
    fn a_server_that_reverts_drops_the_recorded_change() {
        for (kind, pins) in stores() {
            let v1 = json!({"name": "a"});
            let v2 = json!({"name": "a", "title": "A"});
            pins.observe_tool("s.a", &v1, at(0)).unwrap();
            pins.observe_tool("s.a", &v2, at(1)).unwrap();
            assert_eq!(
                pins.observe_tool("s.a", &v1, at(2)).unwrap(),
                PinCheck::Matches,
                "{kind}"
            );
            let err = pins.accept_pin("s.a", at(3)).unwrap_err().to_string();
            assert_eq!(
                err,
                "`s.a` has not changed since it was pinned at 2023-11-14T22:13:20.000Z; there is nothing to accept",
                "{kind}"
            );
        }
    }

    #[test]
    fn accepting_an_unknown_tool_suggests_the_closest_pin() {
        for (kind, pins) in stores() {
            pins.observe_tool("fs.read_file", &json!({"name": "read_file"}), at(0))
                .unwrap();
            let err = pins
                .accept_pin("fs.read_fil", at(1))
                .unwrap_err()
                .to_string();
            assert_eq!(
                err, "no tool is pinned as `fs.read_fil`; did you mean `fs.read_file`?",
                "{kind}"
            );
        }
    }

    #[test]
    fn changed_fields_name_every_part_that_differs() {
        let a = json!({"name": "x", "description": "d", "inputSchema": {}, "annotations": {"readOnlyHint": true}});
        let b = json!({"name": "x", "description": "d2", "inputSchema": {"type": "object"}, "annotations": {}});
        let fields = changed_fields(&a, &b);
        assert_eq!(fields, ["description", "input schema", "annotations"]);
        assert_eq!(
            join_fields(&fields),
            "description, input schema and annotations"
        );
        assert_eq!(changed_fields(&a, &a), Vec::<&str>::new());
    }
}
