//! Paused code-mode programs, taken once across handles (`CodeRunStore`).

use super::*;

fn paused(run_id: &str) -> PausedRun {
    PausedRun {
        run_id: run_id.into(),
        session: "s".into(),
        principal: "agent".into(),
        code_sha256: "ab".repeat(32),
        tool: "refund".into(),
        call_id: "c1".into(),
        arguments: json!({"order": "A-1"}),
        approval_id: "ap-12345678".into(),
        reason: "write asks".into(),
        calls: 2,
        suspensions: 1,
        elapsed_ms: 40,
        printed: "hello\n".into(),
        since_ms: 1_000,
        expires_ms: 100_000,
        snapshot: vec![1, 2, 3, 0, 255],
    }
}

pub(super) fn a_paused_program_is_taken_once_across_handles(backend: &dyn Backend) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    handles[0].pause_run(&paused("code-1")).unwrap();
    let listed = handles[1].paused_runs().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0].snapshot.is_empty(),
        "listings leave snapshots out"
    );
    let taken = Arc::new(AtomicUsize::new(0));
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let store = handles[i % 2].clone();
            let taken = taken.clone();
            std::thread::spawn(move || {
                if let Ok(run) = store.take_run("code-1") {
                    assert_eq!(run, paused("code-1"));
                    taken.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for racer in racers {
        racer.join().unwrap();
    }
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    handles[1].release_run("code-1").unwrap();
    handles[0].take_run("code-1").unwrap();
    handles[0].finish_run("code-1").unwrap();
    assert!(matches!(
        handles[1].take_run("code-1"),
        Err(StoreError::CodeRunNotPaused { status: Some(s), .. }) if s == "finished"
    ));
}
