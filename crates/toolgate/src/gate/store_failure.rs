//! What a caller is told when the store fails before a call could run: which
//! part failed, in words that never name where the store is (the operator's
//! log has the whole error).

use toolgate_core::Outcome;

use crate::store::StoreError;

/// The outcome of a call stopped because `what` failed. The caller learns the
/// kind of failure only; the store's own message, which names where it is (a
/// database's user, host, port and name), goes to the operator's log.
pub(super) fn store_failure(what: &str, error: StoreError) -> Outcome {
    tracing::error!(store = what, %error, "a call did not run because the store failed");
    Outcome::error(
        format!(
            "{what} cannot be written, so nothing ran ({}); tell the operator, whose log has the details",
            error.for_caller()
        ),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCATION: &str = "postgres://toolgate:***@db.internal.example:5433/toolgate_prod";

    /// What no caller should read: where the store is, and what it said.
    const HIDDEN: [&str; 6] = [
        "db.internal.example",
        "5433",
        "toolgate_prod",
        "toolgate:",
        "10.0.0.9",
        "permission denied",
    ];

    #[test]
    fn a_store_failure_tells_the_caller_what_failed_but_not_where_the_store_is() {
        let errors = [
            StoreError::Unreachable {
                location: LOCATION.into(),
                problem: "writing state: connection refused (os error 111) to 10.0.0.9:5433".into(),
            },
            StoreError::Database {
                location: LOCATION.into(),
                action: "writing state",
                problem: "permission denied for table state".into(),
            },
            StoreError::Tls {
                location: LOCATION.into(),
                problem: "the certificate of db.internal.example has expired".into(),
                fix: "renew it".into(),
            },
        ];
        for error in errors {
            assert!(error.to_string().contains("db.internal.example"));
            let message = super::store_failure("the audit log", error).message_for_model();
            for hidden in HIDDEN {
                assert!(!message.contains(hidden), "{hidden} in {message}");
            }
            assert!(
                message.starts_with("the audit log cannot be written, so nothing ran ("),
                "{message}"
            );
            assert!(message.contains("tell the operator"), "{message}");
        }
    }

    #[test]
    fn a_store_failure_still_says_what_kind_of_failure_it_was() {
        let error = StoreError::Database {
            location: LOCATION.into(),
            action: "writing state",
            problem: "permission denied for table state".into(),
        };
        let outcome = super::store_failure("the state store", error);
        assert!(
            outcome
                .message_for_model()
                .contains("the database failed while writing state"),
            "{outcome:?}"
        );
        assert!(matches!(
            outcome,
            Outcome::Error {
                retryable: true,
                ..
            }
        ));
    }
}
