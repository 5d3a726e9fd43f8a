//! What each conversation has seen, kept between its calls so that a call reads
//! only the history it has not read yet.
//!
//! The rule of two asks, before every call that acts, what the conversation has
//! seen: which of its calls brought untrusted content or private data in. Read
//! from the whole history each time, a call cost in proportion to the calls
//! before it, and a long conversation grew slower with every call. Here each
//! conversation keeps a short account ([`Seen::capped`]: the first calls of each
//! label named, the rest counted) and the number of the last call it covers; a
//! call reads that call and the ones after it ([`CallHistory::calls_from`]). If
//! the call it covers is no longer the one the store holds there (the
//! conversation was started over, in this process or another), the account is
//! read again from the start.
//!
//! The account follows the labels the gate's tools carry; a gate built for a new
//! spec starts with an empty cache.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use toolgate_core::{Labels, Seen, WORDS_NAMED};

use crate::store::{CallHistory, RecordedCall, StoreError};

/// How many conversations' accounts are kept; past it, one is dropped (and read
/// whole again when its conversation calls next).
const CONVERSATIONS: usize = 4096;

/// One conversation's account.
#[derive(Clone)]
struct Account {
    seen: Seen,
    /// The last call it covers, as the store held it.
    last: RecordedCall,
}

/// The accounts of the conversations this gate has served.
#[derive(Default)]
pub(crate) struct SeenCache {
    accounts: Mutex<HashMap<String, Account>>,
}

impl SeenCache {
    fn accounts(&self) -> MutexGuard<'_, HashMap<String, Account>> {
        // Entries are replaced whole, so what a poisoned lock guards is whole.
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What conversation `session` has seen, by `labels_of` (each tool's labels
    /// now), reading from `history` only the calls since its last one.
    pub(crate) fn seen(
        &self,
        history: &dyn CallHistory,
        session: &str,
        labels_of: impl Fn(&str) -> Option<Labels>,
    ) -> Result<Seen, StoreError> {
        let cached = self.accounts().get(session).cloned();
        let (mut seen, calls) = match cached {
            Some(account) => {
                let mut calls = history.calls_from(session, account.last.seq)?;
                if calls.first() == Some(&account.last) {
                    // The call it covered is still there: go on after it.
                    calls.remove(0);
                    (account.seen, calls)
                } else {
                    // The conversation started over: read it again.
                    (Seen::default(), history.calls(session)?)
                }
            }
            None => (Seen::default(), history.calls(session)?),
        };
        let Some(last) = calls.last().cloned() else {
            return Ok(seen);
        };
        for call in &calls {
            if let Some(labels) = labels_of(&call.tool).filter(|_| call.ok) {
                seen.note(&call.tool, &call.time, labels);
            }
        }
        let seen = seen.capped(WORDS_NAMED);
        // Two calls of one conversation at once may store their accounts in
        // either order: an older one covers fewer calls, and the next call reads
        // on from its last.
        let mut accounts = self.accounts();
        if accounts.len() >= CONVERSATIONS && !accounts.contains_key(session) {
            let dropped = accounts.keys().next().cloned();
            if let Some(dropped) = dropped {
                accounts.remove(&dropped);
            }
        }
        let account = Account {
            seen: seen.clone(),
            last,
        };
        accounts.insert(session.to_owned(), account);
        Ok(seen)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use toolgate_core::SeenLabel;

    use super::*;
    use crate::store::MemoryCallHistory;

    /// A history that counts the calls it hands out.
    #[derive(Default)]
    struct Counted {
        history: MemoryCallHistory,
        read: AtomicUsize,
    }

    impl CallHistory for Counted {
        fn record_call(&self, s: &str, tool: &str, ok: bool, time: &str) -> Result<(), StoreError> {
            self.history.record_call(s, tool, ok, time)
        }
        fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError> {
            self.calls_from(session, 0)
        }
        fn calls_from(&self, session: &str, from: u64) -> Result<Vec<RecordedCall>, StoreError> {
            let calls = self.history.calls_from(session, from)?;
            self.read.fetch_add(calls.len(), Ordering::Relaxed);
            Ok(calls)
        }
        fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
            self.history.forget_calls(session)
        }
    }

    /// Records a call of `tool` that completed at 10:`minute`.
    fn record(history: &Counted, tool: &str, ok: bool, minute: usize) {
        let time = format!("2026-12-05T10:{minute:02}:00Z");
        history.record_call("s", tool, ok, &time).unwrap();
    }

    fn labels(tool: &str) -> Option<Labels> {
        (tool == "fetch_page").then_some(Labels::UNTRUSTED)
    }

    fn full(history: &dyn CallHistory, session: &str) -> Seen {
        let calls = history.calls(session).unwrap();
        Seen::from_calls(
            calls
                .iter()
                .map(|c| (c.tool.as_str(), c.ok, c.time.as_str())),
            labels,
        )
    }

    #[test]
    fn a_long_conversation_reads_each_call_about_once_and_words_it_as_the_whole_history_would() {
        let (history, cache) = (Counted::default(), SeenCache::default());
        for i in 0..500 {
            let tool = if i % 3 == 0 { "fetch_page" } else { "lookup" };
            record(&history, tool, i % 7 != 0, i % 60);
            let seen = cache.seen(&history, "s", labels).unwrap();
            let whole = full(&history.history, "s");
            assert_eq!(
                seen.words(SeenLabel::Untrusted),
                whole.words(SeenLabel::Untrusted)
            );
            assert_eq!(
                seen.count(SeenLabel::Untrusted),
                whole.count(SeenLabel::Untrusted)
            );
        }
        // Each call once, and the one before it again as the anchor.
        assert!(
            history.read.load(Ordering::Relaxed) < 1_001,
            "{:?}",
            history.read
        );
    }

    #[test]
    fn a_conversation_started_over_is_read_again_from_its_start() {
        let (history, cache) = (Counted::default(), SeenCache::default());
        record(&history, "fetch_page", true, 0);
        record(&history, "lookup", true, 1);
        assert!(
            cache
                .seen(&history, "s", labels)
                .unwrap()
                .has(SeenLabel::Untrusted)
        );
        // Started over elsewhere (`toolgate state reset`): as many calls as before
        // or more, none of which brought untrusted content in.
        history.forget_calls("s").unwrap();
        for minute in 2..5 {
            record(&history, "lookup", true, minute);
        }
        assert!(
            !cache
                .seen(&history, "s", labels)
                .unwrap()
                .has(SeenLabel::Untrusted)
        );
        // And the other way: what it reads after the restart is not missed.
        history.forget_calls("s").unwrap();
        for minute in 5..9 {
            record(&history, "fetch_page", true, minute);
        }
        let seen = cache.seen(&history, "s", labels).unwrap();
        assert_eq!(seen.count(SeenLabel::Untrusted), 4);
    }
}
