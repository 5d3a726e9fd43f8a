//! The schema version a store was written at: a newer one is refused.

use super::*;

pub(super) fn a_store_written_by_a_newer_toolgate_is_refused(backend: &dyn Backend) {
    drop(backend.open().unwrap());
    backend.make_newer();
    let refused = backend.open().err().expect("a newer store is refused");
    let message = refused.to_string();
    assert!(message.contains("schema version 999"), "{message}");
    assert!(message.contains("upgrade"), "{message}");
}
