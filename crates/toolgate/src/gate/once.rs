//! One execution per intended call: the stages that read and claim the call
//! ledger (see `crate::store::call_ledger`), and what a run records there when
//! it ends.
//!
//! - **recall** (after validation): a call under an idempotency key that already
//!   ran gets that run's outcome, and nothing runs (audited as `replayed`); the
//!   key used for another call is refused (`key_reused`); the key's run still
//!   going is refused with a retry hint (`in_flight`). A call with effects whose
//!   identical predecessor in the conversation has an unknown outcome is refused,
//!   naming that run (`in_doubt`), until an operator resolves it.
//! - **claim** (with the intent of a call with effects, in one step of the
//!   store; just before it, for a read or a call the flow governs): the key is
//!   taken for this run, atomically across every process sharing the store, so
//!   two callers racing one key run it once.
//! - **settle** (with the completion, in one step where the call is not
//!   governed): the key keeps the outcome for the retention; an unknown outcome
//!   of a call with effects puts the call in doubt.

use std::time::Duration;

use toolgate_core::{AuditEntry, DynTool, Effect, Outcome, Retry, ToolCtx};

use super::Gate;
use super::call::Stop;
use super::store_failure::store_failure;
use crate::store::{GateStore, LedgerEntry, LedgerName, Settle};

/// How long past its deadline a keyed run holds its key before it is taken
/// for lost.
const LEASE_GRACE_MS: u64 = 60_000;

/// The idempotency key a call that will run holds: its name in the ledger, and
/// how long it keeps the call's outcome.
pub(super) struct Keyed {
    pub name: LedgerName,
    pub retention_ms: u64,
}

/// Milliseconds since the Unix epoch of `time`.
pub(super) fn millis(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Gate {
    /// Recall: what the ledger already knows of this call (see the module).
    pub(super) fn recall(
        &self,
        session: &str,
        key: Option<&str>,
        tool: &dyn DynTool,
        audit: &AuditEntry,
    ) -> Result<(), Stop> {
        let read = tool.effect() == Effect::Read;
        if key.is_none() && read {
            return Ok(());
        }
        let call_hash = audit.call_hash.as_deref().unwrap_or_default();
        let now = millis(self.clock_time());
        if let Some(key) = key {
            let name = LedgerName::key(&audit.principal, key);
            match self.store.ledger_entry(&name, now) {
                Ok(Some(held)) => return Err(held_by(&held, key, call_hash, now)),
                Ok(None) => {}
                Err(e) => return Err(Stop::failed(store_failure("the call ledger", e))),
            }
        }
        if read {
            return Ok(());
        }
        match self
            .store
            .ledger_entry(&LedgerName::in_doubt(session, call_hash), now)
        {
            Ok(Some(doubt)) => Err(Stop::refused(
                "in_doubt",
                Outcome::Denied {
                    reason: format!(
                        "an identical call (run {}) may already have happened: its outcome was lost, and no operator has resolved it yet. Do not repeat it: ask the user, or ask the operator to check and run `toolgate audit resolve {}`",
                        doubt.run_id, doubt.run_id
                    ),
                },
            )),
            Ok(None) => Ok(()),
            Err(e) => Err(Stop::failed(store_failure("the call ledger", e))),
        }
    }

    /// Claim: takes the call's key for its run, or stops it when another run
    /// took the key first. `intent`: the call's intent, recorded with the
    /// claim in one step of the store (a call with effects outside a flow; a
    /// read's or a governed call's intent is recorded apart).
    pub(super) fn claim_key(
        &self,
        key: &str,
        audit: &AuditEntry,
        timeout: Duration,
        intent: Option<AuditEntry>,
    ) -> Result<Keyed, Stop> {
        let (keyed, entry, now) = self.key_entry(key, audit, timeout);
        let claimed = match intent {
            Some(intent) => self.store.append_claiming(intent, &keyed.name, &entry, now),
            None => self.store.claim_ledger(&keyed.name, &entry, now),
        };
        match claimed {
            Ok(None) => Ok(keyed),
            Ok(Some(held)) => Err(held_by(&held, key, &entry.call_hash, now)),
            Err(e) => Err(Stop::failed(store_failure("the call ledger", e))),
        }
    }

    /// The key's name and the entry that holds it for this run (until its
    /// deadline and a grace, kept for the retention), as of now.
    fn key_entry(
        &self,
        key: &str,
        audit: &AuditEntry,
        timeout: Duration,
    ) -> (Keyed, LedgerEntry, u64) {
        let now = millis(self.clock_time());
        let retention_ms =
            u64::try_from(self.options.idempotency_retention.as_millis()).unwrap_or(u64::MAX);
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let lease = now
            .saturating_add(timeout_ms)
            .saturating_add(LEASE_GRACE_MS);
        let expires = now.saturating_add(retention_ms.max(timeout_ms + LEASE_GRACE_MS));
        let keyed = Keyed {
            name: LedgerName::key(&audit.principal, key),
            retention_ms,
        };
        (keyed, entry_of(audit, None, lease, expires), now)
    }
}

/// Why a call whose key `held` holds does not run: a replay of its outcome,
/// another call under the key, or its run still going.
fn held_by(held: &LedgerEntry, key: &str, call_hash: &str, now: u64) -> Stop {
    if held.call_hash != call_hash {
        return Stop::refused(
            "key_reused",
            Outcome::error(
                format!(
                    "the idempotency key `{key}` was already used for another call (`{}` with other arguments, run {}); nothing ran. Use a new key for a new call, or repeat that call exactly",
                    held.tool, held.run_id
                ),
                false,
            ),
        );
    }
    match held.outcome_at(now) {
        Some(outcome) => Stop::refused("replayed", outcome),
        None => Stop::refused(
            "in_flight",
            Outcome::error(
                format!(
                    "the call with idempotency key `{key}` is running now (run {}); nothing new ran. Call again with the same key in a moment to get its outcome",
                    held.run_id
                ),
                true,
            ),
        ),
    }
}

/// Whether a run of `tool` whose outcome was lost may simply be reported as a
/// failure: a read, or an idempotent call that carries its key. Anything else
/// may have happened, and its outcome is unknown.
pub(super) fn may_repeat(tool: &dyn DynTool, ctx: &ToolCtx) -> bool {
    match tool.effect().retry() {
        Retry::Freely => true,
        Retry::WithSameKey => ctx.idempotency_key().is_some() && tool.passes_idempotency_key(),
        Retry::Never => false,
    }
}

/// What a run's key keeps when it ends with `outcome` at `now`.
pub(super) fn settled(keyed: &Keyed, outcome: &Outcome, now: u64) -> Settle {
    Settle {
        name: keyed.name.clone(),
        outcome: outcome.clone(),
        expires_ms: now.saturating_add(keyed.retention_ms),
    }
}

/// Records in the ledger what a run came to, where its completion did not:
/// `keyed`, the key it holds, keeps the outcome; an unknown outcome puts the
/// call in doubt in its conversation.
pub(super) fn settle(
    store: &dyn GateStore,
    keyed: Option<&Keyed>,
    audit: &AuditEntry,
    outcome: &Outcome,
    now: u64,
) -> Result<(), crate::store::StoreError> {
    if let Some(keyed) = keyed {
        let key = settled(keyed, outcome, now);
        store.settle_ledger(&key.name, &audit.run_id, Some(outcome), key.expires_ms)?;
    }
    if let Outcome::Unknown { .. } = outcome {
        // A doubt lasts until an operator resolves it.
        let doubt = entry_of(audit, Some(outcome.clone()), now, u64::MAX);
        let name = LedgerName::in_doubt(&audit.session, &doubt.call_hash);
        store.claim_ledger(&name, &doubt, now)?;
    }
    Ok(())
}

/// The ledger entry of the call `audit` records.
fn entry_of(
    audit: &AuditEntry,
    outcome: Option<Outcome>,
    lease_ms: u64,
    expires_ms: u64,
) -> LedgerEntry {
    LedgerEntry {
        tool: audit.tool.clone(),
        call_hash: audit.call_hash.clone().unwrap_or_default(),
        run_id: audit.run_id.clone(),
        session: audit.session.clone(),
        principal: audit.principal.clone(),
        outcome,
        lease_ms,
        expires_ms,
        call: None,
    }
}
