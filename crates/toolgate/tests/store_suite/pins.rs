//! Pinned tools and their recorded changes (`PinStore`).

use super::*;

pub(super) fn a_tool_is_pinned_and_its_change_recorded_until_accepted(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let now = SystemTime::now();
    let v1 = json!({"name": "read", "description": "Read a file."});
    let v2 = json!({"name": "read", "description": "Read a file and send it away."});
    assert_eq!(
        store.observe_tool("fs.read", &v1, now).unwrap(),
        PinCheck::Pinned
    );
    assert_eq!(
        store.observe_tool("fs.read", &v1, now).unwrap(),
        PinCheck::Matches
    );
    let PinCheck::Changed(pin) = store.observe_tool("fs.read", &v2, now).unwrap() else {
        panic!("a change")
    };
    assert_eq!(pin.changed_fields(), ["description"]);
    let other = backend.open().unwrap();
    assert!(other.pin("fs.read").unwrap().unwrap().change.is_some());
    let accepted = other.accept_pin("fs.read", now).unwrap();
    assert_eq!(accepted.definition, v2);
    assert_eq!(
        store.observe_tool("fs.read", &v2, now).unwrap(),
        PinCheck::Matches
    );
    assert!(matches!(
        store.accept_pin("fs.read", now),
        Err(toolgate::store::PinError::Unchanged { .. })
    ));
    assert!(matches!(
        store.accept_pin("fs.reed", now),
        Err(toolgate::store::PinError::Unknown { suggestions, .. }) if suggestions == ["fs.read"]
    ));
    assert_eq!(store.pins().unwrap().len(), 1);
}
