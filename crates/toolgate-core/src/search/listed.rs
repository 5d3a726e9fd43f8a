//! What one session's tool list shows when the catalog is offered as "a few
//! always-loaded tools plus search": `search_tools`, the always-loaded tools, and
//! every tool a search has returned in that session.
//!
//! A server keeps one [`ListedTools`] per session. After each `search_tools` call it
//! [`reveal`](ListedTools::reveal)s the names found; when that returns true the list
//! grew and the server tells the client (MCP: `notifications/tools/list_changed`).
//! Listing is about what the model sees, not what it may run: every call still goes
//! through the gate.

use std::collections::BTreeSet;

use super::builtin::SEARCH_TOOLS;
use crate::ToolDescriptor;
use crate::wire::DeferSet;

/// The tools listed to one session.
///
/// ```
/// use toolgate_core::search::ListedTools;
/// let mut listed = ListedTools::new(["help".to_owned()]);
/// assert!(listed.is_listed("search_tools") && listed.is_listed("help"));
/// assert!(!listed.is_listed("orders.refund"));
/// assert!(listed.reveal(["orders.refund"]));
/// assert!(!listed.reveal(["orders.refund", "help"]), "nothing new: no notification");
/// assert!(listed.is_listed("orders.refund"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedTools {
    always: BTreeSet<String>,
    revealed: BTreeSet<String>,
}

impl ListedTools {
    /// A session that starts with `always_loaded` (and `search_tools`) listed.
    pub fn new(always_loaded: impl IntoIterator<Item = String>) -> Self {
        ListedTools {
            always: always_loaded.into_iter().collect(),
            revealed: BTreeSet::new(),
        }
    }

    /// A session that starts with the tools `defer` keeps loaded.
    pub fn from_defer_set(defer: &DeferSet) -> Self {
        ListedTools::new(defer.always_loaded().map(str::to_owned))
    }

    /// Lists `names` from now on; true when at least one was not listed before.
    pub fn reveal<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let mut grew = false;
        for name in names {
            if !self.is_listed(name) {
                self.revealed.insert(name.to_owned());
                grew = true;
            }
        }
        grew
    }

    /// Whether `name` is listed: `search_tools`, always loaded, or revealed.
    pub fn is_listed(&self, name: &str) -> bool {
        name == SEARCH_TOOLS || self.always.contains(name) || self.revealed.contains(name)
    }

    /// The tools revealed by searches so far, sorted by name.
    pub fn revealed(&self) -> impl Iterator<Item = &str> {
        self.revealed.iter().map(String::as_str)
    }

    /// Forgets what searches revealed; the always-loaded tools stay.
    pub fn reset(&mut self) {
        self.revealed.clear();
    }

    /// The listed tools among `catalog`, in catalog order.
    pub fn listed<'a>(
        &self,
        catalog: impl IntoIterator<Item = &'a ToolDescriptor>,
    ) -> Vec<&'a ToolDescriptor> {
        catalog
            .into_iter()
            .filter(|t| self.is_listed(&t.name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::search::search_tools_descriptor;
    use crate::{Effect, ToolSource};

    #[test]
    fn the_list_is_search_plus_always_loaded_plus_revealed_in_catalog_order() {
        let tool = |n: &str| {
            ToolDescriptor::new(
                n,
                "d",
                json!({"type": "object"}),
                Effect::Read,
                ToolSource::Builtin,
            )
        };
        let catalog = vec![tool("c"), tool("b"), search_tools_descriptor(), tool("a")];
        let mut listed = ListedTools::from_defer_set(&DeferSet::always_loading(["b"]));
        let names = |l: &ListedTools| {
            l.listed(&catalog)
                .iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&listed), ["b", "search_tools"]);
        assert!(listed.reveal(["a", "c"]));
        assert_eq!(names(&listed), ["c", "b", "search_tools", "a"]);
        assert_eq!(listed.revealed().collect::<Vec<_>>(), ["a", "c"]);
        listed.reset();
        assert_eq!(names(&listed), ["b", "search_tools"]);
    }
}
