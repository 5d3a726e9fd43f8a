//! The call ledger: a name is claimed by one of many handles racing for it,
//! keeps its outcome until it expires, and is settled only by its run
//! (`CallLedger`).

use toolgate::store::{LedgerEntry, LedgerName};

use super::*;

fn running(run: &str, now: u64) -> LedgerEntry {
    LedgerEntry {
        tool: "pay".into(),
        call_hash: "h1".into(),
        run_id: run.into(),
        session: "s".into(),
        principal: "agent".into(),
        outcome: None,
        lease_ms: now + 1_000,
        expires_ms: now + 10_000,
        call: None,
    }
}

pub(super) fn a_key_is_claimed_by_one_of_many_handles_and_keeps_its_outcome(backend: &dyn Backend) {
    let name = LedgerName::key("agent", "pay-1");
    let now = 1_000_000;
    let winners = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for i in 0..8 {
            let store = backend.open().unwrap();
            let (name, winners) = (&name, &winners);
            scope.spawn(move || {
                let claimed = store
                    .claim_ledger(name, &running(&format!("run-{i}"), now), now)
                    .unwrap();
                if claimed.is_none() {
                    winners.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(winners.load(Ordering::SeqCst), 1);

    let store = backend.open().unwrap();
    let held = store.ledger_entry(&name, now).unwrap().unwrap();
    assert_eq!(held.outcome, None);
    // Only the run that holds it settles it.
    let paid = Outcome::error("declined", false);
    store
        .settle_ledger(&name, "not-the-run", Some(&paid), now + 5_000)
        .unwrap();
    assert_eq!(
        store.ledger_entry(&name, now).unwrap().unwrap().outcome,
        None
    );
    store
        .settle_ledger(&name, &held.run_id, Some(&paid), now + 5_000)
        .unwrap();
    let settled = backend
        .open()
        .unwrap()
        .ledger_entry(&name, now)
        .unwrap()
        .unwrap();
    assert_eq!(settled.outcome, Some(paid));
    assert_eq!(
        store.ledger_of_run(&held.run_id).unwrap(),
        vec![(name.clone(), settled)]
    );

    // Expired, it is gone, and the name may be claimed again.
    assert!(store.ledger_entry(&name, now + 5_000).unwrap().is_none());
    let again = running("run-late", now + 6_000);
    assert!(
        store
            .claim_ledger(&name, &again, now + 6_000)
            .unwrap()
            .is_none()
    );
    // Settled with nothing (its call never ran), it is forgotten.
    store.settle_ledger(&name, "run-late", None, 0).unwrap();
    assert!(store.ledger_entry(&name, now + 6_000).unwrap().is_none());
}

pub(super) fn an_intent_and_its_key_are_written_together_and_settled_with_the_completion(
    backend: &dyn Backend,
) {
    let store = backend.open().unwrap();
    let name = LedgerName::key("agent", "pay-2");
    let now = 2_000_000;
    let intent = entry(RecordKind::Intent, "r-k", "s", "pay");
    let held = store
        .append_claiming(intent, &name, &running("r-k", now), now)
        .unwrap();
    assert_eq!(held, None);
    // Another run under the key is refused, and its intent is not written.
    let other = entry(RecordKind::Intent, "r-other", "s", "pay");
    let held = backend
        .open()
        .unwrap()
        .append_claiming(other, &name, &running("r-other", now), now)
        .unwrap();
    assert_eq!(held.map(|h| h.run_id).as_deref(), Some("r-k"));
    let pending: Vec<String> = store
        .pending()
        .unwrap()
        .into_iter()
        .map(|r| r.entry.run_id)
        .collect();
    assert_eq!(pending, ["r-k"]);

    let declined = Outcome::error("declined", false);
    let settle = toolgate::store::Settle {
        name: name.clone(),
        outcome: declined.clone(),
        expires_ms: now + 5_000,
    };
    let completion = entry(RecordKind::Completion, "r-k", "s", "pay");
    store
        .complete_settling("s", &[], None, completion, &settle)
        .unwrap();
    assert!(store.pending().unwrap().is_empty());
    let settled = store.ledger_entry(&name, now).unwrap().unwrap();
    assert_eq!(settled.outcome, Some(declined));
    assert_eq!(settled.expires_ms, now + 5_000);
}
