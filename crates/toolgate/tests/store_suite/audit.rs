//! The audit log: one unbroken chain across handles, and intents pending until resolved (`AuditLog`).

use super::*;

pub(super) fn concurrent_writers_on_two_handles_write_one_unbroken_chain(backend: &dyn Backend) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = handles[w % 2].clone();
            std::thread::spawn(move || {
                let mut seqs = Vec::new();
                for i in 0..50 {
                    let run = format!("run-{w}-{i}");
                    let session = format!("s{}", i % 3);
                    let writes = [("last".to_owned(), json!(run))];
                    let completion = entry(RecordKind::Completion, &run, &session, "lookup");
                    if i % 2 == 0 {
                        let intent = entry(RecordKind::Intent, &run, &session, "lookup");
                        seqs.push(store.append(intent).unwrap().seq);
                        seqs.push(
                            store
                                .complete(&session, &writes, None, completion)
                                .unwrap()
                                .seq,
                        );
                    } else {
                        let intent = Some(entry(RecordKind::Intent, &run, &session, "lookup"));
                        let done = store
                            .complete(&session, &writes, intent, completion)
                            .unwrap();
                        seqs.extend([done.seq - 1, done.seq]);
                    }
                }
                seqs
            })
        })
        .collect();
    let seqs: Vec<u64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let distinct: BTreeSet<u64> = seqs.iter().copied().collect();
    assert_eq!(distinct.len(), 800, "every record has a place of its own");
    assert_eq!(distinct.last(), Some(&800));
    let store = &handles[0];
    assert!(store.verify().unwrap().is_ok());
    assert!(store.pending().unwrap().is_empty());
    let tail = store.tail(usize::MAX).unwrap();
    assert_eq!(tail.len(), 800);
    // Each intent comes before its own completion.
    for record in tail
        .iter()
        .filter(|r| r.entry.kind == RecordKind::Completion)
    {
        let intent = tail
            .iter()
            .find(|r| r.entry.kind == RecordKind::Intent && r.entry.run_id == record.entry.run_id)
            .expect("an intent for every completion");
        assert!(intent.seq < record.seq);
    }
    let history: usize = (0..3)
        .map(|s| store.calls(&format!("s{s}")).unwrap().len())
        .sum();
    assert_eq!(history, 400);
}

pub(super) fn an_intent_without_a_completion_is_pending_until_resolved(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let intent = store
        .append(entry(RecordKind::Intent, "r1", "s", "charge"))
        .unwrap();
    store
        .append(entry(RecordKind::Intent, "r2", "s", "charge"))
        .unwrap();
    store
        .complete(
            "s",
            &[],
            None,
            entry(RecordKind::Completion, "r2", "s", "charge"),
        )
        .unwrap();
    let pending = backend.open().unwrap().pending().unwrap();
    assert_eq!(pending, vec![intent.clone()]);
    let mut cancelled = entry(RecordKind::Completion, "r1", "s", "charge");
    cancelled.outcome = Some("cancelled".into());
    store.resolve_run(&intent, cancelled).unwrap();
    assert!(store.pending().unwrap().is_empty());
    assert_eq!(
        store.calls("s").unwrap().len(),
        1,
        "a cancelled call never ran"
    );
    assert!(store.verify().unwrap().is_ok());
}

pub(super) fn a_read_whose_arguments_hold_a_nul_is_recorded_and_verifies(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let mut intent = entry(RecordKind::Intent, "nul-1", "s", "lookup");
    intent.arguments = json!({"q": "a\u{0}b", "k\u{0}": 1});
    let mut completion = entry(RecordKind::Completion, "nul-1", "s", "lookup");
    completion.message = Some("upstream said \u{0}".into());
    let done = store
        .complete("s", &[], Some(intent), completion)
        .expect("a NUL is no reason to lose a read's record");
    assert!(store.verify().unwrap().is_ok());
    let tail = store.tail(2).unwrap();
    assert_eq!(tail[1].seq, done.seq);
    assert_eq!(
        tail[0].entry.arguments,
        json!({"q": "a\\u{0}b", "k\\u{0}": 1})
    );
    assert_eq!(
        tail[1].entry.message.as_deref(),
        Some("upstream said \\u{0}")
    );
}
