//! Human approvals: an asked call waits for a person, runs once when approved, hears
//! the reason when denied, and grants let calls through until they expire.
//!
//! Each test runs against the in-memory store and a real SQLite file. With SQLite
//! the person answers through a second store opened on the same file, as
//! `toolgate approvals approve` does from another process.

use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tempfile::TempDir;
use toolgate::{
    SqliteStore, store::ApprovalRequest, store::ApprovalStatus, store::ApprovalStore, store::Grant,
    store::GrantReach, store::GrantScope, store::MemoryApprovals, store::Resolution,
    store::StoreError,
};

/// A store the gate resolves calls against, and the one a person answers through.
struct Fixture {
    name: &'static str,
    gate: Arc<dyn ApprovalStore>,
    person: Arc<dyn ApprovalStore>,
    _dir: Option<TempDir>,
}

fn fixtures() -> Vec<Fixture> {
    let memory: Arc<dyn ApprovalStore> = Arc::new(MemoryApprovals::new());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.db");
    vec![
        Fixture {
            name: "memory",
            gate: memory.clone(),
            person: memory,
            _dir: None,
        },
        Fixture {
            name: "sqlite",
            gate: Arc::new(SqliteStore::open(&file).unwrap()),
            person: Arc::new(SqliteStore::open(&file).unwrap()),
            _dir: Some(dir),
        },
    ]
}

/// A fixed clock: `secs` seconds after 2023-11-14T22:13:20Z.
fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
}

fn call(session: &str, tool: &str, arguments: Value) -> ApprovalRequest {
    ApprovalRequest::new(
        session,
        tool,
        arguments,
        "support-agent",
        "write tools need a person",
    )
}

fn refund(order: &str) -> ApprovalRequest {
    call("default", "refund", json!({"order": order, "amount": 20}))
}

fn opened(resolution: Resolution) -> String {
    match resolution {
        Resolution::Pending { id, created: true } => id,
        other => panic!("expected a new pending request, got {other:?}"),
    }
}

#[test]
fn an_asked_call_opens_one_pending_request_however_often_it_is_resubmitted() {
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        assert!(
            id.starts_with("ap-") && id.len() == 11,
            "{}: id {id} is not ap- and 8 hex digits",
            f.name
        );
        assert!(
            id[3..].chars().all(|c| c.is_ascii_hexdigit()),
            "{}: {id}",
            f.name
        );

        // The same call, even with its keys in another order, reuses the request.
        let reordered = call("default", "refund", json!({"amount": 20, "order": "A-1"}));
        for (n, request) in [refund("A-1"), reordered, refund("A-1")].iter().enumerate() {
            assert_eq!(
                f.gate.resolve(request, at(n as u64 + 1)).unwrap(),
                Resolution::Pending {
                    id: id.clone(),
                    created: false
                },
                "{}",
                f.name
            );
        }

        let pending = f.person.list(false).unwrap();
        assert_eq!(pending.len(), 1, "{}: {pending:?}", f.name);
        let request = &pending[0];
        assert_eq!(request.id, id);
        assert_eq!(request.session, "default");
        assert_eq!(request.tool, "refund");
        assert_eq!(request.arguments, json!({"order": "A-1", "amount": 20}));
        assert_eq!(request.args_hash, refund("A-1").args_hash);
        assert_eq!(request.principal, "support-agent");
        assert_eq!(request.reason, "write tools need a person");
        assert_eq!(request.status, ApprovalStatus::Pending);
        assert_eq!(request.answer, None);
        assert_eq!(request.created_at, "2023-11-14T22:13:20.000Z");
        assert_eq!(request.decided_at, None);

        // Other arguments, and the same call in another conversation, ask separately.
        let other_order = opened(f.gate.resolve(&refund("A-2"), at(5)).unwrap());
        let other_session = opened(
            f.gate
                .resolve(
                    &call(
                        "night-shift",
                        "refund",
                        json!({"order": "A-1", "amount": 20}),
                    ),
                    at(6),
                )
                .unwrap(),
        );
        assert_ne!(other_order, id);
        assert_ne!(other_session, id);
        let ids: Vec<String> = f
            .person
            .list(false)
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        assert_eq!(
            ids,
            [id, other_order, other_session],
            "{}: oldest first",
            f.name
        );
    }
}

#[test]
fn an_approved_call_runs_exactly_once() {
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        let approved = f.person.approve(&id, None, at(60)).unwrap();
        assert_eq!(approved.status, ApprovalStatus::Approved);
        assert_eq!(
            approved.decided_at.as_deref(),
            Some("2023-11-14T22:14:20.000Z")
        );
        assert!(
            f.person.list(false).unwrap().is_empty(),
            "{}: approved is not pending",
            f.name
        );

        // Another call of the same tool is not covered by a one-off approval.
        opened(f.gate.resolve(&refund("A-2"), at(61)).unwrap());

        assert_eq!(
            f.gate.resolve(&refund("A-1"), at(62)).unwrap(),
            Resolution::Granted { by: id.clone() },
            "{}",
            f.name
        );
        assert_eq!(
            f.person.get(&id).unwrap().unwrap().status,
            ApprovalStatus::Consumed,
            "{}",
            f.name
        );

        // Submitting it again asks again, with a new request.
        let again = opened(f.gate.resolve(&refund("A-1"), at(63)).unwrap());
        assert_ne!(again, id, "{}", f.name);
    }
}

#[test]
fn a_denied_call_reports_the_humans_reason_once() {
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        let denied = f
            .person
            .deny(&id, Some("refunds over 10 need a manager"), at(30))
            .unwrap();
        assert_eq!(denied.status, ApprovalStatus::Denied);
        assert_eq!(
            denied.answer.as_deref(),
            Some("refunds over 10 need a manager")
        );

        assert_eq!(
            f.gate.resolve(&refund("A-1"), at(31)).unwrap(),
            Resolution::Denied {
                id: id.clone(),
                reason: "refunds over 10 need a manager".into()
            },
            "{}",
            f.name
        );
        let stored = f.person.get(&id).unwrap().unwrap();
        assert_eq!(stored.status, ApprovalStatus::Consumed, "{}", f.name);
        assert_eq!(
            stored.answer.as_deref(),
            Some("refunds over 10 need a manager")
        );

        // The denial was reported; the next identical call asks a person again.
        let again = opened(f.gate.resolve(&refund("A-1"), at(32)).unwrap());
        assert_ne!(again, id);

        // A denial without a reason still tells the model a person said no.
        f.person.deny(&again, None, at(33)).unwrap();
        match f.gate.resolve(&refund("A-1"), at(34)).unwrap() {
            Resolution::Denied { id, reason } => {
                assert_eq!(id, again);
                assert!(
                    reason.contains("without giving a reason"),
                    "{}: {reason}",
                    f.name
                );
            }
            other => panic!("{}: expected a denial, got {other:?}", f.name),
        }
    }
}

#[test]
fn a_tool_grant_lets_every_call_of_that_tool_by_that_caller_through_until_it_expires() {
    let hour = Grant {
        ttl: Duration::from_secs(3600),
        scope: GrantScope::Tool,
        reach: GrantReach::EveryConversation,
    };
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        f.person.approve(&id, Some(hour), at(100)).unwrap();

        let granted =
            |request: &ApprovalRequest, secs| match f.gate.resolve(request, at(secs)).unwrap() {
                Resolution::Granted { by } => by,
                other => panic!("{}: expected a grant at +{secs}s, got {other:?}", f.name),
            };
        let by = granted(&refund("A-1"), 101);
        assert!(by.starts_with("grant "), "{}: {by}", f.name);
        // The approved call ran under the grant, so its approval is used up.
        assert_eq!(
            f.person.get(&id).unwrap().unwrap().status,
            ApprovalStatus::Consumed
        );

        assert_eq!(
            granted(&refund("A-1"), 200),
            by,
            "{}: again and again",
            f.name
        );
        assert_eq!(
            granted(&refund("B-7"), 300),
            by,
            "{}: any arguments",
            f.name
        );
        let elsewhere = call("night-shift", "refund", json!({"order": "C-3"}));
        assert_eq!(granted(&elsewhere, 400), by, "{}: any conversation", f.name);
        assert_eq!(
            granted(&refund("A-1"), 3699),
            by,
            "{}: up to the last second",
            f.name
        );

        // Another tool still asks.
        opened(
            f.gate
                .resolve(&call("default", "delete_account", json!({})), at(500))
                .unwrap(),
        );

        // At expiry the tool asks again, for the call approved earlier too.
        opened(f.gate.resolve(&refund("A-1"), at(3700)).unwrap());
        opened(f.gate.resolve(&refund("B-7"), at(3701)).unwrap());
    }
}

#[test]
fn a_grant_covers_only_the_caller_it_answered_and_only_its_conversation_unless_widened() {
    let hour = Grant::new(Duration::from_secs(3600), GrantScope::Tool);
    let by = |principal: &str, session: &str| {
        ApprovalRequest::new(
            session,
            "refund",
            json!({"order": "B-2"}),
            principal,
            "asks",
        )
    };
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        f.person.approve(&id, Some(hour), at(1)).unwrap();

        let Resolution::Granted { by: what } = f
            .gate
            .resolve(&by("support-agent", "default"), at(2))
            .unwrap()
        else {
            panic!("{}: the caller in its conversation is covered", f.name)
        };
        assert!(
            what.contains("in this conversation") && what.contains(&format!("answering {id}")),
            "{}: the audit names the grant's scope and the approval: {what}",
            f.name
        );
        // Not the approver, not any other principal, not another conversation.
        for (principal, session) in [
            ("lead", "default"),
            ("other-agent", "default"),
            ("support-agent", "night-shift"),
        ] {
            opened(f.gate.resolve(&by(principal, session), at(3)).unwrap());
        }

        let widened = Grant {
            reach: GrantReach::EveryConversation,
            ..hour
        };
        let id = opened(
            f.gate
                .resolve(&call("default", "delete_account", json!({})), at(10))
                .unwrap(),
        );
        f.person.approve(&id, Some(widened), at(11)).unwrap();
        let elsewhere = call("night-shift", "delete_account", json!({}));
        assert!(
            matches!(f.gate.resolve(&elsewhere, at(12)).unwrap(), Resolution::Granted { by } if by.contains("every conversation")),
            "{}: widened, the caller's other conversations are covered",
            f.name
        );
        let someone_else =
            ApprovalRequest::new("night-shift", "delete_account", json!({}), "lead", "asks");
        opened(f.gate.resolve(&someone_else, at(13)).unwrap());
    }
}

#[test]
fn an_approval_of_one_callers_call_does_not_let_another_caller_run_it() {
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        f.person.approve(&id, None, at(1)).unwrap();
        let same_call_other_caller = ApprovalRequest::new(
            "default",
            "refund",
            json!({"order": "A-1", "amount": 20}),
            "lead",
            "asks",
        );
        opened(f.gate.resolve(&same_call_other_caller, at(2)).unwrap());
        assert_eq!(
            f.gate.resolve(&refund("A-1"), at(3)).unwrap(),
            Resolution::Granted { by: id },
            "{}: the approved caller still runs it once",
            f.name
        );
    }
}

#[test]
fn a_same_arguments_grant_lets_only_those_arguments_through() {
    let day = Grant::new(Duration::from_secs(86_400), GrantScope::SameArguments);
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        f.person.approve(&id, Some(day), at(10)).unwrap();

        for secs in [11, 1000, 86_409] {
            let reordered = call("default", "refund", json!({"amount": 20, "order": "A-1"}));
            assert!(
                matches!(
                    f.gate.resolve(&reordered, at(secs)).unwrap(),
                    Resolution::Granted { .. }
                ),
                "{}: the same arguments at +{secs}s",
                f.name
            );
        }
        opened(f.gate.resolve(&refund("A-2"), at(20)).unwrap());
        opened(
            f.gate
                .resolve(
                    &call("default", "refund", json!({"order": "A-1", "amount": 2000})),
                    at(21),
                )
                .unwrap(),
        );
        opened(f.gate.resolve(&refund("A-1"), at(86_410)).unwrap());
    }
}

#[test]
fn two_processes_resubmitting_an_approved_call_run_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.db");
    let person = SqliteStore::open(&file).unwrap();
    let processes: Vec<Arc<SqliteStore>> = (0..2)
        .map(|_| Arc::new(SqliteStore::open(&file).unwrap()))
        .collect();

    for round in 0..25 {
        let request = refund(&format!("R-{round}"));
        let id = opened(processes[0].resolve(&request, at(round)).unwrap());
        ApprovalStore::approve(&person, &id, None, at(round)).unwrap();

        let start = Arc::new(Barrier::new(processes.len()));
        let threads: Vec<_> = processes
            .iter()
            .map(|store| {
                let (store, start, request) = (store.clone(), start.clone(), request.clone());
                std::thread::spawn(move || {
                    start.wait();
                    store.resolve(&request, at(round)).unwrap()
                })
            })
            .collect();
        let outcomes: Vec<Resolution> = threads.into_iter().map(|t| t.join().unwrap()).collect();

        let ran: Vec<_> = outcomes
            .iter()
            .filter(|r| matches!(r, Resolution::Granted { .. }))
            .collect();
        assert_eq!(
            ran,
            [&Resolution::Granted { by: id.clone() }],
            "round {round}: {outcomes:?}"
        );
        // The loser found nothing approved and asked again; exactly one new request.
        let reopened: Vec<_> = outcomes
            .iter()
            .filter(|r| matches!(r, Resolution::Pending { created: true, .. }))
            .collect();
        assert_eq!(reopened.len(), 1, "round {round}: {outcomes:?}");
    }
}

#[test]
fn approving_an_unknown_id_suggests_the_closest() {
    for f in fixtures() {
        let Err(error) = f.person.approve("ap-00000000", None, at(0)) else {
            panic!("{}: approving an unknown id succeeded", f.name);
        };
        assert!(
            error.to_string().contains("no request is pending"),
            "{}: {error}",
            f.name
        );

        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        let last = id.chars().last().unwrap();
        let typo = format!(
            "{}{}",
            &id[..id.len() - 1],
            if last == '0' { '1' } else { '0' }
        );
        match f.person.approve(&typo, None, at(1)) {
            Err(error @ StoreError::UnknownApproval { .. }) => {
                let message = error.to_string();
                assert!(
                    message.contains(&format!("there is no approval request `{typo}`")),
                    "{}: {message}",
                    f.name
                );
                assert!(
                    message.contains(&format!("did you mean `{id}`?")),
                    "{}: {message}",
                    f.name
                );
            }
            other => panic!("{}: expected an unknown id, got {other:?}", f.name),
        }
        assert!(matches!(
            f.person.deny(&typo, None, at(1)),
            Err(StoreError::UnknownApproval { .. })
        ));
        assert_eq!(f.person.get(&typo).unwrap(), None);

        // The id may be typed without its prefix, in capitals.
        let bare = id.trim_start_matches("ap-").to_ascii_uppercase();
        assert_eq!(
            f.person.approve(&bare, None, at(2)).unwrap().id,
            id,
            "{}",
            f.name
        );
    }
}

#[test]
fn approving_twice_is_an_error() {
    for f in fixtures() {
        let id = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        f.person.approve(&id, None, at(60)).unwrap();

        let error = f.person.approve(&id, None, at(61)).unwrap_err();
        assert!(matches!(
            error,
            StoreError::ApprovalNotPending {
                status: ApprovalStatus::Approved,
                ..
            }
        ));
        assert_eq!(
            error.to_string(),
            format!(
                "{id} was already approved at 2023-11-14T22:14:20.000Z; nothing to do: the call runs once when it is submitted again"
            ),
            "{}",
            f.name
        );
        let error = f
            .person
            .deny(&id, Some("changed my mind"), at(62))
            .unwrap_err();
        assert!(
            error.to_string().contains("was already approved"),
            "{}: {error}",
            f.name
        );

        // Once the call ran, the request is used up.
        f.gate.resolve(&refund("A-1"), at(63)).unwrap();
        let error = f.person.approve(&id, None, at(64)).unwrap_err();
        assert!(
            error.to_string().contains("was already answered and used"),
            "{}: {error}",
            f.name
        );

        let denied = opened(f.gate.resolve(&refund("A-1"), at(65)).unwrap());
        f.person.deny(&denied, None, at(66)).unwrap();
        let error = f.person.approve(&denied, None, at(67)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("was already denied at 2023-11-14T22:14:26.000Z"),
            "{}: {error}",
            f.name
        );
    }
}

#[test]
fn list_all_shows_answered_requests_oldest_first() {
    for f in fixtures() {
        let first = opened(f.gate.resolve(&refund("A-1"), at(0)).unwrap());
        let second = opened(f.gate.resolve(&refund("A-2"), at(1)).unwrap());
        let third = opened(f.gate.resolve(&refund("A-3"), at(1)).unwrap());
        f.person.approve(&first, None, at(2)).unwrap();
        f.person.deny(&third, Some("no"), at(3)).unwrap();

        let pending: Vec<String> = f
            .person
            .list(false)
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        assert_eq!(
            pending.as_slice(),
            std::slice::from_ref(&second),
            "{}",
            f.name
        );
        let all: Vec<(String, ApprovalStatus)> = f
            .person
            .list(true)
            .unwrap()
            .into_iter()
            .map(|a| (a.id, a.status))
            .collect();
        assert_eq!(
            all,
            [
                (first, ApprovalStatus::Approved),
                (second, ApprovalStatus::Pending),
                (third, ApprovalStatus::Denied)
            ],
            "{}",
            f.name
        );
    }
}

#[test]
fn an_approval_serializes_with_its_status_in_lower_case() {
    let store = MemoryApprovals::new();
    let id = opened(store.resolve(&refund("A-1"), at(0)).unwrap());
    let approval = store.get(&id).unwrap().unwrap();
    let value = serde_json::to_value(&approval).unwrap();
    assert_eq!(value["status"], "pending");
    assert_eq!(value["arguments"], json!({"order": "A-1", "amount": 20}));
    assert_eq!(value["decided_at"], Value::Null);
}
