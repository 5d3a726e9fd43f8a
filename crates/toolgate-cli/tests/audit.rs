//! `toolgate audit anchor` and `audit verify --anchor`, as an operator runs them: the
//! real binary, a real state file, and an intruder with a SQLite connection to it.

use std::path::Path;

use rusqlite::Connection;

use support::toolgate;

mod support;

const SPEC: &str = r#"
tools:
  - name: lookup
    description: Look something up.
    effect: read
"#;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A desk whose log holds `calls` lookups (two records each).
fn desk(calls: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    for _ in 0..calls {
        let out = toolgate(dir.path(), &["call", "lookup", "{}"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    dir
}

fn intruder(dir: &Path) -> Connection {
    Connection::open(dir.join(".toolgate/state.db")).unwrap()
}

/// `audit verify --anchor ANCHOR`: (exit code, stdout, stderr).
fn verify(dir: &Path, anchor: &str) -> (Option<i32>, String, String) {
    let out = toolgate(dir, &["audit", "verify", "--anchor", anchor]);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn an_anchor_file_catches_a_log_cut_short_emptied_or_rewritten() {
    let dir = desk(3);
    let anchors = dir.path().join("anchors.txt");
    let out = toolgate(
        dir.path(),
        &["audit", "anchor", "--append", anchors.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert!(
        printed.starts_with("6:") && printed.len() == 2 + 64 + 1,
        "{printed}"
    );
    let kept = std::fs::read_to_string(&anchors).unwrap();
    assert!(kept.starts_with(printed.trim_end()), "{kept}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&anchors).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let file = anchors.to_str().unwrap();

    // Intact, and still intact after more calls.
    let (code, out, _) = verify(dir.path(), file);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("holds 1 anchor, the latest at record 6"),
        "{out}"
    );
    assert!(
        toolgate(dir.path(), &["call", "lookup", "{}"])
            .status
            .success()
    );
    assert_eq!(verify(dir.path(), file).0, Some(0));
    assert_eq!(
        verify(dir.path(), printed.trim_end()).0,
        Some(0),
        "SEQ:HASH works too"
    );

    // Cut short: the chain alone still verifies, the anchor does not.
    intruder(dir.path())
        .execute("DELETE FROM audit WHERE seq > 4", [])
        .unwrap();
    assert!(toolgate(dir.path(), &["audit", "verify"]).status.success());
    let (code, out, _) = verify(dir.path(), file);
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with(
            "audit log broken at record 5: the log ends at record 4, but an anchor saw record 6"
        ),
        "{out}"
    );

    // Rewritten from the first record on, every record sealed afresh.
    let dir = desk(3);
    let anchor = text(&toolgate(dir.path(), &["audit", "anchor"]).stdout);
    let anchor = anchor.trim_end();
    let conn = intruder(dir.path());
    let records: Vec<String> = conn
        .prepare("SELECT record FROM audit ORDER BY seq")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    conn.execute("DELETE FROM audit", []).unwrap();
    let mut prev = toolgate::audit::GENESIS_HASH.to_owned();
    for record in records {
        let mut record: toolgate::audit::AuditRecord = serde_json::from_str(&record).unwrap();
        record.entry.tool = "forged".into();
        let forged = toolgate::audit::AuditRecord::seal(record.seq, &prev, record.entry);
        // Its columns beside it as toolgate writes them, so that it verifies.
        let e = &forged.entry;
        conn.execute(
            "INSERT INTO audit (seq, record, kind, run_id, prev_hash, hash, session,
                                principal, tool, outcome, time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            rusqlite::params![
                forged.seq as i64,
                forged.to_canonical_json(),
                e.kind.as_str(),
                e.run_id,
                forged.prev_hash,
                forged.hash,
                e.session,
                e.principal,
                e.tool,
                e.outcome,
                e.time,
            ],
        )
        .unwrap();
        prev = forged.hash;
    }
    assert!(toolgate(dir.path(), &["audit", "verify"]).status.success());
    let (code, out, _) = verify(dir.path(), anchor);
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with("audit log broken at record 6: record 6 is not the record anchored there"),
        "{out}"
    );

    // Every record gone, and then the file itself.
    conn.execute("DELETE FROM audit", []).unwrap();
    drop(conn);
    let (code, out, _) = verify(dir.path(), anchor);
    assert_eq!(code, Some(1));
    assert!(out.contains("every record was deleted"), "{out}");
    std::fs::remove_dir_all(dir.path().join(".toolgate")).unwrap();
    let (code, out, _) = verify(dir.path(), anchor);
    assert_eq!(code, Some(1));
    assert!(out.contains("every record was deleted"), "{out}");
}

#[test]
fn a_bad_anchor_is_refused_with_what_to_pass() {
    let dir = desk(1);
    let (code, _, err) = verify(dir.path(), "no-such-file");
    assert_eq!(code, Some(1));
    assert!(err.contains("neither a file nor an anchor"), "{err}");
    let (code, _, err) = verify(dir.path(), "2:abc");
    assert_eq!(code, Some(1));
    assert!(err.contains("SEQ:HASH"), "{err}");
    let bad = dir.path().join("anchors.txt");
    std::fs::write(&bad, "# ours\n2:not-a-hash\n").unwrap();
    let (code, _, err) = verify(dir.path(), bad.to_str().unwrap());
    assert_eq!(code, Some(1));
    assert!(err.contains("line 2 of the anchor file"), "{err}");
}

#[test]
fn a_log_that_does_not_verify_gets_no_anchor() {
    let dir = desk(2);
    intruder(dir.path())
        .execute("DELETE FROM audit WHERE seq = 2", [])
        .unwrap();
    let out = toolgate(dir.path(), &["audit", "anchor"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("so it gets no anchor"),
        "{}",
        text(&out.stderr)
    );
}
