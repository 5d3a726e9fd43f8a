//! Who is calling: an identity, the highest tier it may reach, and the tools it may name.

use serde::{Deserialize, Serialize};

use crate::{Tier, ToolDescriptor};

/// The caller of a tool. `scopes` are tool-name patterns: an exact name, a
/// namespace wildcard `ns.*`, or `*` for every tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The name the spec file gives it; the audit log records calls under it.
    pub id: String,
    /// The highest tier it may call; tools above it are out of its view.
    pub ceiling: Tier,
    /// The tool-name patterns it may name; a tool matching none is out of its view.
    pub scopes: Vec<String>,
    /// What the caller's credential says of it, for policy rules' `claim:` tests:
    /// an OAuth access token's claims, or an API key's `key_id` and `key_label`.
    /// Empty for a caller without a credential.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub claims: Claims,
}

/// A credential's claims, shared: a principal is cloned for every call, and its
/// claims are read, never changed, once the credential is checked.
pub type Claims = std::sync::Arc<serde_json::Map<String, serde_json::Value>>;

impl Principal {
    /// A principal that may reach every tier and every tool: the local operator.
    pub fn operator() -> Self {
        Principal {
            id: "operator".into(),
            ceiling: Tier::External,
            scopes: vec!["*".into()],
            claims: Default::default(),
        }
    }

    /// Whether any scope admits `tool`.
    pub fn has_scope_for(&self, tool: &str) -> bool {
        self.scopes.iter().any(|scope| scope_matches(scope, tool))
    }

    /// This principal narrowed to the tools `patterns` (scopes of the same form)
    /// also admit: a tool is in the result's scopes exactly when both this
    /// principal's scopes and `patterns` admit it, so a credential carrying
    /// `patterns` can narrow its principal but never widen it. No patterns
    /// leave no tools.
    pub fn narrowed_to(&self, patterns: &[String]) -> Principal {
        let mut scopes: Vec<String> = Vec::new();
        for mine in &self.scopes {
            for theirs in patterns {
                if let Some(both) = intersect(mine, theirs)
                    && !scopes.iter().any(|s| s == both)
                {
                    scopes.push(both.to_owned());
                }
            }
        }
        Principal {
            scopes,
            ..self.clone()
        }
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
    /// The tools whose waiting calls it may approve or deny with `toolgate
    /// approvals --as ID`: patterns as in `scopes` (`["*"]` for every tool).
    /// Once any principal has `approve`, only such principals may answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
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
        !self.match_claims.is_empty()
            && self
                .match_claims
                .iter()
                .all(|(name, wanted)| claim_holds(claims, name, wanted))
    }

    /// The principal this entry declares under the name `id`, with no claims yet
    /// (a credential adds them).
    pub fn to_principal(&self, id: &str) -> Principal {
        Principal {
            id: id.to_owned(),
            ceiling: self.ceiling,
            scopes: self.scopes.clone(),
            claims: Default::default(),
        }
    }
}

/// Whether the claim `name` holds `wanted`: it equals it, or is an array holding
/// it; `scope` holds when `wanted` is one of its space-separated scopes.
pub(crate) fn claim_holds(
    claims: &serde_json::Map<String, serde_json::Value>,
    name: &str,
    wanted: &str,
) -> bool {
    use serde_json::Value;
    match claims.get(name) {
        Some(Value::String(s)) if name == "scope" => s.split(' ').any(|v| v == wanted),
        Some(Value::String(s)) => s == wanted,
        Some(Value::Array(values)) => values.iter().any(|v| v.as_str() == Some(wanted)),
        Some(Value::Bool(b)) => b.to_string() == *wanted,
        Some(Value::Number(n)) => n.to_string() == *wanted,
        _ => false,
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

/// The scope admitting exactly the tools both `a` and `b` admit, if any does:
/// each is every tool (`*`), a namespace (`ns.*`) or one name, so the common
/// part of two is always one of the two.
fn intersect<'a>(a: &'a str, b: &'a str) -> Option<&'a str> {
    let namespace = |s: &'a str| s.strip_suffix('*').filter(|p| p.ends_with('.'));
    match (a, b) {
        ("*", _) => Some(b),
        (_, "*") => Some(a),
        _ => match (namespace(a), namespace(b)) {
            (Some(p), Some(q)) if p.starts_with(q) => Some(a),
            (Some(p), Some(q)) if q.starts_with(p) => Some(b),
            (Some(_), Some(_)) => None,
            (Some(_), None) => scope_matches(a, b).then_some(b),
            (None, Some(_)) => scope_matches(b, a).then_some(a),
            (None, None) => (a == b).then_some(a),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn principal(scopes: &[&str]) -> Principal {
        Principal {
            id: "p".into(),
            ceiling: Tier::Write,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            claims: Default::default(),
        }
    }

    fn strings(scopes: &[&str]) -> Vec<String> {
        scopes.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn narrowing_keeps_what_both_admit_and_never_widens() {
        let everything = principal(&["*"]);
        assert_eq!(
            everything
                .narrowed_to(&strings(&["github.*", "lookup"]))
                .scopes,
            ["github.*", "lookup"]
        );
        let github = principal(&["github.*", "lookup"]);
        assert_eq!(
            github.narrowed_to(&strings(&["*"])).scopes,
            ["github.*", "lookup"]
        );
        assert_eq!(
            github
                .narrowed_to(&strings(&["github.repos.*", "github.create_issue"]))
                .scopes,
            ["github.repos.*", "github.create_issue"]
        );
        assert!(
            github
                .narrowed_to(&strings(&["fs.*", "update"]))
                .scopes
                .is_empty()
        );
        assert!(github.narrowed_to(&[]).scopes.is_empty());
        let narrowed = github.narrowed_to(&strings(&["lookup"]));
        assert_eq!((narrowed.id.as_str(), narrowed.ceiling), ("p", Tier::Write));
    }

    fn pattern() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_owned()),
            "[ab](\\.[ab]){0,2}\\.\\*",
            "[ab](\\.[ab]){0,2}",
            "[ab]\\*",
        ]
    }

    proptest! {
        #[test]
        fn a_narrowed_principal_admits_a_tool_exactly_when_both_sides_do(
            mine in proptest::collection::vec(pattern(), 0..4),
            theirs in proptest::collection::vec(pattern(), 0..4),
            tool in "[ab](\\.[ab]){0,3}|[ab]\\*",
        ) {
            let principal = Principal {
                id: "p".into(),
                ceiling: Tier::Read,
                scopes: mine,
                claims: Default::default(),
            };
            let narrowed = principal.narrowed_to(&theirs);
            let both = principal.has_scope_for(&tool)
                && theirs.iter().any(|scope| scope_matches(scope, &tool));
            prop_assert_eq!(narrowed.has_scope_for(&tool), both);
        }
    }

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
