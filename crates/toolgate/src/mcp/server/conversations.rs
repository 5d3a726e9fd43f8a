//! What the server remembers of each conversation between requests: the tools a
//! search listed in it and the tool names its client last listed, so that a
//! client of the stateless revision (a fresh handler per request) keeps its
//! listings, and a subscription hears when a call changed what it is offered.
//!
//! The gate keeps the conversation itself (state, history, flow position); this
//! is only the server's view of it, bounded: past `capacity` conversations the
//! one used longest ago is forgotten (its search listings start afresh).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use tokio::sync::broadcast;
use toolgate_core::search::ListedTools;

/// How many conversation change events a slow subscriber may fall behind by
/// before it is told "something changed" instead.
const CHANGE_BACKLOG: usize = 256;

pub(crate) struct Conversations {
    capacity: usize,
    /// With search: what every conversation lists from the start.
    initial: Option<ListedTools>,
    inner: Mutex<Inner>,
    /// The conversations whose offered tools changed, for subscriptions.
    changed: broadcast::Sender<String>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    clock: u64,
}

struct Entry {
    searched: ListedTools,
    /// The tool names last listed to the client, once it has listed them.
    listed: Option<Vec<String>>,
    used: u64,
}

impl Conversations {
    pub(crate) fn new(capacity: usize, initial: Option<ListedTools>) -> Self {
        Conversations {
            capacity: capacity.max(1),
            initial,
            inner: Mutex::default(),
            changed: broadcast::channel(CHANGE_BACKLOG).0,
        }
    }

    /// Whether the server offers search (tools are listed once found).
    pub(crate) fn searching(&self) -> bool {
        self.initial.is_some()
    }

    /// With search, whether `tool` is listed in `conversation`; without, true.
    pub(crate) fn is_listed(&self, conversation: &str, tool: &str) -> bool {
        if !self.searching() {
            return true;
        }
        self.with(conversation, |entry| entry.searched.is_listed(tool))
    }

    /// Whether a conversation lists `tool` before any search in it.
    pub(crate) fn listed_at_first(&self, tool: &str) -> bool {
        self.initial
            .as_ref()
            .is_none_or(|initial| initial.is_listed(tool))
    }

    /// Whether the client of `conversation` has listed tools (so it may need to
    /// hear that they changed).
    pub(crate) fn has_listed(&self, conversation: &str) -> bool {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner
            .entries
            .get(conversation)
            .is_some_and(|entry| entry.listed.is_some())
    }

    /// Lists `found` in `conversation` from now on.
    pub(crate) fn reveal(&self, conversation: &str, found: &[String]) {
        self.with(conversation, |entry| {
            entry.searched.reveal(found.iter().map(String::as_str))
        });
    }

    /// Records what the client of `conversation` was just shown.
    pub(crate) fn listed(&self, conversation: &str, names: Vec<String>) {
        self.with(conversation, |entry| entry.listed = Some(names));
    }

    /// Records what `conversation` would be shown now; true when its client has
    /// listed tools before and the names differ (it should hear of the change).
    /// Subscriptions on the conversation hear of it too.
    pub(crate) fn offered_now(&self, conversation: &str, names: Vec<String>) -> bool {
        let changed = self.with(conversation, |entry| match &entry.listed {
            Some(listed) if *listed == names => false,
            Some(_) => {
                entry.listed = Some(names);
                true
            }
            None => false,
        });
        if changed {
            // No subscriber is not an error: nobody is listening.
            let _ = self.changed.send(conversation.to_owned());
        }
        changed
    }

    /// Hears the ids of conversations whose offered tools changed.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<String> {
        self.changed.subscribe()
    }

    fn with<T>(&self, conversation: &str, f: impl FnOnce(&mut Entry) -> T) -> T {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let now = inner.clock;
        if !inner.entries.contains_key(conversation) && inner.entries.len() >= self.capacity {
            inner.forget_oldest();
        }
        let entry = inner
            .entries
            .entry(conversation.to_owned())
            .or_insert_with(|| Entry {
                searched: self.initial.clone().unwrap_or_default(),
                listed: None,
                used: now,
            });
        entry.used = now;
        f(entry)
    }
}

impl Inner {
    fn forget_oldest(&mut self) {
        let oldest = self
            .entries
            .iter()
            .min_by_key(|(_, entry)| entry.used)
            .map(|(id, _)| id.clone());
        if let Some(id) = oldest {
            self.entries.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_search_listing_lasts_across_requests_of_one_conversation_only() {
        let conversations = Conversations::new(8, Some(ListedTools::new(names(&["a"]))));
        assert!(!conversations.is_listed("c1", "b"));
        conversations.reveal("c1", &names(&["b"]));
        assert!(conversations.is_listed("c1", "b"));
        assert!(conversations.is_listed("c1", "a"));
        assert!(!conversations.is_listed("c2", "b"));
    }

    #[test]
    fn a_change_counts_only_once_the_client_has_listed() {
        let conversations = Conversations::new(8, None);
        let mut heard = conversations.subscribe();
        assert!(!conversations.offered_now("c", names(&["a"])));
        conversations.listed("c", names(&["a"]));
        assert!(!conversations.offered_now("c", names(&["a"])));
        assert!(conversations.offered_now("c", names(&["a", "b"])));
        assert_eq!(heard.try_recv().ok().as_deref(), Some("c"));
        assert!(!conversations.offered_now("c", names(&["a", "b"])));
        assert!(heard.try_recv().is_err());
    }

    #[test]
    fn past_capacity_the_conversation_used_longest_ago_is_forgotten() {
        let conversations = Conversations::new(2, Some(ListedTools::new(Vec::new())));
        conversations.reveal("old", &names(&["x"]));
        conversations.reveal("kept", &names(&["x"]));
        assert!(conversations.is_listed("old", "x")); // "old" is now the newest
        conversations.reveal("new", &names(&["x"])); // forgets "kept"
        assert!(conversations.is_listed("old", "x"));
        assert!(!conversations.is_listed("kept", "x"));
    }
}
