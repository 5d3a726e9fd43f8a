//! What `check` says about where a spec file connects and what it sends there:
//! `network.allow` entries that open every port on this machine, MCP server URLs
//! the policy will refuse, and literal secrets in a request body. (`${env.NAME}` in
//! a URL's host is refused with placeholders there, by the URL rule.)
//!
//! These sit beside the other rules as one function, [`check_network_use`], so the
//! rules of bindings and of the network policy stay in one place.

use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::document::{Document, pointer_segment};
use super::mcp_servers::env_references;
use super::model::{McpBinding, SpecFile};
use super::network::{AllowEntry, NetworkPolicy, suggested_entry};

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
