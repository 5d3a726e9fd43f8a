//! The conversation-state contract every store keeps: a session's key/value map,
//! written a batch at a time so a tool's state effects land whole or not at all.

use serde_json::{Map, Value};

use super::StoreError;

/// Where conversation state lives.
///
/// Every method takes the session id of the conversation it acts on; sessions never
/// see each other's keys. Implementations are synchronous and safe to share as
/// `Arc<dyn StateStore>`.
///
/// ```
/// use serde_json::json;
/// use toolgate::{store::MemoryStore, store::StateStore};
///
/// let store = MemoryStore::new();
/// store.apply("default", &[("cart".into(), json!(["A-1001"]))]).unwrap();
/// assert_eq!(store.get("default", "cart").unwrap(), Some(json!(["A-1001"])));
/// assert_eq!(store.get("other", "cart").unwrap(), None);
/// ```
pub trait StateStore: Send + Sync {
    /// All keys of a session and their values, in key order; empty for a session
    /// that was never written.
    fn load(&self, session: &str) -> Result<Map<String, Value>, StoreError>;

    /// One key of a session, or `None` if it was never written.
    fn get(&self, session: &str, key: &str) -> Result<Option<Value>, StoreError>;

    /// Writes every `(key, value)` of `writes` in one transaction: afterwards either
    /// all are visible or none. A key written twice in one batch keeps its last value.
    fn apply(&self, session: &str, writes: &[(String, Value)]) -> Result<(), StoreError>;

    /// Removes every key of a session, leaving other sessions alone.
    fn reset(&self, session: &str) -> Result<(), StoreError>;
}
