//! Loading a spec file from someone else: bindings outside the operator's allow-list
//! become mocks, and each downgrade is reported.
//!
//! A spec file can reach the network (`http:`, `mcp:` URLs), start programs
//! (`mcp:` commands) and read the environment into headers. A file whose author is
//! not trusted must not choose where its bindings go, so [`sandbox`] ignores the
//! file's own `network:` section, keeps only bindings whose host the operator's
//! allow-list accepts without resolving anything, and replaces the rest with the
//! tool's mock. The declarations the model sees do not change.

use serde::Serialize;
use toolgate_core::spec::{
    BindingKind, McpBinding, NetworkPolicy, NetworkSection, SpecFile, default_port,
    literal_authority,
};

use super::secrets::{mask_binding, mask_url};

/// A binding that [`sandbox`] replaced with the tool's mock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Downgrade {
    /// The tool's name.
    pub tool: String,
    /// What it was bound to.
    pub binding: BindingKind,
    /// Where the binding would have gone: a URL (secrets masked) or a command line.
    pub target: String,
    /// Why it was not kept.
    pub reason: String,
}

/// `spec` with every binding outside `allow` downgraded to its mock, and the list of
/// downgrades. The result's `network:` section is `allow` itself, so at run time
/// the kept bindings (and their redirects) stay inside it.
///
/// A binding is kept when its host is listed by name in `allow`, or is an IP
/// literal the allow-list accepts; with `allow.allow_public`, a host name that is
/// not listed is kept too (it is checked when it resolves). Command-line MCP servers
/// are always downgraded: they run programs on this machine.
///
/// ```
/// use toolgate::http::sandbox;
/// use toolgate::spec::{NetworkSection, SpecFile};
///
/// let foreign: SpecFile = serde_json::from_value(serde_json::json!({"tools": [{
///     "name": "fetch", "description": "Fetch.", "http": {"url": "http://169.254.169.254/latest"}
/// }]})).unwrap();
/// let (safe, downgrades) = sandbox(&foreign, &NetworkSection { allow: vec![], allow_public: false });
/// assert!(safe.tools[0].http.is_none());
/// assert_eq!(downgrades[0].tool, "fetch");
/// ```
pub fn sandbox(spec: &SpecFile, allow: &NetworkSection) -> (SpecFile, Vec<Downgrade>) {
    let policy = NetworkPolicy::new(allow);
    let mut safe = spec.clone();
    safe.network = allow.clone();
    let mut downgrades = Vec::new();
    for tool in &mut safe.tools {
        if let Some(http) = &tool.http {
            let target = format!("{} {}", http.method.as_str(), mask_binding(http).url);
            if let Some(reason) = refusal(&policy, allow, &http.url) {
                downgrades.push(Downgrade {
                    tool: tool.name.clone(),
                    binding: BindingKind::Http,
                    target,
                    reason,
                });
                tool.http = None;
            }
        }
        if let Some(mcp) = &tool.mcp {
            let (target, reason) = match mcp {
                McpBinding::Short(s) if is_url(s) => (s.clone(), refusal(&policy, allow, s)),
                McpBinding::Full(server) if let Some(url) = &server.url => {
                    (url.clone(), refusal(&policy, allow, url))
                }
                McpBinding::Short(command) => (command.clone(), Some(COMMAND_REASON.into())),
                McpBinding::Full(server) => {
                    let mut line = server.command.clone().unwrap_or_default();
                    for arg in &server.args {
                        line.push(' ');
                        line.push_str(arg);
                    }
                    (line, Some(COMMAND_REASON.into()))
                }
            };
            if let Some(reason) = reason {
                downgrades.push(Downgrade {
                    tool: tool.name.clone(),
                    binding: BindingKind::Mcp,
                    target: masked_url(&target),
                    reason,
                });
                tool.mcp = None;
            }
        }
    }
    (safe, downgrades)
}

const COMMAND_REASON: &str = "it starts a program on this machine";

fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

fn masked_url(target: &str) -> String {
    if is_url(target) {
        mask_url(target)
    } else {
        target.to_owned()
    }
}

/// Why a binding to `url` is not kept; `None` when it is.
fn refusal(policy: &NetworkPolicy, allow: &NetworkSection, url: &str) -> Option<String> {
    let Some((host, port)) = literal_host(url) else {
        return Some("its URL names no host the sandbox can check".into());
    };
    if policy.allows_statically(&host, port) {
        return None;
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let is_literal = bare.parse::<std::net::IpAddr>().is_ok();
    if allow.allow_public && !is_literal {
        return None;
    }
    Some(format!("`{host}` is not in the allow-list"))
}

/// The host a URL template names, from its literal authority, and the port it
/// connects to.
fn literal_host(url: &str) -> Option<(String, u16)> {
    let (scheme, host, port) = literal_authority(url)?;
    let port = port.or_else(|| default_port(scheme))?;
    Some((host.to_ascii_lowercase(), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn foreign() -> SpecFile {
        serde_json::from_value(json!({
            "network": {"allow": ["0.0.0.0/0", "::/0"]},
            "tools": [
                {"name": "ok", "description": "d", "http": {"url": "https://api.example.com/v1/{args.x}"}},
                {"name": "meta", "description": "d", "http": {"url": "http://169.254.169.254/latest"}},
                {"name": "other", "description": "d", "http": {"url": "https://other.example.com/"}},
                {"name": "local", "description": "d", "mcp": "npx -y some-server"},
                {"name": "remote", "description": "d", "mcp": {"url": "https://api.example.com/mcp"}},
                {"name": "mock", "description": "d"},
            ]
        }))
        .unwrap()
    }

    #[test]
    fn only_bindings_the_allow_list_names_are_kept() {
        let allow = NetworkSection {
            allow: vec!["api.example.com".into()],
            allow_public: false,
        };
        let (safe, downgrades) = sandbox(&foreign(), &allow);
        let kept: Vec<(&str, BindingKind)> = safe
            .tools
            .iter()
            .map(|t| (t.name.as_str(), t.binding_kind()))
            .collect();
        assert_eq!(
            kept,
            [
                ("ok", BindingKind::Http),
                ("meta", BindingKind::Mock),
                ("other", BindingKind::Mock),
                ("local", BindingKind::Mock),
                ("remote", BindingKind::Mcp),
                ("mock", BindingKind::Mock),
            ]
        );
        let reasons: Vec<(&str, &str)> = downgrades
            .iter()
            .map(|d| (d.tool.as_str(), d.reason.as_str()))
            .collect();
        assert_eq!(
            reasons,
            [
                ("meta", "`169.254.169.254` is not in the allow-list"),
                ("other", "`other.example.com` is not in the allow-list"),
                ("local", COMMAND_REASON),
            ]
        );
        assert_eq!(
            safe.network, allow,
            "the file's own network section is replaced"
        );
    }

    #[test]
    fn public_hosts_stay_when_the_operator_allows_public_addresses() {
        let (safe, downgrades) = sandbox(&foreign(), &NetworkSection::default());
        assert_eq!(safe.tools[2].binding_kind(), BindingKind::Http);
        assert_eq!(
            downgrades
                .iter()
                .map(|d| d.tool.as_str())
                .collect::<Vec<_>>(),
            ["meta", "local"]
        );
    }

    #[test]
    fn hosts_are_read_from_the_literal_authority() {
        assert_eq!(
            literal_host("https://u:p@API.example.com:8443/x"),
            Some(("api.example.com".into(), 8443))
        );
        assert_eq!(literal_host("http://[::1]/"), Some(("[::1]".into(), 80)));
        assert_eq!(literal_host("https://{args.h}/"), None);
        assert_eq!(literal_host("no-scheme"), None);
    }
}
