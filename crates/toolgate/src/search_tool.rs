//! The built-in `search_tools` tool: the model asks for tools by what they do and
//! gets the few that fit, with their guidance, so a catalog of thousands can be
//! offered as "a few always-loaded tools plus search".
//!
//! It keeps its own [`SearchIndex`] of the catalog; when tools come and go (an MCP
//! server's list changes), [`SearchTools::insert`] and [`SearchTools::remove`]
//! update it in place, through a shared reference. What the caller may not use
//! is left out: tools outside the call's principal's view (its tier ceiling and
//! scopes, with or without a policy), tools the policy denies it, tools the
//! conversation's flow blocks now, and whatever a host filter excludes
//! (quarantine, open breaker).
//!
//! A server that lists tools on demand (MCP `serve --search`) keeps one
//! [`ListedTools`](toolgate_core::search::ListedTools) per session and reveals the
//! names a search returned ([`found_tool_names`](toolgate_core::search::found_tool_names) of the result), sending
//! `notifications/tools/list_changed` when the list grew.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use serde_json::Value;
use toolgate_core::flow::{FlowView, ToolStatus};
use toolgate_core::search::{
    Exclusion, Fusion, Hit, SEARCH_TOOLS, Scorer, SearchIndex, SearchRequest, SearchToolsInput,
    found_tools, search_tools_descriptor,
};
use toolgate_core::{
    Catalog, CatalogError, Decision, DynTool, Policy, Principal, ToolCtx, ToolDescriptor, ToolError,
};

/// A host's reason to leave a tool out of one caller's results.
pub type SearchFilter = dyn Fn(&Principal, &ToolDescriptor) -> Option<Exclusion> + Send + Sync;

/// A [`Scorer`] that keeps its own view of the catalog (an embedding index), told
/// of each tool that comes, changes or goes, as the lexical index is.
pub trait CatalogScorer: Scorer {
    /// Takes in `tool`, replacing one of the same name.
    fn insert(&self, tool: &ToolDescriptor);
    /// Takes in `tools` at once (an embedding model runs them in batches).
    fn insert_all(&self, tools: &[&ToolDescriptor]) {
        for tool in tools {
            self.insert(tool);
        }
    }
    /// Forgets the tool named `name`.
    fn remove(&self, name: &str);
    /// Holds exactly `tools` from now on (default: takes them in, forgets nothing).
    fn sync(&self, tools: &[&ToolDescriptor]) {
        self.insert_all(tools);
    }
}

/// The built-in `search_tools` tool (effect `read`, source `builtin`).
///
/// With a scorer (an embedding model), a call searches on a blocking thread
/// ([`tokio::task::spawn_blocking`]): embedding a query takes milliseconds of CPU,
/// which must not stall the other sessions served by the same async worker.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolgate::{Catalog, Effect, Principal, search::SearchTools, ToolDescriptor, tool::ToolSource};
///
/// let mut catalog = Catalog::new();
/// let tools = SearchTools::register_in(&mut catalog).unwrap();
/// tools.insert(&ToolDescriptor::new(
///     "orders.refund", "Refund an order.", json!({"type": "object"}),
///     Effect::Write, ToolSource::Builtin,
/// ));
/// let found = tools.find(&Principal::operator(), "refund my order", 5);
/// assert_eq!(found["tools"][0]["name"], "orders.refund");
/// ```
///
/// Its parts are shared (a clone is a handle on the same index), so a call can
/// move one to the blocking thread.
#[derive(Clone)]
pub struct SearchTools {
    descriptor: Arc<ToolDescriptor>,
    indexed: Arc<RwLock<Indexed>>,
    policy: Option<Arc<Policy>>,
    filter: Option<Arc<SearchFilter>>,
    scorer: Option<Arc<dyn CatalogScorer>>,
    fusion: Fusion,
}

#[derive(Default)]
struct Indexed {
    index: SearchIndex,
    tools: HashMap<String, ToolDescriptor>,
}

impl SearchTools {
    /// A search over `tools` (itself left out).
    pub fn from_tools<'a>(tools: impl IntoIterator<Item = &'a ToolDescriptor>) -> Self {
        let search = SearchTools {
            descriptor: Arc::new(search_tools_descriptor()),
            indexed: Arc::new(RwLock::new(Indexed::default())),
            policy: None,
            filter: None,
            scorer: None,
            fusion: Fusion::SCORES,
        };
        for tool in tools {
            search.insert(tool);
        }
        search
    }

    /// A search over every tool in `catalog`.
    pub fn new(catalog: &Catalog) -> Self {
        SearchTools::from_tools(catalog.iter().map(|t| t.descriptor()))
    }

    /// Builds a search over `catalog`, registers it there as `search_tools`, and
    /// returns it for keeping the index up to date.
    pub fn register_in(catalog: &mut Catalog) -> Result<Arc<SearchTools>, CatalogError> {
        let search = Arc::new(SearchTools::new(catalog));
        catalog.register(search.clone())?;
        Ok(search)
    }

    /// Leaves out the tools `policy` denies to the caller's principal (tier
    /// ceiling, scopes, denying rules). Tools that need approval stay in.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Leaves out the tools `filter` excludes for a caller.
    pub fn with_filter(
        mut self,
        filter: impl Fn(&Principal, &ToolDescriptor) -> Option<Exclusion> + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// Fuses `scorer`'s ranking with the lexical one (by [`Fusion::SCORES`] unless
    /// [`with_fusion`](Self::with_fusion) says otherwise), and syncs it to the tools
    /// indexed so far; later inserts and removals reach it too.
    pub fn with_scorer(mut self, scorer: Arc<dyn CatalogScorer>) -> Self {
        {
            let indexed = self.read();
            let tools: Vec<&ToolDescriptor> = indexed.tools.values().collect();
            scorer.sync(&tools);
        }
        self.scorer = Some(scorer);
        self
    }

    /// How the scorer's opinion is fused with the lexical ranking.
    pub fn with_fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
        self
    }

    /// Indexes `tool`, replacing one of the same name. `search_tools` itself is never indexed.
    pub fn insert(&self, tool: &ToolDescriptor) {
        if tool.name == SEARCH_TOOLS {
            return;
        }
        // Embedded before the index is locked: searches go on meanwhile.
        if let Some(scorer) = &self.scorer {
            scorer.insert(tool);
        }
        let mut indexed = self.write();
        indexed.index.insert(tool);
        indexed.tools.insert(tool.name.clone(), tool.clone());
    }

    /// Drops the tool named `name` from the index; returns whether it was there.
    pub fn remove(&self, name: &str) -> bool {
        if let Some(scorer) = &self.scorer {
            scorer.remove(name);
        }
        let mut indexed = self.write();
        indexed.tools.remove(name);
        indexed.index.remove(name)
    }

    /// How many tools are searchable.
    pub fn len(&self) -> usize {
        self.read().index.len()
    }

    /// Whether no tool is searchable (an empty catalog, or every tool left out).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Why `principal` may not see `tool` in results, if it may not.
    pub fn exclusion(&self, principal: &Principal, tool: &ToolDescriptor) -> Option<Exclusion> {
        self.exclusion_in(principal, None, tool)
    }

    /// [`exclusion`](Self::exclusion) in a conversation whose flow stands at `flow`.
    fn exclusion_in(
        &self,
        principal: &Principal,
        flow: Option<&FlowView>,
        tool: &ToolDescriptor,
    ) -> Option<Exclusion> {
        if !principal.sees(tool) {
            return Some(Exclusion::NotPermitted);
        }
        if let Some(ToolStatus::Blocked { .. }) = flow.and_then(|view| view.tools.get(&tool.name)) {
            return Some(Exclusion::FlowBlocked);
        }
        if let Some(policy) = &self.policy
            && policy.decide(tool, principal).decision == Decision::Deny
        {
            return Some(Exclusion::NotPermitted);
        }
        self.filter.as_ref().and_then(|f| f(principal, tool))
    }

    /// The best `k` tools for `query` that `principal` may use; with
    /// `include_excluded`, the others too, marked (for operators).
    pub fn search(
        &self,
        principal: &Principal,
        query: &str,
        k: usize,
        include_excluded: bool,
    ) -> Vec<Hit> {
        self.search_in(principal, None, query, k, include_excluded)
    }

    /// [`search`](Self::search) in a conversation whose flow stands at `flow`: the
    /// tools it blocks now are left out too.
    pub fn search_in(
        &self,
        principal: &Principal,
        flow: Option<&FlowView>,
        query: &str,
        k: usize,
        include_excluded: bool,
    ) -> Vec<Hit> {
        let indexed = self.read();
        let filter = |name: &str| {
            indexed
                .tools
                .get(name)
                .and_then(|tool| self.exclusion_in(principal, flow, tool))
        };
        let mut request = SearchRequest::new(query)
            .k(k)
            .filter(&filter)
            .include_excluded(include_excluded);
        if let Some(scorer) = &self.scorer {
            request = request.scorer(&**scorer).fusion(self.fusion);
        }
        indexed.index.search(&request)
    }

    /// What the tool returns for `query`: the found tools' names, descriptions and
    /// usage guidance.
    pub fn find(&self, principal: &Principal, query: &str, k: usize) -> Value {
        self.find_in(principal, None, query, k)
    }

    /// [`find`](Self::find) in a conversation whose flow stands at `flow`.
    pub fn find_in(
        &self,
        principal: &Principal,
        flow: Option<&FlowView>,
        query: &str,
        k: usize,
    ) -> Value {
        let hits = self.search_in(principal, flow, query, k, false);
        let indexed = self.read();
        found_tools(&hits, |name| indexed.tools.get(name))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Indexed> {
        self.indexed.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Indexed> {
        self.indexed.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl DynTool for SearchTools {
    fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let input: SearchToolsInput = serde_json::from_value(input).map_err(|e| {
                ToolError::invalid_input(format!(
                    "{e}; call `{SEARCH_TOOLS}` with {{\"query\": \"what you want to do\", \"k\": 5}}"
                ))
            })?;
            if input.query.trim().is_empty() {
                return Err(ToolError::invalid_input(
                    "`query` is empty; say in a few words what you want to do",
                ));
            }
            let k = input.k();
            let query = input.query;
            // Lexical search (no scorer) or no runtime to lend a thread: here.
            let runtime = self
                .scorer
                .as_ref()
                .and_then(|_| tokio::runtime::Handle::try_current().ok());
            let Some(runtime) = runtime else {
                return Ok(self.find_in(ctx.principal(), ctx.flow_view(), &query, k));
            };
            let (search, principal) = (self.clone(), ctx.principal().clone());
            let flow = ctx.flow_view().cloned();
            runtime
                .spawn_blocking(move || search.find_in(&principal, flow.as_ref(), &query, k))
                .await
                .map_err(|e| ToolError::permanent(format!("the search failed: {e}")))
        })
    }

    fn reads_flow(&self) -> bool {
        true
    }
}

impl std::fmt::Debug for SearchTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchTools")
            .field("tools", &self.len())
            .field("policy", &self.policy.is_some())
            .field("filter", &self.filter.is_some())
            .finish()
    }
}
