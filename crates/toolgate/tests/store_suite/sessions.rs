//! Stored MCP and console sessions, renewed and ended from any handle (`StoredSessions`).

use super::*;

pub(super) fn a_session_written_on_one_handle_is_renewed_and_ended_on_another(
    backend: &dyn Backend,
) {
    let store = backend.open().unwrap();
    let other = backend.open().unwrap();
    let key = SessionKey::of("0c5e8d1f-mcp-session");
    let session = StoredSession {
        kind: SessionKind::Mcp,
        key: key.clone(),
        principal: Some("support".into()),
        data: json!({"opened_by": {"principal": "support", "credential": "key k1"}}),
        created_ms: 1_000,
        expires_ms: 301_000,
        idle_ms: 300_000,
    };
    store.put_session(&session).unwrap();
    assert_eq!(
        other.session(SessionKind::Mcp, &key, 2_000).unwrap(),
        Some(session.clone()),
        "another handle reads it whole"
    );
    assert_eq!(
        other.session(SessionKind::Console, &key, 2_000).unwrap(),
        None,
        "kinds are kept apart"
    );
    assert_eq!(
        other.session(SessionKind::Mcp, &key, 301_000).unwrap(),
        None
    );
    assert!(
        other
            .renew_session(SessionKind::Mcp, &key, 200_000, 500_000)
            .unwrap()
    );
    assert_eq!(
        store
            .session(SessionKind::Mcp, &key, 400_000)
            .unwrap()
            .map(|s| s.expires_ms),
        Some(500_000)
    );
    assert!(
        !store
            .renew_session(SessionKind::Mcp, &key, 500_000, 800_000)
            .unwrap(),
        "an expired session is not renewed"
    );
    // Writing a session drops the expired ones.
    let later = StoredSession {
        kind: SessionKind::Console,
        key: SessionKey::of("cookie"),
        principal: None,
        data: json!({"csrf": "c"}),
        created_ms: 600_000,
        expires_ms: 900_000,
        idle_ms: 300_000,
    };
    other.put_session(&later).unwrap();
    assert!(!store.delete_session(SessionKind::Mcp, &key).unwrap());
    assert!(
        store
            .delete_session(SessionKind::Console, &later.key)
            .unwrap()
    );
    assert_eq!(
        other
            .session(SessionKind::Console, &later.key, 600_001)
            .unwrap(),
        None
    );
}
