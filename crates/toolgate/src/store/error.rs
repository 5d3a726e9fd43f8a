//! Errors of the state store, written for the operator who must fix them.

use std::path::PathBuf;

/// A state store could not do what was asked.
///
/// These are operator errors: a directory that cannot be written, a file another
/// process holds too long, a row edited by hand. Each message says what happened
/// and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The state directory could not be created.
    #[error(
        "cannot create state directory {}: {source}; check the parent directory is writable or set --state-dir (or TOOLGATE_STATE_DIR) to another place",
        path.display()
    )]
    CreateDir {
        /// The directory toolgate tried to create.
        path: PathBuf,
        /// Why the filesystem refused.
        source: std::io::Error,
    },

    /// The database (or its `-wal` or `-shm` file) is a symbolic link, which could
    /// send state and the audit log anywhere.
    #[error(
        "state store at {} is a symbolic link (to {}), which toolgate does not follow: a link could send state and the audit log anywhere; put the file itself there, or set {}=1 to open it through the link",
        path.display(),
        target.display(),
        super::ALLOW_SYMLINK_ENV
    )]
    Symlink {
        /// The link, where the file was expected.
        path: PathBuf,
        /// Where the link points.
        target: PathBuf,
    },

    /// The SQLite file could not be opened or prepared for use.
    #[error(
        "cannot open state store at {location}: {source}; check the directory is writable or set --state-dir (or TOOLGATE_STATE_DIR) to another place"
    )]
    Open {
        /// The SQLite file's path, or `:memory:`.
        location: String,
        /// What SQLite reported.
        source: rusqlite::Error,
    },

    /// The file was written by a newer toolgate whose schema this one does not know.
    #[error(
        "state store at {location} has schema version {found}, but this toolgate understands versions up to {supported}; upgrade toolgate or set --state-dir to another place"
    )]
    NewerSchema {
        /// The SQLite file's path, or `:memory:`.
        location: String,
        /// The schema version the file records (`PRAGMA user_version`).
        found: i64,
        /// The newest schema version this toolgate knows.
        supported: i64,
    },

    /// The database was written by a newer toolgate whose schema this one does not know.
    #[error(
        "the database at {location} has schema version {found}, but this toolgate understands versions up to {supported}; upgrade this toolgate (every instance sharing a database must be at least as new as the newest that migrated it)"
    )]
    NewerDatabase {
        /// The database's URL, its password masked.
        location: String,
        /// The schema version the database records.
        found: i64,
        /// The newest schema version this toolgate knows.
        supported: i64,
    },

    /// The database cannot be reached (down, refusing, or the connection broke).
    /// Calls fail closed: nothing runs without its intent recorded.
    #[error(
        "cannot reach the database at {location}: {problem}; check that it is running and that the URL, user and password are right (calls fail until it is reachable again)"
    )]
    Unreachable {
        /// The database's URL, its password masked.
        location: String,
        /// Why it cannot be reached, in words (never the password).
        problem: String,
    },

    /// TLS to the database failed: the handshake, the server's certificate, or a
    /// database that takes only TLS connections given a plaintext one.
    #[error("TLS to the database at {location} failed: {problem}; {fix}")]
    Tls {
        /// The database's URL, its password masked.
        location: String,
        /// What failed in the handshake or the certificate check.
        problem: String,
        /// What the operator can change to make it work.
        fix: String,
    },

    /// The database refused or failed a statement.
    #[error(
        "the database at {location} failed while {action}: {problem}; check its log, the disk, and that this user may write toolgate's tables (`toolgate store migrate` creates them)"
    )]
    Database {
        /// The database's URL, its password masked.
        location: String,
        /// What the store was doing, e.g. "appending to the audit log".
        action: &'static str,
        /// What the database reported.
        problem: String,
    },

    /// The store's URL or TLS settings cannot be used.
    #[error(
        "cannot use the store {location}: {problem}; write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE (a password as ${{env.NAME}})"
    )]
    BadStoreUrl {
        /// The store as given, its password masked.
        location: String,
        /// What is wrong with it.
        problem: String,
    },

    /// Another process held the file locked for longer than the busy timeout.
    #[error(
        "state store at {location} is locked by another process and stayed locked while {action}: {source}; retry, or stop the other toolgate using the same state directory"
    )]
    Busy {
        /// The SQLite file's path, or `:memory:`.
        location: String,
        /// What the store was doing when the timeout ran out.
        action: &'static str,
        /// SQLite's busy error.
        source: rusqlite::Error,
    },

    /// SQLite failed while reading or writing state.
    #[error(
        "state store at {location} failed while {action}: {source}; check the disk has room and the file is writable, or move it aside to start with empty state"
    )]
    Sqlite {
        /// The SQLite file's path, or `:memory:`.
        location: String,
        /// What the store was doing, e.g. "writing state".
        action: &'static str,
        /// What SQLite reported.
        source: rusqlite::Error,
    },

    /// A stored value is not valid JSON, typically because the row was edited by hand.
    #[error(
        "state store at {location}: the value of key `{key}` in session `{session}` is not valid JSON ({source}); fix the row by hand, or reset the session to start it empty"
    )]
    CorruptValue {
        /// The store: a SQLite file's path (or `:memory:`), or a database URL with its
        /// password masked.
        location: String,
        /// The session the value belongs to.
        session: String,
        /// The key whose value cannot be read.
        key: String,
        /// Why the text is not JSON.
        source: serde_json::Error,
    },

    /// No approval request has this id.
    #[error("there is no approval request `{id}`{}", unknown_approval_hint(suggestions, *pending))]
    UnknownApproval {
        /// The id asked for.
        id: String,
        /// Pending ids close to `id`, best first.
        suggestions: Vec<String>,
        /// How many requests are pending.
        pending: usize,
    },

    /// The request was already answered, so it cannot be approved or denied again.
    #[error("{id} was already {} at {decided_at}; {}", already(*status), already_hint(*status))]
    ApprovalNotPending {
        /// The request's id.
        id: String,
        /// What became of it.
        status: super::ApprovalStatus,
        /// When it was answered or consumed (RFC 3339).
        decided_at: String,
    },

    /// A stored approval cannot be read back, typically because the row was edited by hand.
    #[error(
        "state store at {location}: approval {id} has {problem}; fix the row by hand, or delete it so the call asks again"
    )]
    CorruptApproval {
        /// The store: a SQLite file's path (or `:memory:`), or a database URL with its
        /// password masked.
        location: String,
        /// The request's id.
        id: String,
        /// What in the row cannot be read.
        problem: String,
    },

    /// A stored audit record is not a record toolgate wrote, typically because the row
    /// was edited by hand.
    #[error(
        "audit log at {location}: record {seq} cannot be read ({source}); run `toolgate audit verify` to see where the log was tampered with"
    )]
    CorruptAuditRecord {
        /// The store: a SQLite file's path (or `:memory:`), or a database URL with its
        /// password masked.
        location: String,
        /// The record's place in the chain.
        seq: u64,
        /// Why its text is not a record.
        source: serde_json::Error,
    },

    /// A stored task cannot be read, typically because its row was edited by hand.
    #[error(
        "state store at {location}: task `{id}` has {problem}; delete its row from the `tasks` table to forget it"
    )]
    CorruptTask {
        /// The store: a SQLite file's path (or `:memory:`), or a database URL with its
        /// password masked.
        location: String,
        /// The task's id.
        id: String,
        /// What in the row cannot be read.
        problem: String,
    },

    /// The key that seals paused programs cannot be read or made.
    #[error(
        "cannot use the key that seals paused programs at {}: {source}; check the state directory is readable and writable, or delete the file to make a new key (programs paused under the old key can then not be resumed)",
        path.display()
    )]
    CodeRunKey {
        /// The key file (`code-runs.key` beside the database).
        path: PathBuf,
        /// Why it cannot be read or written.
        source: std::io::Error,
    },

    /// No paused program has this run id, or it is not paused any more.
    #[error("{}", code_run_not_paused(id, status.as_deref()))]
    CodeRunNotPaused {
        /// The run id asked for.
        id: String,
        /// Its status (`resuming`, `finished`), or `None` when no such run exists.
        status: Option<String>,
    },

    /// A paused program's seal does not match: its snapshot or its row was not
    /// written by toolgate with this store's key.
    #[error(
        "the paused program {id} in {location} was not written by toolgate with this store's key (its seal does not match), so it will not be resumed; run the program again"
    )]
    CodeRunTampered {
        /// The store: a SQLite file's path (or `:memory:`), or a database URL with its
        /// password masked.
        location: String,
        /// The paused program's run id.
        id: String,
    },
}

fn code_run_not_paused(id: &str, status: Option<&str>) -> String {
    match status {
        Some("resuming") => format!(
            "program {id} is being resumed already (here or in another process); wait for that resume to end. If the process resuming it died, `toolgate code release {id}` makes it paused again"
        ),
        Some("finished") => format!(
            "program {id} was resumed and has finished; a paused program resumes only once (run it again to repeat it)"
        ),
        _ => {
            format!("there is no paused program `{id}`; `toolgate code list` shows the paused ones")
        }
    }
}

impl StoreError {
    /// [`StoreError::for_caller`], with the whole error logged for the
    /// operator first: what a caller is told where a store failure stops it.
    pub(crate) fn reported(&self) -> String {
        tracing::error!(error = %self, "the store failed");
        self.for_caller()
    }

    /// What went wrong, in words for the caller of a tool (a model, an MCP
    /// client): the kind of failure and what the store was doing, nothing more.
    /// The full message names the store (a database's user, host, port and name,
    /// a file's path) and quotes the database, which is for the operator's log.
    pub(crate) fn for_caller(&self) -> String {
        use StoreError::*;
        match self {
            Unreachable { .. } => "the database cannot be reached".into(),
            Tls { .. } => "TLS to the database failed".into(),
            Database { action, .. } => format!("the database failed while {action}"),
            Busy { action, .. } => {
                format!("the state store stayed locked by another process while {action}")
            }
            Sqlite { action, .. } => format!("the state store failed while {action}"),
            NewerSchema { .. } | NewerDatabase { .. } => {
                "the store was last written by a newer toolgate".into()
            }
            CorruptValue { .. }
            | CorruptApproval { .. }
            | CorruptAuditRecord { .. }
            | CorruptTask { .. }
            | CodeRunTampered { .. } => "a stored record cannot be read".into(),
            _ => "the store failed".into(),
        }
    }

    /// Wraps a SQLite error from `action`, telling a lock held too long from other failures.
    pub(crate) fn sqlite(location: &str, action: &'static str, source: rusqlite::Error) -> Self {
        let busy = matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        );
        let location = location.to_owned();
        if busy {
            StoreError::Busy {
                location,
                action,
                source,
            }
        } else {
            StoreError::Sqlite {
                location,
                action,
                source,
            }
        }
    }
}

fn unknown_approval_hint(suggestions: &[String], pending: usize) -> String {
    match (suggestions.first(), pending) {
        (Some(best), _) => format!("; did you mean `{best}`?"),
        (None, 0) => {
            "; no request is pending (`toolgate approvals list --all` shows answered ones)"
                .to_owned()
        }
        (None, _) => "; `toolgate approvals list` shows the pending ones".to_owned(),
    }
}

fn already(status: super::ApprovalStatus) -> &'static str {
    use super::ApprovalStatus::*;
    match status {
        Pending => "pending",
        Approved => "approved",
        Denied => "denied",
        Consumed => "answered and used",
    }
}

fn already_hint(status: super::ApprovalStatus) -> &'static str {
    use super::ApprovalStatus::*;
    match status {
        Pending => "nothing to do",
        Approved => "nothing to do: the call runs once when it is submitted again",
        Denied => "to allow the call after all, submit it again and approve the new request",
        Consumed => "submit the call again to open a new request",
    }
}
