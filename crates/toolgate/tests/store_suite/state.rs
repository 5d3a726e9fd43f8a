//! Conversation state, call histories, and admission (`once`, turns): the `StateStore` and `CallHistory` promises.

use super::*;

pub(super) fn state_is_kept_per_session_and_a_batch_lands_whole(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    store
        .apply(
            "a",
            &[
                ("cart".into(), json!(["A-1"])),
                ("step".into(), json!(1)),
                ("step".into(), json!(2)),
            ],
        )
        .unwrap();
    let other = backend.open().unwrap();
    assert_eq!(
        StateStore::get(&*other, "a", "step").unwrap(),
        Some(json!(2))
    );
    assert_eq!(StateStore::get(&*other, "b", "step").unwrap(), None);
    let mut expected = Map::new();
    expected.insert("cart".into(), json!(["A-1"]));
    expected.insert("step".into(), json!(2));
    assert_eq!(other.load("a").unwrap(), expected);
    other.reset("a").unwrap();
    assert!(store.load("a").unwrap().is_empty());
}

pub(super) fn call_histories_keep_sessions_apart_in_order(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    store.record_call("a", "verify", false, "t1").unwrap();
    store.record_call("a", "verify", true, "t2").unwrap();
    store.record_call("b", "lookup", true, "t3").unwrap();
    let calls: Vec<(u64, String, bool)> = store
        .calls("a")
        .unwrap()
        .into_iter()
        .map(|c| (c.seq, c.tool, c.ok))
        .collect();
    assert_eq!(
        calls,
        [(1, "verify".into(), false), (2, "verify".into(), true)]
    );
    assert_eq!(store.calls("b").unwrap()[0].seq, 1);
    let from_second: Vec<u64> = store
        .calls_from("a", 2)
        .unwrap()
        .iter()
        .map(|c| c.seq)
        .collect();
    assert_eq!(from_second, [2], "calls_from starts at the call it names");
    assert!(store.calls_from("a", 3).unwrap().is_empty());
    assert_eq!(store.calls_from("a", 0).unwrap().len(), 2);
    store.forget_calls("a").unwrap();
    assert!(store.calls("a").unwrap().is_empty());
    assert_eq!(store.calls("b").unwrap().len(), 1);
}

pub(super) fn once_admits_exactly_one_of_many_concurrent_calls_across_handles(
    backend: &dyn Backend,
) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    let admitted = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..16)
        .map(|i| {
            let store = handles[i % 2].clone();
            let admitted = admitted.clone();
            std::thread::spawn(move || {
                let run = format!("r{i}");
                let mut once = |_: &Map<String, Value>, calls: &[RecordedCall]| {
                    calls.iter().all(|c| c.tool != "charge")
                };
                // A busy turn is tried again, as the gate does.
                loop {
                    let intent = entry(RecordKind::Intent, &run, "s", "charge");
                    match store
                        .admit("s", intent, Duration::from_secs(60), &mut once)
                        .unwrap()
                    {
                        Admission::Admitted(_) => {
                            admitted.fetch_add(1, Ordering::SeqCst);
                            let done = entry(RecordKind::Completion, &run, "s", "charge");
                            store.complete_turn("s", &[], done).unwrap();
                            return;
                        }
                        Admission::Busy => std::thread::sleep(Duration::from_millis(5)),
                        Admission::Refused => return,
                        other => panic!("{other:?}"),
                    }
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    assert_eq!(admitted.load(Ordering::SeqCst), 1);
    assert_eq!(handles[0].calls("s").unwrap().len(), 1);
    assert_eq!(
        handles[1].tail(100).unwrap().len(),
        2,
        "one intent, one completion"
    );
}

pub(super) fn a_turn_is_held_from_admission_to_completion(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let long = Duration::from_secs(60);
    let checks = std::cell::Cell::new(0);
    let mut once = |_: &Map<String, Value>, calls: &[RecordedCall]| {
        checks.set(checks.get() + 1);
        calls.iter().all(|c| c.tool != "charge")
    };
    let first = store.admit(
        "s",
        entry(RecordKind::Intent, "r1", "s", "charge"),
        long,
        &mut once,
    );
    assert!(matches!(first, Ok(Admission::Admitted(_))), "{first:?}");
    let second = store.admit(
        "s",
        entry(RecordKind::Intent, "r2", "s", "charge"),
        long,
        &mut once,
    );
    assert_eq!(second.unwrap(), Admission::Busy);
    store
        .complete_turn("s", &[], entry(RecordKind::Completion, "r1", "s", "charge"))
        .unwrap();
    let third = store.admit(
        "s",
        entry(RecordKind::Intent, "r3", "s", "charge"),
        long,
        &mut once,
    );
    assert_eq!(third.unwrap(), Admission::Refused);
    assert_eq!(checks.get(), 2, "a busy turn is not even checked");
    // A write whose holder died waits for the operator.
    let short = Duration::from_millis(20);
    let died = store.admit(
        "t",
        entry(RecordKind::Intent, "r4", "t", "charge"),
        short,
        &mut once,
    );
    let Ok(Admission::Admitted(intent)) = died else {
        panic!("{died:?}")
    };
    std::thread::sleep(Duration::from_millis(40));
    let next = store.admit(
        "t",
        entry(RecordKind::Intent, "r5", "t", "charge"),
        long,
        &mut once,
    );
    assert_eq!(
        next.unwrap(),
        Admission::Abandoned {
            run_id: "r4".into(),
            tool: "charge".into()
        }
    );
    store
        .resolve_run(&intent, entry(RecordKind::Completion, "r4", "t", "charge"))
        .unwrap();
    let after = store.admit(
        "t",
        entry(RecordKind::Intent, "r6", "t", "charge"),
        long,
        &mut once,
    );
    assert_eq!(after.unwrap(), Admission::Refused, "once: it ran");
    assert!(store.verify().unwrap().is_ok());
}
