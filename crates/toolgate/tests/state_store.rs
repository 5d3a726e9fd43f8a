//! The conversation state store, as a specification: what a tool call's state
//! effects can rely on, for the in-memory store and the SQLite file alike.

use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;
use serde_json::{Map, Value, json};
use toolgate::{SqliteStore, store::MemoryStore, store::StateStore, store::StoreError};

/// Runs `check` against every store: in memory, SQLite in memory and a SQLite file.
fn for_every_store(check: impl Fn(&str, &dyn StateStore)) {
    let dir = tempfile::tempdir().unwrap();
    check("memory", &MemoryStore::new());
    check("sqlite in memory", &SqliteStore::in_memory().unwrap());
    let file = SqliteStore::open(dir.path().join("state.db")).unwrap();
    check("sqlite file", &file);
}

fn writes(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), value.clone()))
        .collect()
}

fn map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("expected an object, got {other}"),
    }
}

fn keys(state: &Map<String, Value>) -> Vec<&str> {
    state.keys().map(String::as_str).collect()
}

/// A second, raw connection to the store's file, as `sqlite3` or another process has.
fn raw(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn
}

#[test]
fn values_written_in_one_session_are_invisible_in_another() {
    for_every_store(|name, store| {
        store
            .apply("alice", &writes(&[("cart", json!(["A-1001"]))]))
            .unwrap();

        assert_eq!(
            store.get("alice", "cart").unwrap(),
            Some(json!(["A-1001"])),
            "{name}"
        );
        assert_eq!(store.get("bob", "cart").unwrap(), None, "{name}");
        assert!(store.load("bob").unwrap().is_empty(), "{name}");
    });
}

#[test]
fn reset_clears_one_session_only() {
    for_every_store(|name, store| {
        store
            .apply("alice", &writes(&[("a", json!(1)), ("b", json!(2))]))
            .unwrap();
        store.apply("bob", &writes(&[("a", json!(3))])).unwrap();

        store.reset("alice").unwrap();

        assert!(store.load("alice").unwrap().is_empty(), "{name}");
        assert_eq!(store.get("alice", "a").unwrap(), None, "{name}");
        assert_eq!(store.load("bob").unwrap(), map(json!({"a": 3})), "{name}");
        store.reset("nobody").unwrap();
    });
}

#[test]
fn a_session_loads_in_key_order_whatever_the_write_order() {
    for_every_store(|name, store| {
        store
            .apply("s", &writes(&[("zeta", json!(1)), ("alpha", json!(2))]))
            .unwrap();
        store
            .apply("s", &writes(&[("mu", json!(3)), ("zeta", json!(4))]))
            .unwrap();

        let state = store.load("s").unwrap();
        assert_eq!(keys(&state), ["alpha", "mu", "zeta"], "{name}");
        assert_eq!(state["zeta"], json!(4), "{name}");
    });
}

#[test]
fn a_batch_that_writes_a_key_twice_keeps_the_last_value() {
    for_every_store(|name, store| {
        store
            .apply("s", &writes(&[("k", json!("first")), ("k", json!("last"))]))
            .unwrap();

        assert_eq!(store.get("s", "k").unwrap(), Some(json!("last")), "{name}");
    });
}

#[test]
fn an_empty_batch_changes_nothing() {
    for_every_store(|name, store| {
        store.apply("s", &writes(&[("k", json!(1))])).unwrap();
        store.apply("s", &[]).unwrap();
        store.apply("t", &[]).unwrap();

        assert_eq!(store.load("s").unwrap(), map(json!({"k": 1})), "{name}");
        assert!(store.load("t").unwrap().is_empty(), "{name}");
    });
}

#[test]
fn every_kind_of_json_value_comes_back_as_written() {
    let values = json!({
        "null": null,
        "bool": true,
        "int": i64::MIN,
        "uint": u64::MAX,
        "float": 0.1,
        "string": "naïve 🚀 \"quoted\" \n newline",
        "empty": "",
        "array": [1, "two", [3], {"four": 4}],
        "object": {"z": 1, "a": {"nested": [null]}},
    });
    for_every_store(|name, store| {
        let batch: Vec<(String, Value)> = map(values.clone()).into_iter().collect();
        store.apply("s", &batch).unwrap();

        for (key, value) in &batch {
            assert_eq!(
                store.get("s", key).unwrap().as_ref(),
                Some(value),
                "{name}: {key}"
            );
        }
        assert_eq!(store.load("s").unwrap().len(), batch.len(), "{name}");
    });
}

#[test]
fn state_written_by_one_process_is_read_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/state/dir/state.db");

    let first = SqliteStore::open(&path).unwrap();
    first
        .apply(
            "default",
            &writes(&[("step", json!(2)), ("order", json!({"id": "A-1"}))]),
        )
        .unwrap();
    drop(first);

    let next = SqliteStore::open(&path).unwrap();
    assert_eq!(next.path(), Some(path.as_path()));
    assert_eq!(
        next.load("default").unwrap(),
        map(json!({"order": {"id": "A-1"}, "step": 2}))
    );
}

#[test]
fn open_in_dir_uses_state_db_inside_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join(".toolgate");

    let store = SqliteStore::open_in_dir(&state_dir).unwrap();

    assert_eq!(
        store.path(),
        Some(state_dir.join(toolgate::store::STATE_DB_FILE).as_path())
    );
    assert!(state_dir.join("state.db").is_file());
}

#[test]
fn a_new_file_records_its_schema_version_and_runs_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let _store = SqliteStore::open(&path).unwrap();

    let conn = raw(&path);
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(version, 17);
    assert_eq!(mode, "wal");
}

#[test]
fn a_failed_transaction_leaves_the_old_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).unwrap();
    store
        .apply("s", &writes(&[("a", json!(1)), ("b", json!(2))]))
        .unwrap();
    // A trigger makes SQLite itself refuse the third row of the next batch, after
    // the first two rows were already written inside the transaction.
    raw(&path)
        .execute_batch(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON state WHEN NEW.key = 'poison'
             BEGIN SELECT RAISE(ABORT, 'simulated failure in the middle of a batch'); END;",
        )
        .unwrap();

    let batch = writes(&[
        ("a", json!(10)),
        ("c", json!(3)),
        ("poison", json!(0)),
        ("b", json!(20)),
    ]);
    let err = store.apply("s", &batch).unwrap_err();

    assert!(matches!(err, StoreError::Sqlite { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("simulated failure in the middle of a batch"),
        "{err}"
    );
    assert_eq!(store.load("s").unwrap(), map(json!({"a": 1, "b": 2})));
    assert_eq!(
        SqliteStore::open(&path).unwrap().load("s").unwrap(),
        map(json!({"a": 1, "b": 2})),
        "another process sees the old state too"
    );

    // The store is still usable once the cause is gone.
    raw(&path)
        .execute_batch("DROP TRIGGER refuse_poison;")
        .unwrap();
    store.apply("s", &batch).unwrap();
    assert_eq!(
        store.load("s").unwrap(),
        map(json!({"a": 10, "b": 20, "c": 3, "poison": 0}))
    );
}

#[test]
fn a_writer_that_dies_before_committing_leaves_the_old_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).unwrap();
    store.apply("s", &writes(&[("a", json!(1))])).unwrap();

    let mut other = raw(&path);
    let tx = other.transaction().unwrap();
    tx.execute(
        "INSERT INTO state (session, key, value) VALUES ('s', 'a', '99'), ('s', 'b', '2')
         ON CONFLICT (session, key) DO UPDATE SET value = excluded.value",
        [],
    )
    .unwrap();
    assert_eq!(
        store.load("s").unwrap(),
        map(json!({"a": 1})),
        "uncommitted writes are invisible while the writer lives"
    );
    drop(tx);
    drop(other);

    assert_eq!(store.load("s").unwrap(), map(json!({"a": 1})));
    store.apply("s", &writes(&[("b", json!(2))])).unwrap();
    assert_eq!(store.load("s").unwrap(), map(json!({"a": 1, "b": 2})));
}

#[test]
fn a_row_hand_edited_to_invalid_json_gives_a_clear_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).unwrap();
    store
        .apply(
            "default",
            &writes(&[("good", json!(1)), ("cart", json!([]))]),
        )
        .unwrap();
    // `ignore_check_constraints` gets past the store's own guard, as an old file
    // or a careless tool would.
    raw(&path)
        .execute_batch(
            "PRAGMA ignore_check_constraints = ON;
             UPDATE state SET value = '[\"A-1001\",' WHERE key = 'cart';",
        )
        .unwrap();

    for err in [
        store.get("default", "cart").unwrap_err(),
        store.load("default").unwrap_err(),
    ] {
        let StoreError::CorruptValue { session, key, .. } = &err else {
            panic!("expected CorruptValue, got {err:?}");
        };
        assert_eq!((session.as_str(), key.as_str()), ("default", "cart"));
        let message = err.to_string();
        assert!(message.contains("key `cart`"), "{message}");
        assert!(message.contains("session `default`"), "{message}");
        assert!(message.contains("not valid JSON"), "{message}");
        assert!(message.contains(&path.display().to_string()), "{message}");
    }
    assert_eq!(store.get("default", "good").unwrap(), Some(json!(1)));

    store.reset("default").unwrap();
    assert!(store.load("default").unwrap().is_empty());
}

#[test]
fn a_hand_edit_that_is_not_json_is_refused_by_the_file_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).unwrap();
    store.apply("s", &writes(&[("k", json!("v"))])).unwrap();

    let refused = raw(&path).execute("UPDATE state SET value = 'not json' WHERE key = 'k'", []);

    assert!(refused.is_err());
    assert_eq!(store.get("s", "k").unwrap(), Some(json!("v")));
}

#[test]
fn two_stores_on_the_same_file_see_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let one = SqliteStore::open(&path).unwrap();
    let two = SqliteStore::open(&path).unwrap();

    one.apply("s", &writes(&[("from_one", json!(1))])).unwrap();
    assert_eq!(two.get("s", "from_one").unwrap(), Some(json!(1)));

    two.apply(
        "s",
        &writes(&[("from_two", json!(2)), ("from_one", json!(11))]),
    )
    .unwrap();
    assert_eq!(
        one.load("s").unwrap(),
        map(json!({"from_one": 11, "from_two": 2}))
    );

    one.reset("s").unwrap();
    assert!(two.load("s").unwrap().is_empty());
}

#[test]
fn two_writers_on_the_same_file_wait_for_each_other_rather_than_fail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    SqliteStore::open(&path).unwrap();

    let writers: Vec<_> = ["one", "two"]
        .into_iter()
        .map(|writer| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = SqliteStore::open(&path).unwrap();
                for i in 0..50 {
                    let batch = writes(&[
                        (&format!("{writer}-{i}"), json!(i)),
                        ("last", json!(writer)),
                    ]);
                    store.apply("s", &batch).unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }

    let state = SqliteStore::open(&path).unwrap().load("s").unwrap();
    assert_eq!(state.len(), 101);
}

#[test]
fn processes_opening_a_new_file_at_the_same_moment_all_open_it() {
    // Two gateways started together on one state directory both create the schema
    // and switch the file to WAL: neither may fail for the other's lock.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let start = Arc::new(std::sync::Barrier::new(3));
        let openers: Vec<_> = (0..3)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    SqliteStore::open(&path).map(drop)
                })
            })
            .collect();
        for opener in openers {
            if let Err(e) = opener.join().unwrap() {
                panic!("round {round}: {e}");
            }
        }
    }
}

#[test]
fn a_store_is_shared_across_threads_as_arc_dyn_state_store() {
    let stores: Vec<Arc<dyn StateStore>> = vec![
        Arc::new(MemoryStore::new()),
        Arc::new(SqliteStore::in_memory().unwrap()),
    ];
    for store in stores {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    for i in 0..25 {
                        store
                            .apply(
                                &format!("session-{t}"),
                                &writes(&[(&format!("k{i:02}"), json!(i))]),
                            )
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        for t in 0..4 {
            assert_eq!(store.load(&format!("session-{t}")).unwrap().len(), 25);
        }
    }
}

#[test]
fn a_file_from_a_newer_toolgate_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteStore::open(&path).unwrap());
    raw(&path).pragma_update(None, "user_version", 99).unwrap();

    let err = SqliteStore::open(&path).unwrap_err();

    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                found: 99,
                supported: 17,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("upgrade toolgate"), "{err}");
}

#[test]
fn a_state_dir_that_cannot_be_created_gives_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();

    let err = SqliteStore::open(file.join("state.db")).unwrap_err();

    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("not-a-dir"), "{message}");
    assert!(message.contains("--state-dir"), "{message}");
}

#[test]
fn a_file_that_is_not_a_database_gives_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(
        &path,
        "these are not the bytes of a SQLite database, just text",
    )
    .unwrap();

    let err = SqliteStore::open(&path).unwrap_err();

    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("cannot open state store at"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
}

#[test]
fn the_default_state_dir_is_dot_toolgate_beside_the_spec_file() {
    let spec = Path::new("/srv/shop/tools.yaml");

    assert_eq!(
        toolgate::store::default_state_dir(spec),
        Path::new("/srv/shop/.toolgate")
    );
    assert_eq!(
        toolgate::store::resolve_state_dir(Some(Path::new("/var/lib/tg")), spec),
        Path::new("/var/lib/tg")
    );
}

#[cfg(unix)]
#[test]
fn the_database_and_its_wal_and_shm_files_are_readable_by_their_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("new/state");
    let store = SqliteStore::open_in_dir(&state).unwrap();
    store
        .apply("s", &[("k".to_owned(), serde_json::json!(1))])
        .unwrap();
    let mode = |name: &str| {
        let meta = std::fs::metadata(state.join(name)).unwrap();
        meta.permissions().mode() & 0o777
    };
    // Open, so the write-ahead log and its index are there.
    for name in ["state.db", "state.db-wal", "state.db-shm"] {
        assert_eq!(mode(name), 0o600, "{name}");
    }
    let dir_mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode(&state), 0o700);
    assert_eq!(dir_mode(state.parent().unwrap()), 0o700);
}

#[cfg(unix)]
#[test]
fn a_link_in_place_of_the_database_or_its_log_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["state.db", "state.db-wal"] {
        let state = dir.path().join(name.replace('.', "_"));
        std::fs::create_dir(&state).unwrap();
        let target = dir.path().join(format!("target-{name}"));
        std::os::unix::fs::symlink(&target, state.join(name)).unwrap();
        let error = SqliteStore::open_in_dir(&state).unwrap_err();
        assert!(
            matches!(&error, StoreError::Symlink { path, .. } if path.ends_with(name)),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains(toolgate::store::ALLOW_SYMLINK_ENV),
            "{message}"
        );
        assert!(!target.exists());
    }
}
