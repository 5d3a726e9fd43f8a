//! What `check` says about where a spec file connects and what it sends there:
//! `network.allow` entries that open every port on this machine or reach the local
//! link and cloud metadata services, MCP server URLs the policy will refuse, and
//! literal secrets in a request body. (`${env.NAME}` in
//! a URL's host is refused with placeholders there, by the URL rule.)
//!
//! These sit beside the other rules as one function, [`check_network_use`], so the
//! rules of bindings and of the network policy stay in one place.

use serde_json::Value;

use super::address::{AddressClass, IpCidr, classify};
use super::diagnostic::Diagnostic;
use super::document::{Document, pointer_segment};
use super::mcp_servers::env_references;
use super::model::{McpBinding, SpecFile};
use super::network::{
    AllowEntry, AllowTarget, METADATA_ADDRESSES, METADATA_HOSTS, NetworkPolicy, suggested_entry,
};

/// Every problem of this kind in `spec`; `spec.tools[k]` stands at
/// `/tools/{positions[k]}` in `doc`.
pub(super) fn check_network_use(
    doc: &Document,
    spec: &SpecFile,
    positions: &[usize],
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut push = |d: Diagnostic| {
        let span = doc.value_span(&d.path);
        out.push(d.with_span(span));
    };
    for (i, text) in spec.network.allow.iter().enumerate() {
        if let Ok(entry) = AllowEntry::parse(text)
            && entry.opens_every_loopback_port()
        {
            push(port_less_loopback(&format!("/network/allow/{i}"), &entry));
        }
        if let Ok(entry) = AllowEntry::parse(text)
            && let Some(d) = link_local_or_metadata(&format!("/network/allow/{i}"), &entry)
        {
            push(d);
        }
    }
    let policy = NetworkPolicy::new(&spec.network);
    for (namespace, server) in &spec.mcp_servers {
        if let Some(url) = &server.url
            && server.command.is_none()
        {
            let path = format!("/mcp_servers/{}/url", pointer_segment(namespace));
            if let Some(d) = refused_url(&policy, &path, url, "the server will not be connected") {
                push(d);
            }
        }
    }
    for (tool, &i) in spec.tools.iter().zip(positions) {
        let at = format!("/tools/{i}");
        let mcp_url = match &tool.mcp {
            Some(McpBinding::Short(s)) if s.starts_with("http://") || s.starts_with("https://") => {
                Some((format!("{at}/mcp"), s.as_str()))
            }
            Some(McpBinding::Full(server)) => server
                .url
                .as_deref()
                .map(|url| (format!("{at}/mcp/url"), url)),
            _ => None,
        };
        if let Some((path, url)) = mcp_url
            && let Some(d) = refused_url(&policy, &path, url, "calls will be refused")
        {
            push(d);
        }
        let Some(http) = &tool.http else { continue };
        if let Some(body) = &http.body {
            let mut found = Vec::new();
            literal_secrets(body, format!("{at}/http/body"), &mut found);
            for (path, key) in found {
                push(
                    Diagnostic::warning(
                        &path,
                        format!("`{key}` in the request body holds a secret written into the spec file"),
                    )
                    .with_help(format!(
                        "keep it in an environment variable: `{key}: \"${{env.NAME}}\"` (it is then masked wherever the request shows)"
                    )),
                );
            }
        }
    }
    out
}

/// A warning for an entry that opens every port of this machine.
fn port_less_loopback(path: &str, entry: &AllowEntry) -> Diagnostic {
    let example = match &entry.target {
        super::network::AllowTarget::Range(cidr) if cidr.is_single() => AllowEntry {
            target: entry.target.clone(),
            port: Some(8080),
        }
        .to_string(),
        super::network::AllowTarget::Host(host) => format!("{host}:8080"),
        _ => "127.0.0.1:8080".to_owned(),
    };
    Diagnostic::warning(
        path,
        format!(
            "`{entry}` opens every port on this machine: a redirect from one allowed local service reaches all the others"
        ),
    )
    .with_help(format!(
        "name the port the bindings use, e.g. `{example}`; an entry with a port opens that port only"
    ))
}

/// A warning for an entry that opens a cloud metadata service or link-local
/// addresses (169.254.0.0/16, fe80::/10), where metadata services answer: a call a
/// model is talked into making there can leak the machine's cloud credentials.
fn link_local_or_metadata(path: &str, entry: &AllowEntry) -> Option<Diagnostic> {
    let metadata = match &entry.target {
        AllowTarget::Range(cidr) => METADATA_ADDRESSES
            .iter()
            .find(|a| cidr.contains(**a))
            .map(ToString::to_string),
        _ => METADATA_HOSTS
            .iter()
            .find(|h| entry.names_host(h))
            .map(|h| (*h).to_owned()),
    };
    if let Some(service) = metadata {
        return Some(
            Diagnostic::warning(
                path,
                format!(
                    "`{entry}` lets bindings reach the cloud metadata service at {service}, which hands out this machine's cloud credentials"
                ),
            )
            .with_help(
                "remove it: no tool needs the metadata service, and a call a model is talked into making there leaks the credentials; for an API on another address, list that address with its port",
            ),
        );
    }
    let AllowTarget::Range(cidr) = &entry.target else {
        return None;
    };
    let link_local = ["169.254.0.0/16", "fe80::/10"]
        .into_iter()
        .filter_map(|r| IpCidr::parse(r).ok())
        .any(|ll| ll.contains(cidr.network()) || cidr.contains(ll.network()))
        || classify(cidr.network()) == AddressClass::LinkLocal;
    if !link_local {
        return None;
    }
    let (message, help) = if cidr.is_single() && entry.port.is_some() {
        (
            format!("`{entry}` is a link-local address, the kind cloud metadata services answer on"),
            "keep it only if a tool calls a service on the local link; it opens that one port of that one address".to_owned(),
        )
    } else {
        (
            format!(
                "`{entry}` opens link-local addresses (169.254.0.0/16, fe80::/10), where cloud metadata services answer with this machine's credentials"
            ),
            "remove it, or if a tool calls a service on the local link, list that service's address with its port (e.g. `169.254.10.5:8080`)".to_owned(),
        )
    };
    Some(Diagnostic::warning(path, message).with_help(help))
}

/// A warning for a URL whose literal host (and port) the policy refuses.
fn refused_url(
    policy: &NetworkPolicy,
    path: &str,
    url: &str,
    consequence: &str,
) -> Option<Diagnostic> {
    let refusal = policy.refusal_for_url(url)?;
    let entry = suggested_entry(url).unwrap_or_default();
    Some(
        Diagnostic::warning(path, format!("{consequence}: {refusal}")).with_help(format!(
            "add it under `network:`, e.g. `network: {{allow: [\"{entry}\"]}}`, if it is meant to be reached"
        )),
    )
}

/// Literal strings under secret keys (`password`, `api_key`, ...) of a body
/// template, with their JSON pointers; values that are placeholders or read the
/// environment are not literal.
fn literal_secrets(value: &Value, pointer: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let path = format!("{pointer}/{}", pointer_segment(key));
                match v {
                    Value::String(s) if crate::is_secret_key(key) && is_literal(s) => {
                        out.push((path, key.clone()));
                    }
                    _ => literal_secrets(v, path, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                literal_secrets(v, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Whether a string holds text of its own beyond placeholders and `${env.NAME}`.
fn is_literal(s: &str) -> bool {
    let mut rest = s.to_owned();
    for r in env_references(s).into_iter().rev() {
        rest.replace_range(r.range, "");
    }
    for p in super::template::placeholders(&rest.clone())
        .into_iter()
        .rev()
    {
        rest.replace_range(p.range, "");
    }
    rest.chars().count() >= 4
}

#[cfg(test)]
mod tests {
    use super::super::Severity;

    fn found(text: &str) -> Vec<(Severity, String, String)> {
        super::super::check(text)
            .diagnostics
            .into_iter()
            .map(|d| (d.severity, d.path, d.message))
            .collect()
    }

    #[test]
    fn a_port_less_loopback_entry_is_a_warning_and_a_port_silences_it() {
        let diagnostics =
            found("network: {allow: [\"127.0.0.1\", \"[::1]:8080\", localhost, api.internal]}\n");
        assert_eq!(
            diagnostics,
            [
                (
                    Severity::Warning,
                    "/network/allow/0".to_owned(),
                    "`127.0.0.1` opens every port on this machine: a redirect from one allowed local service reaches all the others".to_owned()
                ),
                (
                    Severity::Warning,
                    "/network/allow/2".to_owned(),
                    "`localhost` opens every port on this machine: a redirect from one allowed local service reaches all the others".to_owned()
                ),
            ]
        );
        assert!(found("network: {allow: [\"127.0.0.1:8080\", \"localhost:3000\"]}\n").is_empty());
    }

    #[test]
    fn link_local_and_cloud_metadata_entries_in_network_allow_are_warnings() {
        let text = "network:\n  allow:\n    - 169.254.169.254\n    - 169.254.0.0/16\n    - \"[fd00:ec2::254]:80\"\n    - metadata.google.internal\n    - 100.100.100.200\n    - fe80::/10\n    - \"169.254.10.5:8080\"\n    - \"*.google.internal\"\n    - 0.0.0.0/0\n    - 10.0.0.0/8\n    - api.internal\n    - \"127.0.0.1:8080\"\n";
        let checked = super::super::check(text);
        let diagnostics: Vec<_> = checked
            .diagnostics
            .iter()
            .map(|d| (d.severity, d.path.as_str(), d.message.as_str()))
            .collect();
        let metadata = |entry: &str, service: &str| {
            format!(
                "`{entry}` lets bindings reach the cloud metadata service at {service}, which hands out this machine's cloud credentials"
            )
        };
        let expected = [
            ("/network/allow/0", metadata("169.254.169.254", "169.254.169.254")),
            (
                "/network/allow/1",
                metadata("169.254.0.0/16", "169.254.169.254"),
            ),
            ("/network/allow/2", metadata("[fd00:ec2::254]:80", "fd00:ec2::254")),
            (
                "/network/allow/3",
                metadata("metadata.google.internal", "metadata.google.internal"),
            ),
            ("/network/allow/4", metadata("100.100.100.200", "100.100.100.200")),
            (
                "/network/allow/5",
                "`fe80::/10` opens link-local addresses (169.254.0.0/16, fe80::/10), where cloud metadata services answer with this machine's credentials".to_owned(),
            ),
            (
                "/network/allow/6",
                "`169.254.10.5:8080` is a link-local address, the kind cloud metadata services answer on".to_owned(),
            ),
            (
                "/network/allow/7",
                metadata("*.google.internal", "metadata.google.internal"),
            ),
            ("/network/allow/8", metadata("0.0.0.0/0", "169.254.169.254")),
        ];
        assert_eq!(
            diagnostics,
            expected
                .iter()
                .map(|(path, message)| (Severity::Warning, *path, message.as_str()))
                .collect::<Vec<_>>()
        );
        assert!(checked.diagnostics.iter().all(|d| {
            d.help
                .as_deref()
                .is_some_and(|h| h.starts_with("remove it") || h.starts_with("keep it only"))
        }));
    }

    #[test]
    fn an_mcp_server_url_the_policy_refuses_is_a_warning() {
        let text = "mcp_servers:\n  meta: {url: \"http://169.254.169.254/mcp\"}\n  local: {url: \"http://127.0.0.1:3000/mcp\"}\n  fine: {url: \"https://mcp.example.com/mcp\"}\ntools:\n  - {name: t, description: d, mcp: \"http://10.0.0.1/mcp\"}\n";
        let diagnostics = found(text);
        let paths: Vec<&str> = diagnostics.iter().map(|d| d.1.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/mcp_servers/meta/url",
                "/mcp_servers/local/url",
                "/tools/0/mcp"
            ]
        );
        assert!(
            diagnostics[0].2.starts_with(
                "the server will not be connected: 169.254.169.254 is a link-local address"
            ),
            "{}",
            diagnostics[0].2
        );
        assert!(diagnostics[2].2.starts_with("calls will be refused"));
        let allowed = format!("network: {{allow: [\"127.0.0.1:3000\"]}}\n{text}");
        let paths: Vec<String> = found(&allowed).into_iter().map(|d| d.1).collect();
        assert_eq!(paths, ["/mcp_servers/meta/url", "/tools/0/mcp"]);
    }

    #[test]
    fn env_in_a_url_origin_is_an_error_and_in_its_path_or_query_is_not() {
        let tool = |url: &str| {
            format!("tools:\n  - {{name: t, description: d, http: {{url: \"{url}\"}}}}\n")
        };
        for url in [
            "https://${env.API_HOST}/v1",
            "https://api.example.com:${env.PORT}/v1",
        ] {
            let diagnostics = found(&tool(url));
            assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
            assert_eq!(
                (
                    diagnostics[0].0,
                    diagnostics[0].1.as_str(),
                    diagnostics[0].2.as_str()
                ),
                (
                    Severity::Error,
                    "/tools/0/http/url",
                    "the URL's scheme, host or port reads the environment; they must be written in the spec file, where the network policy can read them"
                )
            );
        }
        assert!(
            found(&tool(
                "https://api.example.com/${env.TENANT}/v1?key=${env.KEY}"
            ))
            .is_empty()
        );
    }

    #[test]
    fn a_literal_secret_in_a_body_is_a_warning() {
        let text = "tools:\n  - name: t\n    description: d\n    http:\n      method: POST\n      url: https://api.example.com/login\n      body: {user: ada, password: hunter22, auth: {api_key: \"${env.KEY}\", token: \"{args.token}\"}}\n    parameters: {type: object, properties: {token: {type: string, writeOnly: true}}}\n";
        let diagnostics = found(text);
        assert_eq!(
            diagnostics,
            [(
                Severity::Warning,
                "/tools/0/http/body/password".to_owned(),
                "`password` in the request body holds a secret written into the spec file"
                    .to_owned()
            )]
        );
    }
}
