//! Prompts and resources of upstream MCP servers, passed on under their namespace.
//!
//! A prompt is listed as `NAMESPACE.NAME`; resources and resource templates keep
//! their URIs (a client reads by URI) and are named `NAMESPACE.NAME`. Reading a
//! resource asks the server that listed it, or else each server in turn. A
//! principal sees the namespaces its scopes reach (`*`, `ns.*` or a tool in `ns`).
//! What a server returns is passed on as it is: a client attaches prompts and
//! resources at its user's request, outside the tool calls the gate governs. Only
//! the protocol's own fields are filled in where an upstream server of an older
//! revision leaves them out: a result's `resultType` (rmcp strips it again for a
//! session client), and the `uri` a resource-not-found error names in its `data`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ErrorCode, GetPromptRequestParams, GetPromptResult, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, ResultType,
};
use rmcp::{ErrorData as McpError, Peer, RoleClient};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use toolgate_core::Principal;

/// Finds the connection to an upstream server by its namespace (it changes when
/// the server restarts).
pub type PeerLookup = Arc<dyn Fn(&str) -> Option<Peer<RoleClient>> + Send + Sync>;

/// The upstream servers whose prompts and resources are passed on.
pub(crate) struct Forwarded {
    namespaces: Vec<String>,
    peer: PeerLookup,
    /// Which namespace listed each resource URI, from the latest listing.
    owners: Mutex<HashMap<String, String>>,
}

/// What the upstream servers offer besides tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Offers {
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
}

impl Forwarded {
    pub(crate) fn new(namespaces: Vec<String>, peer: PeerLookup) -> Self {
        Forwarded {
            namespaces,
            peer,
            owners: Mutex::default(),
        }
    }

    /// Whether any connected server offers prompts or resources.
    pub(crate) fn offers(&self) -> Offers {
        let mut offers = Offers::default();
        for (_, peer) in self.peers(None) {
            if let Some(info) = peer.peer_info() {
                offers.prompts |= info.capabilities.prompts.is_some();
                offers.resources |= info.capabilities.resources.is_some();
            }
        }
        offers
    }

    /// The connected servers `principal` may reach (all of them without one).
    fn peers(&self, principal: Option<&Principal>) -> Vec<(&str, Peer<RoleClient>)> {
        self.namespaces
            .iter()
            .filter(|ns| principal.is_none_or(|p| reaches(p, ns)))
            .filter_map(|ns| Some((ns.as_str(), (self.peer)(ns)?)))
            .collect()
    }

    pub(crate) async fn list_prompts(&self, principal: &Principal) -> Vec<Prompt> {
        let mut out = Vec::new();
        for (ns, peer) in self.peers(Some(principal)) {
            if !offers(&peer).prompts {
                continue;
            }
            match peer.list_all_prompts().await {
                Ok(prompts) => out.extend(prompts.iter().filter_map(|p| renamed(p, ns))),
                Err(e) => tracing::warn!(server = ns, "cannot list its prompts: {e}"),
            }
        }
        out
    }

    pub(crate) async fn get_prompt(
        &self,
        principal: &Principal,
        mut request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, McpError> {
        let (ns, peer, name) = self
            .peers(Some(principal))
            .into_iter()
            .find_map(|(ns, peer)| {
                let name = request.name.strip_prefix(ns)?.strip_prefix('.')?.to_owned();
                Some((ns.to_owned(), peer, name))
            })
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "no prompt is named `{}`; prompts are named `SERVER.PROMPT` (see prompts/list)",
                        request.name
                    ),
                    None,
                )
            })?;
        request.name = name;
        let mut result = peer
            .get_prompt(request)
            .await
            .map_err(|e| upstream_error(&ns, "get the prompt", e))?;
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result)
    }

    pub(crate) async fn list_resources(&self, principal: &Principal) -> Vec<Resource> {
        let mut out = Vec::new();
        for (ns, peer) in self.peers(Some(principal)) {
            if !offers(&peer).resources {
                continue;
            }
            match peer.list_all_resources().await {
                Ok(resources) => {
                    let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
                    for resource in &resources {
                        owners.insert(resource.uri.clone(), ns.to_owned());
                    }
                    out.extend(resources.iter().filter_map(|r| renamed(r, ns)));
                }
                Err(e) => tracing::warn!(server = ns, "cannot list its resources: {e}"),
            }
        }
        out
    }

    pub(crate) async fn list_resource_templates(
        &self,
        principal: &Principal,
    ) -> Vec<ResourceTemplate> {
        let mut out = Vec::new();
        for (ns, peer) in self.peers(Some(principal)) {
            if !offers(&peer).resources {
                continue;
            }
            match peer.list_all_resource_templates().await {
                Ok(templates) => out.extend(templates.iter().filter_map(|t| renamed(t, ns))),
                Err(e) => tracing::warn!(server = ns, "cannot list its resource templates: {e}"),
            }
        }
        out
    }

    /// Reads `request.uri` from the server that listed it, else from the first
    /// server that has it.
    pub(crate) async fn read_resource(
        &self,
        principal: &Principal,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, McpError> {
        let owner = self
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&request.uri)
            .cloned();
        let mut peers = self.peers(Some(principal));
        peers.retain(|(_, peer)| offers(peer).resources);
        if let Some(owner) = &owner {
            peers.sort_by_key(|(ns, _)| *ns != owner.as_str());
        }
        let mut last = None;
        for (ns, peer) in peers {
            match peer.read_resource(request.clone()).await {
                Ok(mut result) => {
                    result.result_type.get_or_insert(ResultType::COMPLETE);
                    return Ok(result);
                }
                Err(e) => last = Some(upstream_error(ns, "read the resource", e)),
            }
        }
        let mut error = last.unwrap_or_else(|| {
            McpError::resource_not_found(
                format!(
                    "no MCP server behind toolgate has the resource `{}`",
                    request.uri
                ),
                None,
            )
        });
        name_missing_uri(&mut error, &request.uri);
        Err(error)
    }
}

fn offers(peer: &Peer<RoleClient>) -> Offers {
    peer.peer_info()
        .map(|info| Offers {
            prompts: info.capabilities.prompts.is_some(),
            resources: info.capabilities.resources.is_some(),
        })
        .unwrap_or_default()
}

/// Whether `principal`'s scopes reach anything in namespace `ns`.
fn reaches(principal: &Principal, ns: &str) -> bool {
    principal.scopes.iter().any(|scope| {
        scope == "*"
            || scope
                .strip_prefix(ns)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// `item` with its `name` put under `ns`.
fn renamed<T: Serialize + DeserializeOwned>(item: &T, ns: &str) -> Option<T> {
    let mut value = serde_json::to_value(item).ok()?;
    let name = value.get("name").and_then(Value::as_str)?.to_owned();
    value["name"] = Value::String(format!("{ns}.{name}"));
    serde_json::from_value(value).ok()
}

/// A resource-not-found error names the URI it could not find in `data.uri`
/// (SEP-2164), whether it is toolgate's own or an upstream server's that left it out.
fn name_missing_uri(error: &mut McpError, uri: &str) {
    if error.code != ErrorCode::RESOURCE_NOT_FOUND {
        return;
    }
    match &mut error.data {
        None => error.data = Some(serde_json::json!({ "uri": uri })),
        Some(Value::Object(data)) => {
            data.entry("uri").or_insert_with(|| uri.into());
        }
        // Something else the server said: kept as it is.
        Some(_) => {}
    }
}

fn upstream_error(ns: &str, what: &str, error: rmcp::service::ServiceError) -> McpError {
    match error {
        rmcp::service::ServiceError::McpError(mut e) => {
            e.message = format!("MCP server `{ns}`: {}", e.message).into();
            e
        }
        other => McpError::internal_error(
            format!("cannot {what} from MCP server `{ns}`: {other}"),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_core::Tier;

    fn principal(scopes: &[&str]) -> Principal {
        Principal {
            id: "p".into(),
            ceiling: Tier::Read,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            claims: Default::default(),
        }
    }

    #[test]
    fn a_principal_reaches_the_namespaces_its_scopes_name() {
        assert!(reaches(&principal(&["*"]), "fs"));
        assert!(reaches(&principal(&["fs.*"]), "fs"));
        assert!(reaches(&principal(&["fs.read_text_file"]), "fs"));
        assert!(!reaches(&principal(&["fsx.*"]), "fs"));
        assert!(!reaches(&principal(&["search_kb"]), "fs"));
    }

    #[test]
    fn a_prompt_is_renamed_under_its_namespace() {
        let prompt: Prompt = serde_json::from_value(
            serde_json::json!({"name": "review", "description": "Review code."}),
        )
        .unwrap();
        let renamed = renamed(&prompt, "git").unwrap();
        assert_eq!(renamed.name, "git.review");
        assert_eq!(renamed.description.as_deref(), Some("Review code."));
    }
}
