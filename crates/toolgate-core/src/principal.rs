//! Who is calling: an identity, the highest tier it may reach, and the tools it may name.

use serde::{Deserialize, Serialize};

use crate::{Tier, ToolDescriptor};

/// The caller of a tool. `scopes` are tool-name patterns: an exact name, a
/// namespace wildcard `ns.*`, or `*` for every tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub id: String,
    pub ceiling: Tier,
    pub scopes: Vec<String>,
}

impl Principal {
    /// A principal that may reach every tier and every tool: the local operator.
    pub fn operator() -> Self {
        Principal {
            id: "operator".into(),
            ceiling: Tier::External,
            scopes: vec!["*".into()],
        }
    }

    /// Whether any scope admits `tool`.
    pub fn has_scope_for(&self, tool: &str) -> bool {
        self.scopes.iter().any(|scope| scope_matches(scope, tool))
    }

    /// Whether `tool` is in this principal's view: within its tier ceiling and its
    /// scopes. A tool outside its view does not exist for it: a call is refused
    /// as unknown, and its name is never suggested.
    pub fn sees(&self, tool: &ToolDescriptor) -> bool {
        tool.effect.tier() <= self.ceiling && self.has_scope_for(&tool.name)
    }

    /// Whether words for this principal may name `name`, whose descriptor is
    /// `tool` when the catalog has one: a tool in its view, or a name no tool
    /// has (a flow may name one) that a scope admits. Flow reasons and digests
    /// say "a step you cannot take" in place of any other name.
    pub fn may_name(&self, name: &str, tool: Option<&ToolDescriptor>) -> bool {
        match tool {
            Some(tool) => self.sees(tool),
            None => self.has_scope_for(name),
        }
    }
}

impl Default for Principal {
    fn default() -> Self {
        Principal::operator()
    }
}

/// A principal declared in a spec file's `principals:` section, keyed by its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrincipalSpec {
    /// The highest tier it may reach (default `read`).
    #[serde(default = "read_tier")]
    pub ceiling: Tier,
    /// Tool-name patterns it may call: a name, `ns.*` or `*` (default `*`).
    #[serde(default = "every_tool")]
    pub scopes: Vec<String>,
    /// Which OAuth access tokens call as this principal: claim name → value,
    /// every one of which must hold. A claim holds when it equals the value, or
    /// is an array containing it; `scope` holds when the value is one of the
    /// token's space-separated scopes. E.g. `{client_id: helpdesk-widget}` or
    /// `{groups: support}`.
    #[serde(
        default,
        rename = "match",
        skip_serializing_if = "indexmap::IndexMap::is_empty"
    )]
    pub match_claims: indexmap::IndexMap<String, String>,
}

fn read_tier() -> Tier {
    Tier::Read
}

fn every_tool() -> Vec<String> {
    vec!["*".into()]
}

impl PrincipalSpec {
    /// Whether a token with `claims` calls as this principal (see `match`); a
    /// principal without `match` takes no token.
    pub fn matches_claims(&self, claims: &serde_json::Map<String, serde_json::Value>) -> bool {
        use serde_json::Value;
        !self.match_claims.is_empty()
            && self
                .match_claims
                .iter()
                .all(|(name, wanted)| match claims.get(name) {
                    Some(Value::String(s)) if name == "scope" => s.split(' ').any(|v| v == wanted),
                    Some(Value::String(s)) => s == wanted,
                    Some(Value::Array(values)) => values.iter().any(|v| v.as_str() == Some(wanted)),
                    Some(Value::Bool(b)) => b.to_string() == *wanted,
                    Some(Value::Number(n)) => n.to_string() == *wanted,
                    _ => false,
                })
    }

    pub fn to_principal(&self, id: &str) -> Principal {
        Principal {
            id: id.to_owned(),
            ceiling: self.ceiling,
            scopes: self.scopes.clone(),
        }
    }
}

/// `*` admits everything, `ns.*` admits every tool under `ns.` (nested too), any
/// other scope admits exactly that name.
pub fn scope_matches(scope: &str, tool: &str) -> bool {
    match scope.strip_suffix('*') {
        Some("") => true,
        Some(prefix) if prefix.ends_with('.') => tool.starts_with(prefix),
        _ => scope == tool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_match_exactly_by_namespace_or_everything() {
        assert!(scope_matches("*", "github.create_issue"));
        assert!(scope_matches("github.*", "github.create_issue"));
        assert!(scope_matches("github.*", "github.repos.list"));
        assert!(!scope_matches("github.*", "githubx.create_issue"));
        assert!(!scope_matches("github.*", "github"));
        assert!(scope_matches("lookup_order", "lookup_order"));
        assert!(!scope_matches("lookup_order", "lookup_orders"));
    }
}
