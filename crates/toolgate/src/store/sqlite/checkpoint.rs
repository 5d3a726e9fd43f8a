//! Checkpoints of the write-ahead log, off the path of every commit.
//!
//! In WAL mode a commit appends pages to the log, and a checkpoint copies them back
//! into the database file and syncs both files. SQLite's own checkpoint runs inside
//! the commit that crosses its threshold, so every thousandth or so commit also
//! waits for two fsyncs, and with it every call waiting for the connection.
//! A store that serves calls checkpoints on a thread of its own instead: the
//! committing connection only tells it how long the log has grown.
//!
//! A passive checkpoint never blocks a writer or a reader, but under steady
//! calls it never catches up with the commits made while it runs, so the log
//! is never started again. So the committer asks for one each time the log has
//! grown by another [`CHECKPOINT_PAGES`] (not after every commit past them,
//! which cost two fsyncs a call), and once the log holds [`RESTART_PAGES`], for
//! one that restarts it: that one waits for the commit in progress and holds
//! new writers off until the readers have moved past the log, a pause every
//! few thousand calls that bounds the log's size.

use std::path::Path;
use std::sync::mpsc::sync_channel;

use rusqlite::Connection;
use rusqlite::wal::CheckpointMode;

/// How many pages the log grows by before a checkpoint starts (SQLite's
/// default threshold).
const CHECKPOINT_PAGES: i32 = 1000;

/// How many pages the log holds before a checkpoint restarts it: 40 MB of
/// 4 KiB pages.
const RESTART_PAGES: i32 = 10 * CHECKPOINT_PAGES;

/// Hands `writer`'s checkpoints to a thread with its own connection to `path`,
/// which ends when `writer` is closed.
pub(super) fn checkpoint_in_background(
    writer: &mut Connection,
    path: &Path,
    busy_timeout: std::time::Duration,
) -> rusqlite::Result<()> {
    let checkpointer = Connection::open(path)?;
    checkpointer.busy_timeout(busy_timeout)?;
    let (wake, woken) = sync_channel::<CheckpointMode>(1);
    let spawned = std::thread::Builder::new()
        .name("toolgate-checkpoint".into())
        .spawn(move || {
            while let Ok(mode) = woken.recv() {
                // A failed checkpoint (another process holds the lock, say) is tried
                // again after the next commits; the log keeps every page meanwhile.
                if let Err(e) = checkpoint(&checkpointer, mode) {
                    tracing::debug!("a checkpoint of the state store did not finish: {e}");
                }
            }
        });
    if let Err(e) = spawned {
        // Without a thread of its own, SQLite checkpoints inside commits, as usual.
        tracing::warn!("the state store checkpoints inside commits: no thread for it ({e})");
        return Ok(());
    }
    // Setting a WAL hook turns SQLite's automatic checkpoints off for this connection.
    let mut next = CHECKPOINT_PAGES;
    writer.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: i32| {
        if pages < next - CHECKPOINT_PAGES {
            // The log started again.
            next = CHECKPOINT_PAGES;
        }
        if pages >= next {
            let mode = if pages >= RESTART_PAGES {
                CheckpointMode::RESTART
            } else {
                CheckpointMode::PASSIVE
            };
            // Full: a checkpoint is waiting already, and the next commit asks
            // again. Disconnected: cannot happen while the hook lives, as the
            // thread ends only when its sender is dropped.
            if wake.try_send(mode).is_ok() {
                next = pages + CHECKPOINT_PAGES;
            }
        }
        Ok(())
    }))
}

/// A checkpoint of `conn`'s database in `mode`.
fn checkpoint(conn: &Connection, mode: CheckpointMode) -> rusqlite::Result<()> {
    // A connection that has not read the database yet does not know it is in WAL
    // mode, and its checkpoint would do nothing; reading the mode opens it.
    conn.pragma_query_value(None, "journal_mode", |row| row.get::<_, String>(0))?;
    conn.wal_checkpoint_v2(None::<&str>, mode)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use crate::{SqliteStore, store::StateStore};

    #[test]
    fn the_log_is_copied_into_the_database_file_while_commits_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open_in_dir(dir.path()).unwrap();
        let db = store.path().unwrap().to_path_buf();
        let size = || std::fs::metadata(&db).map_or(0, |m| m.len());
        let before = size();
        // Each write dirties a page of its own: a new session's row, 2 KiB long.
        let filler = "x".repeat(2048);
        for i in 0..1500 {
            let session = format!("s{i}");
            store
                .apply(&session, &[("note".into(), json!(filler))])
                .unwrap();
        }
        // Without checkpoints every page would stay in the log and the file would
        // not grow; the checkpointer copies them in without a commit waiting for it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while size() < before + 1_000_000 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            size() >= before + 1_000_000,
            "the database file holds {} bytes after 3 MB of commits",
            size()
        );
    }

    #[test]
    fn under_steady_calls_the_log_starts_again_instead_of_growing() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(SqliteStore::open_in_dir(dir.path()).unwrap());
        let db = store.path().unwrap().to_path_buf();
        let text = include_str!("../../../benches/gate_calls.yaml");
        let spec = crate::spec::check(text).spec.unwrap();
        let gate = crate::Gate::from_spec(&spec, "t.yaml", &crate::Catalog::new(), store).unwrap();
        let principal = crate::Principal::operator();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Each call commits its intent and completion, several pages: some
        // 30,000 frames were the log never started again.
        runtime.block_on(async {
            for i in 0..2_000 {
                let call =
                    crate::ToolCall::new(format!("c{i}"), "tag_order", json!({"order_id": "A-1"}));
                assert!(gate.call("s", call, &principal).await.is_ok());
            }
        });
        // The frames in the log now (a passive checkpoint reports them, and
        // never starts the log again itself): at most RESTART_PAGES and the
        // commits a restart waited for.
        let frames: i64 = rusqlite::Connection::open(db)
            .unwrap()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
            .unwrap();
        assert!(
            frames <= 11_000,
            "the log holds {frames} frames after 2,000 calls"
        );
    }
}
