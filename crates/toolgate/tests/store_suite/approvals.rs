//! Approvals: asked once, answered once, used once across handles (`ApprovalStore`).

use super::*;

fn request(session: &str) -> ApprovalRequest {
    ApprovalRequest::new(
        session,
        "refund",
        json!({"order": "A-1"}),
        "agent",
        "write asks",
    )
}

pub(super) fn an_approved_call_runs_once_however_many_handles_race_for_it(backend: &dyn Backend) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    let now = SystemTime::now();
    let Resolution::Pending { id, created: true } = handles[0].resolve(&request("s"), now).unwrap()
    else {
        panic!("a new request")
    };
    handles[1].approve(&id, None, now).unwrap();
    let granted = Arc::new(AtomicUsize::new(0));
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let store = handles[i % 2].clone();
            let granted = granted.clone();
            std::thread::spawn(move || {
                if let Resolution::Granted { .. } = store.resolve(&request("s"), now).unwrap() {
                    granted.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for racer in racers {
        racer.join().unwrap();
    }
    assert_eq!(granted.load(Ordering::SeqCst), 1, "exactly one call ran");
    let all = handles[0].list(true).unwrap();
    assert_eq!(all[0].id, id);
    assert_eq!(all[0].status, toolgate::store::ApprovalStatus::Consumed);
    // The losers opened one new request between them, not fifteen.
    assert_eq!(handles[1].list(false).unwrap().len(), 1);
}

pub(super) fn a_denial_is_reported_once_and_asking_twice_opens_one_request(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let now = SystemTime::now();
    let Resolution::Pending { id, .. } = store.resolve(&request("s"), now).unwrap() else {
        panic!()
    };
    assert_eq!(
        store.resolve(&request("s"), now).unwrap(),
        Resolution::Pending {
            id: id.clone(),
            created: false
        }
    );
    store.deny(&id, Some("not today"), now).unwrap();
    assert!(matches!(
        store.deny(&id, None, now),
        Err(StoreError::ApprovalNotPending { .. })
    ));
    assert_eq!(
        store.resolve(&request("s"), now).unwrap(),
        Resolution::Denied {
            id: id.clone(),
            reason: "not today".into()
        }
    );
    assert!(matches!(
        store.resolve(&request("s"), now).unwrap(),
        Resolution::Pending { created: true, .. }
    ));
    let unknown = store.approve("ap-00000000", None, now).unwrap_err();
    assert!(
        matches!(unknown, StoreError::UnknownApproval { .. }),
        "{unknown}"
    );
    // A grant widened to every conversation covers the caller's, and no one else's.
    let Resolution::Pending { id, .. } = store.resolve(&request("t"), now).unwrap() else {
        panic!()
    };
    let grant = toolgate::store::Grant {
        ttl: Duration::from_secs(60),
        scope: toolgate::store::GrantScope::Tool,
        reach: toolgate::store::GrantReach::EveryConversation,
    };
    store.approve(&id, Some(grant), now).unwrap();
    assert!(matches!(
        store.resolve(&request("u"), now).unwrap(),
        Resolution::Granted { by } if by.starts_with("grant ")
    ));
    let mut other = request("u");
    other.principal = "someone-else".into();
    assert!(matches!(
        store.resolve(&other, now).unwrap(),
        Resolution::Pending { created: true, .. }
    ));
    // One given without widening covers the caller in that conversation only.
    let mut again = request("v");
    again.principal = "agent-2".into();
    let Resolution::Pending { id, .. } = store.resolve(&again, now).unwrap() else {
        panic!()
    };
    let here = toolgate::store::Grant::new(
        Duration::from_secs(60),
        toolgate::store::GrantScope::SameArguments,
    );
    store.approve(&id, Some(here), now).unwrap();
    assert!(matches!(
        store.resolve(&again, now).unwrap(),
        Resolution::Granted { .. }
    ));
    again.session = "w".into();
    assert!(matches!(
        store.resolve(&again, now).unwrap(),
        Resolution::Pending { created: true, .. }
    ));
}
