//! Background tasks: written, finished, and dropped after their TTL (`TaskStore`).

use super::*;

fn task(id: &str, created_ms: u64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        session: "s".into(),
        principal: "agent".into(),
        tool: "export".into(),
        call_id: "c1".into(),
        run_id: format!("run-{id}"),
        status: TaskStatus::Working,
        created_at: String::new(),
        updated_at: String::new(),
        ttl_ms: 1_000,
        outcome: None,
        created_ms,
        updated_ms: created_ms,
        owner: "test".into(),
        lease_until_ms: created_ms + 60_000,
        cancel_requested: false,
    }
}

pub(super) fn tasks_are_written_finished_and_dropped_after_their_ttl(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    store.create_task(&task("task-1", 1_000)).unwrap();
    store.create_task(&task("task-2", 2_000)).unwrap();
    let done = Outcome::error("it broke", false);
    assert!(
        store
            .finish_task("task-1", TaskStatus::Failed, &done, 3_000)
            .unwrap()
    );
    assert!(
        !store
            .finish_task("task-1", TaskStatus::Completed, &done, 3_500)
            .unwrap()
    );
    store.request_task_cancel("task-2").unwrap();
    let other = backend.open().unwrap();
    let one = other.task("task-1").unwrap().unwrap();
    assert_eq!(one.status, TaskStatus::Failed);
    assert_eq!(one.outcome, Some(done));
    assert!(other.task("task-2").unwrap().unwrap().cancel_requested);
    assert!(other.interrupt_task("task-2", 3_000).unwrap());
    let ids: Vec<String> = other
        .all_tasks()
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, ["task-1", "task-2"]);
    assert_eq!(other.drop_expired_tasks(3_999).unwrap(), 0);
    assert_eq!(other.drop_expired_tasks(4_000).unwrap(), 2);
    assert!(store.task("task-1").unwrap().is_none());
}
