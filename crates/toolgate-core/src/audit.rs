//! The audit log's records and its hash chain: what a record holds and how it is
//! sealed (checking a stored log is `chain`).
//!
//! The gate hands the log an [`AuditEntry`] before a call runs (an intent), after it
//! ran (a completion), or instead of running it (a refusal). The log numbers it and
//! seals it into an [`AuditRecord`] whose hash covers its content and the previous
//! record's hash:
//!
//! ```text
//! hash = sha256_hex(prev_hash + "\n" + canonical_json(record without `hash`))
//! ```
//!
//! The first record's `prev_hash` is [`GENESIS_HASH`]. [`verify_chain`](crate::verify_chain)
//! walks the records in order and reports the first one that was changed, inserted
//! or deleted.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Decision, Effect, Retry, canonical_json, sha256_hex};

/// The `prev_hash` of the first record: 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Why a record was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// Written, durably, before a tool runs.
    Intent,
    /// Written after a tool ran (or failed, timed out, was cancelled).
    Completion,
    /// Written instead of running: the call was invalid, denied or is waiting for approval.
    Refusal,
    /// Written when a running server read its spec file again: `arguments` names
    /// the file and its SHA-256, `outcome` is `ok` when the new spec serves and
    /// `refused` when the old one still does. No tool ran.
    Reload,
}

impl RecordKind {
    /// The spelling stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Intent => "intent",
            RecordKind::Completion => "completion",
            RecordKind::Refusal => "refusal",
            RecordKind::Reload => "reload",
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the gate hands the audit log; the log adds `seq`, `prev_hash` and `hash`.
///
/// `arguments` must already have its secrets redacted: the log stores what it is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When, as RFC 3339 UTC; supplied by the caller so tests can fix the clock.
    pub time: String,
    /// Whether this is the call's intent, completion or refusal.
    pub kind: RecordKind,
    /// Links an intent to its completion; unique per execution.
    pub run_id: String,
    /// The model's id for the call.
    pub call_id: String,
    /// The session the call came in on.
    pub session: String,
    /// The id of the principal the call ran as.
    pub principal: String,
    /// The tool's name as called, which may name no tool (an invalid call).
    pub tool: String,
    /// The tool's effect; absent when the tool is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    /// The call's arguments, secrets redacted.
    pub arguments: Value,
    /// What the policy decided; absent when the call never reached it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Why it was decided or refused so: the policy rule's reason, or what stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `ok`, `error`, `denied`, `pending_approval`, `invalid`, `timeout` or `cancelled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The outcome's message as the model was told it, clipped; absent on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// How long the tool ran, in milliseconds (completions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// How many times the tool was tried, retries included (completions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// How the caller authenticated — `api_key`, `oauth`, `bearer_token` or
    /// `none` — for a call served over HTTP; absent otherwise (and in records
    /// written before it was kept, which verify as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    /// What names the caller's credential: a key's id and label, a token's
    /// `sub` and `jti`. Never the credential itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// The call's hash ([`call_hash`](crate::call_hash): its tool as defined
    /// and its arguments), on the records of a validated call with effects,
    /// under an idempotency key or asked about: what an approval answered, and
    /// what "the same call" means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_hash: Option<String>,
    /// The caller's idempotency key, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// How the audit log writes U+0000: as the terminal escapes it.
const NUL_ESCAPED: &str = "\\u{0}";

impl AuditEntry {
    /// An entry with what every record carries — when, why it is written, which
    /// execution and call, and who called what — and nothing else: no effect,
    /// decision or outcome yet, and `arguments` null. The caller sets the rest as
    /// the call goes.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate_core::{AuditEntry, Effect, RecordKind};
    ///
    /// let mut entry = AuditEntry::new(
    ///     "2025-01-01T00:00:00.000Z",
    ///     RecordKind::Intent,
    ///     "r1",
    ///     "c1",
    ///     "default",
    ///     "operator",
    ///     "lookup_order",
    /// );
    /// entry.effect = Some(Effect::Read);
    /// entry.arguments = json!({"order_id": "A-1"});
    /// assert_eq!(entry.outcome, None);
    /// ```
    pub fn new(
        time: impl Into<String>,
        kind: RecordKind,
        run_id: impl Into<String>,
        call_id: impl Into<String>,
        session: impl Into<String>,
        principal: impl Into<String>,
        tool: impl Into<String>,
    ) -> AuditEntry {
        AuditEntry {
            time: time.into(),
            kind,
            run_id: run_id.into(),
            call_id: call_id.into(),
            session: session.into(),
            principal: principal.into(),
            tool: tool.into(),
            effect: None,
            arguments: Value::Null,
            decision: None,
            reason: None,
            outcome: None,
            message: None,
            duration_ms: None,
            attempts: None,
            auth: None,
            credential: None,
            call_hash: None,
            idempotency_key: None,
        }
    }

    /// Writes every U+0000 in the entry's text (argument keys and values
    /// included) as [`NUL_ESCAPED`]; a walk that changes nothing when there is none.
    fn escape_nul(&mut self) {
        let fields = [
            &mut self.time,
            &mut self.run_id,
            &mut self.call_id,
            &mut self.session,
            &mut self.principal,
            &mut self.tool,
        ];
        for text in fields {
            escape_nul_in(text);
        }
        let optional = [
            &mut self.reason,
            &mut self.outcome,
            &mut self.message,
            &mut self.auth,
            &mut self.credential,
        ];
        for text in optional.into_iter().flatten() {
            escape_nul_in(text);
        }
        escape_nul_in_value(&mut self.arguments);
    }
}

fn escape_nul_in(text: &mut String) {
    if text.contains('\0') {
        *text = text.replace('\0', NUL_ESCAPED);
    }
}

fn escape_nul_in_value(value: &mut Value) {
    match value {
        Value::String(text) => escape_nul_in(text),
        Value::Array(items) => items.iter_mut().for_each(escape_nul_in_value),
        Value::Object(map) => {
            if map.keys().any(|k| k.contains('\0')) {
                let entries = std::mem::take(map);
                for (mut key, value) in entries {
                    escape_nul_in(&mut key);
                    map.insert(key, value);
                }
            }
            map.values_mut().for_each(escape_nul_in_value);
        }
        _ => {}
    }
}

/// One sealed record of the audit log: an entry, its place in the chain, and its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// 1 for the first record, then one more for each.
    pub seq: u64,
    /// What was recorded, stored flat beside the chain fields.
    #[serde(flatten)]
    pub entry: AuditEntry,
    /// The hash of the record before, or [`GENESIS_HASH`] for the first.
    pub prev_hash: String,
    /// The SHA-256 of `prev_hash`, a newline and the canonical JSON of everything else.
    pub hash: String,
}

impl AuditRecord {
    /// Seals `entry` as record `seq` following a record whose hash is `prev_hash`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate_core::{AuditEntry, AuditRecord, GENESIS_HASH, RecordKind};
    ///
    /// let mut entry = AuditEntry::new(
    ///     "2025-01-01T00:00:00.000Z",
    ///     RecordKind::Intent,
    ///     "r1",
    ///     "c1",
    ///     "default",
    ///     "operator",
    ///     "lookup_order",
    /// );
    /// entry.arguments = json!({"order_id": "A-1"});
    /// let first = AuditRecord::seal(1, GENESIS_HASH, entry);
    /// assert_eq!(first.hash, first.expected_hash());
    /// ```
    ///
    /// A U+0000 (NUL) anywhere in the entry's text is sealed as the five
    /// characters `\u{0}`, as the terminal shows it: PostgreSQL's text and JSON
    /// types cannot hold the character itself, and a record every store can
    /// keep is worth more than that one character. The escaped text is what the
    /// hash covers, so the chain verifies on every backend alike.
    pub fn seal(seq: u64, prev_hash: &str, entry: AuditEntry) -> AuditRecord {
        Self::seal_stored(seq, prev_hash, entry).0
    }

    /// [`seal`](Self::seal), with the record's [canonical
    /// JSON](Self::to_canonical_json) made from the text its hash was taken of,
    /// so a store writes it without serializing the record a second time.
    pub fn seal_stored(seq: u64, prev_hash: &str, mut entry: AuditEntry) -> (AuditRecord, String) {
        entry.escape_nul();
        let mut record = AuditRecord {
            seq,
            entry,
            prev_hash: prev_hash.to_owned(),
            hash: String::new(),
        };
        let (body, hash_at) = record.write_canonical(None);
        record.hash = chain_hash(prev_hash, &body);
        // `arguments` always comes first, so the hash follows a comma.
        let mut stored = String::with_capacity(body.len() + 75);
        stored.push_str(&body[..hash_at]);
        stored.push_str(",\"hash\":\"");
        stored.push_str(&record.hash);
        stored.push('"');
        stored.push_str(&body[hash_at..]);
        (record, stored)
    }

    /// The hash this record's content and `prev_hash` call for; equal to `hash`
    /// unless the record was altered.
    pub fn expected_hash(&self) -> String {
        chain_hash(&self.prev_hash, &self.write_canonical(None).0)
    }

    /// The record as canonical JSON, `hash` included: the form a store keeps.
    pub fn to_canonical_json(&self) -> String {
        self.write_canonical(Some(&self.hash)).0
    }

    /// Whether the call may be run again without asking anyone: only a `read`.
    ///
    /// Any other intent left without a completion may already have changed the world,
    /// so an operator must find out whether it did and resolve it.
    pub fn safe_to_rerun(&self) -> bool {
        self.entry
            .effect
            .is_some_and(|effect| effect.retry() == Retry::Freely)
    }

    /// `canonical_json` of the serialized record, with `hash` or without, written
    /// field by field: going through a `Value` map costs several times more. Keys
    /// must stay in byte order; a test holds this equal to the generic path.
    /// Returns the text and the byte offset where `hash` is or would be.
    fn write_canonical(&self, hash: Option<&str>) -> (String, usize) {
        let e = &self.entry;
        let arguments = canonical_json(&e.arguments);
        let mut w = CanonicalObject::with_capacity(384 + arguments.len());
        w.raw("arguments", &arguments);
        if let Some(attempts) = e.attempts {
            w.raw("attempts", &attempts.to_string());
        }
        if let Some(auth) = &e.auth {
            w.string("auth", auth);
        }
        if let Some(call_hash) = &e.call_hash {
            w.string("call_hash", call_hash);
        }
        w.string("call_id", &e.call_id);
        if let Some(credential) = &e.credential {
            w.string("credential", credential);
        }
        if let Some(decision) = e.decision {
            w.string("decision", decision.as_str());
        }
        if let Some(ms) = e.duration_ms {
            w.raw("duration_ms", &ms.to_string());
        }
        if let Some(effect) = e.effect {
            w.string("effect", effect.as_str());
        }
        let hash_at = w.out.len();
        if let Some(hash) = hash {
            w.string("hash", hash);
        }
        if let Some(key) = &e.idempotency_key {
            w.string("idempotency_key", key);
        }
        w.string("kind", e.kind.as_str());
        if let Some(message) = &e.message {
            w.string("message", message);
        }
        if let Some(outcome) = &e.outcome {
            w.string("outcome", outcome);
        }
        w.string("prev_hash", &self.prev_hash);
        w.string("principal", &e.principal);
        if let Some(reason) = &e.reason {
            w.string("reason", reason);
        }
        w.string("run_id", &e.run_id);
        w.raw("seq", &self.seq.to_string());
        w.string("session", &e.session);
        w.string("time", &e.time);
        w.string("tool", &e.tool);
        (w.finish(), hash_at)
    }
}

/// A JSON object written key by key, in the order given, compactly.
struct CanonicalObject {
    out: Vec<u8>,
}

impl CanonicalObject {
    fn with_capacity(capacity: usize) -> Self {
        let mut out = Vec::with_capacity(capacity);
        out.push(b'{');
        Self { out }
    }

    fn key(&mut self, key: &str) {
        if self.out.len() > 1 {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.out.extend_from_slice(json.as_bytes());
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        // Writing a string into a Vec cannot fail; the escaping is serde_json's, the
        // same `canonical_json` uses.
        let _ = serde_json::to_writer(&mut self.out, value);
    }

    fn finish(mut self) -> String {
        self.out.push(b'}');
        String::from_utf8(self.out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// `sha256_hex(prev_hash + "\n" + body)`: the link that makes the records a chain.
pub fn chain_hash(prev_hash: &str, body: &str) -> String {
    let mut text = String::with_capacity(prev_hash.len() + 1 + body.len());
    text.push_str(prev_hash);
    text.push('\n');
    text.push_str(body);
    sha256_hex(text)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn entry(kind: RecordKind, run: &str) -> AuditEntry {
        let done = kind == RecordKind::Completion;
        let mut entry = AuditEntry::new(
            "2025-01-01T00:00:00.000Z",
            kind,
            run,
            format!("call-{run}"),
            "default",
            "operator",
            "refund_order",
        );
        entry.effect = Some(Effect::Write);
        entry.arguments = json!({"order_id": "A-1", "amount": 12.5});
        entry.decision = Some(Decision::Allow);
        entry.reason = Some("write tools are allowed for operators".into());
        entry.outcome = done.then(|| "ok".into());
        entry.duration_ms = done.then_some(3);
        entry.attempts = done.then_some(1);
        entry
    }

    #[test]
    fn a_nul_in_any_text_is_sealed_escaped_so_every_store_can_keep_it() {
        let mut with_nul = entry(RecordKind::Intent, "r1");
        with_nul.arguments = json!({"q\u{0}k": ["a\u{0}b", {"deep": "\u{0}"}], "n": 1});
        with_nul.session = "s\u{0}1".into();
        with_nul.message = Some("bad\u{0}".into());
        let record = AuditRecord::seal(1, GENESIS_HASH, with_nul);
        let stored = record.to_canonical_json();
        assert!(!stored.contains("\\u0000"), "{stored}");
        assert_eq!(
            record.entry.arguments,
            json!({"q\\u{0}k": ["a\\u{0}b", {"deep": "\\u{0}"}], "n": 1})
        );
        assert_eq!(record.entry.session, "s\\u{0}1");
        assert_eq!(record.entry.message.as_deref(), Some("bad\\u{0}"));
        assert_eq!(record.hash, record.expected_hash());
        let plain = entry(RecordKind::Intent, "r1");
        assert_eq!(
            AuditRecord::seal(1, GENESIS_HASH, plain.clone()).entry,
            plain,
            "text without NUL is sealed as it is"
        );
    }

    /// A chain of `n` records, sealed as a log would.
    pub(crate) fn chain(n: u64) -> Vec<AuditRecord> {
        let mut records: Vec<AuditRecord> = Vec::new();
        for seq in 1..=n {
            let prev = records
                .last()
                .map_or(GENESIS_HASH, |r| r.hash.as_str())
                .to_owned();
            let kind = if seq % 2 == 1 {
                RecordKind::Intent
            } else {
                RecordKind::Completion
            };
            records.push(AuditRecord::seal(
                seq,
                &prev,
                entry(kind, &format!("run-{}", seq.div_ceil(2))),
            ));
        }
        records
    }

    #[test]
    fn the_hash_covers_prev_hash_and_the_canonical_record_without_hash() {
        let record = &chain(1)[0];
        let mut body = serde_json::to_value(record).unwrap();
        body.as_object_mut().unwrap().remove("hash");
        let expected = sha256_hex(format!("{GENESIS_HASH}\n{}", canonical_json(&body)));
        assert_eq!(record.hash, expected);
        // Absent optional fields are left out, not written as null.
        assert!(!canonical_json(&body).contains("null"));
    }

    /// The generic path the hand-written one must match.
    fn generic_canonical(record: &AuditRecord, with_hash: bool) -> String {
        let mut value = serde_json::to_value(record).unwrap();
        if !with_hash {
            value.as_object_mut().unwrap().remove("hash");
        }
        canonical_json(&value)
    }

    #[test]
    fn the_fast_canonical_form_matches_canonical_json_of_the_record() {
        let mut full = chain(2).remove(1);
        full.entry.message = Some("tab\t, quote \", newline \n, \u{1} and ünïcödé ✓".into());
        full.entry.effect = Some(Effect::External);
        full.entry.decision = Some(Decision::Ask);
        full.entry.arguments = json!({"z": [1, 2.5, null, {"b": true, "a": "\u{7f}"}], "a": -3});
        full.entry.auth = Some("api_key".into());
        full.entry.credential = Some("key 3f9a0c1d (laptop)".into());
        full.entry.call_hash = Some("9b1f".repeat(16));
        full.entry.idempotency_key = Some("pay-\"7\"".into());
        let mut sparse = full.clone();
        let e = &mut sparse.entry;
        (e.effect, e.decision, e.reason, e.outcome, e.message) = (None, None, None, None, None);
        (e.duration_ms, e.attempts, e.arguments) = (None, None, Value::Null);
        (e.auth, e.credential) = (None, None);
        (e.call_hash, e.idempotency_key) = (None, None);
        for record in [&full, &sparse] {
            assert_eq!(record.to_canonical_json(), generic_canonical(record, true));
            assert_eq!(
                record.expected_hash(),
                chain_hash(&record.prev_hash, &generic_canonical(record, false))
            );
            let (sealed, stored) =
                AuditRecord::seal_stored(record.seq, &record.prev_hash, record.entry.clone());
            assert_eq!(stored, generic_canonical(&sealed, true));
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_in_any_field_is_written_canonically(
            tool in "\\PC*", reason in proptest::option::of("\\PC*"), key in "\\PC{0,8}",
            seq in proptest::num::u64::ANY, ms in proptest::option::of(proptest::num::u64::ANY),
        ) {
            let mut record = chain(1).remove(0);
            record.seq = seq;
            record.entry.tool = tool;
            record.entry.reason = reason;
            record.entry.duration_ms = ms;
            record.entry.arguments = json!({ key: "v" });
            proptest::prop_assert_eq!(record.to_canonical_json(), generic_canonical(&record, true));
            let (sealed, stored) = AuditRecord::seal_stored(seq, &record.prev_hash, record.entry);
            proptest::prop_assert_eq!(stored, generic_canonical(&sealed, true));
        }
    }

    #[test]
    fn a_record_without_auth_is_written_as_records_were_before_it_was_kept() {
        let record = &chain(1)[0];
        let written = record.to_canonical_json();
        assert!(!written.contains("\"auth\"") && !written.contains("\"credential\""));
        let mut with = record.entry.clone();
        with.auth = Some("oauth".into());
        with.credential = Some("token of user-17 (t-1)".into());
        let sealed = AuditRecord::seal(1, GENESIS_HASH, with);
        assert_ne!(
            sealed.hash, record.hash,
            "the hash covers how the caller authenticated"
        );
    }

    #[test]
    fn a_record_round_trips_through_its_canonical_json() {
        for record in chain(2) {
            let back: AuditRecord = serde_json::from_str(&record.to_canonical_json()).unwrap();
            assert_eq!(back, record);
            assert_eq!(back.expected_hash(), record.hash);
        }
    }

    #[test]
    fn only_read_calls_are_safe_to_rerun() {
        let mut record = chain(1).remove(0);
        assert!(!record.safe_to_rerun());
        record.entry.effect = Some(Effect::Read);
        assert!(record.safe_to_rerun());
        record.entry.effect = None;
        assert!(!record.safe_to_rerun());
    }
}
