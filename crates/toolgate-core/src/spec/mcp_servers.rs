//! The `mcp_servers:` section: MCP servers whose tools join the catalog under a
//! namespace, the `${env.NAME}` references their settings may hold, and the checks.
//!
//! ```yaml
//! mcp_servers:
//!   fs:                                   # tools become `fs.read_text_file`, ...
//!     command: npx
//!     args: [-y, "@modelcontextprotocol/server-filesystem", /srv/docs]
//!     effects: {read_text_file: read}     # the operator's word beats the server's hints
//!   github:
//!     url: https://mcp.example.com/mcp
//!     headers: {Authorization: "Bearer ${env.GITHUB_TOKEN}"}
//!     timeouts: {connect: 10s, call: 2m}
//! ```
//!
//! Resolving references reads the environment, so it happens in the runtime:
//! [`expand_env`] takes the lookup as a function and stays pure.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diagnostic::{Diagnostic, did_you_mean};
use super::document::{Document, pointer_segment};
use super::model::SpecFile;
use crate::Effect;

/// One upstream MCP server: a program spoken to over stdio (`command`), or a running
/// server's streamable HTTP endpoint (`url`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// The program to start; toolgate speaks MCP to it over stdin and stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment for the program, on top of `PATH`, `HOME`, `USER`, `LOGNAME`,
    /// `SHELL` and `TERM` (nothing else is inherited); values may reference `${env.NAME}`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// The working directory of the program (default: the spec file's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A running server's streamable HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request; values may reference `${env.NAME}`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// Effects by the tool's name on the server; they replace what the server's
    /// annotations suggest (without an entry, no hints read as `external`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub effects: IndexMap<String, Effect>,
    /// What each tool's result brings into a conversation, by the tool's name
    /// on the server (`*`: every tool); without an entry, `untrusted`. Write
    /// `trusted` for a server whose results no third party writes.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub outputs: IndexMap<String, crate::ToolOutput>,
    /// What one call of each tool costs, for the budgets that count cost, by
    /// the tool's name on the server (`*`: every tool): as a tool's `cost:`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub costs: IndexMap<String, super::Cost>,
    /// How long to wait for the server.
    #[serde(default, skip_serializing_if = "McpTimeouts::is_empty")]
    pub timeouts: McpTimeouts,
    /// Which MCP revision to speak: `auto` (default: `server/discover` first,
    /// `initialize` if the server does not know it), `session` (the
    /// `initialize` handshake only: what a server needs to ask the calling
    /// client for sampling, elicitation or roots while a call runs) or
    /// `stateless` (2026-07-28 only).
    #[serde(default, skip_serializing_if = "UpstreamRevision::is_auto")]
    pub revision: UpstreamRevision,
    /// Whether `toolgate serve` is ready for traffic (`/readyz`) only while
    /// this server is connected or restarting (default: no; while it is down
    /// its tools are unavailable and the rest serve).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// Which MCP revision toolgate speaks to an upstream server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamRevision {
    /// `server/discover` first, `initialize` for servers of the session revisions.
    #[default]
    Auto,
    /// The `initialize` handshake of the session revisions only.
    Session,
    /// The stateless revision (2026-07-28) only.
    Stateless,
}

impl UpstreamRevision {
    /// Whether the revision is left to negotiation (the default, omitted when serialized).
    pub fn is_auto(&self) -> bool {
        *self == UpstreamRevision::Auto
    }
}

/// Time limits for an upstream server, as durations such as `500ms`, `30s` or `2m`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpTimeouts {
    /// Starting the server and the MCP handshake (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<String>,
    /// Listing its tools (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<String>,
    /// One tool call (default 30s; the gate's deadline for the call also applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

impl McpTimeouts {
    /// Whether no timeout is set, so every default applies.
    pub fn is_empty(&self) -> bool {
        self == &McpTimeouts::default()
    }
}

/// One `${env.NAME}` reference in a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvRef {
    /// The variable's name.
    pub name: String,
    /// Byte range of the whole `${env.NAME}`.
    pub range: std::ops::Range<usize>,
}

/// Every well-formed `${env.NAME}` in `s`, in order.
///
/// ```
/// use toolgate_core::spec::env_references;
/// let refs = env_references("Bearer ${env.TOKEN}");
/// assert_eq!(refs[0].name, "TOKEN");
/// assert_eq!(refs[0].range, 7..19);
/// ```
pub fn env_references(s: &str) -> Vec<EnvRef> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("${").map(|i| from + i) {
        let Some(close) = s[open..].find('}').map(|i| open + i) else {
            break;
        };
        from = open + 2;
        if let Some(name) = s[open + 2..close].strip_prefix("env.")
            && is_env_name(name)
        {
            found.push(EnvRef {
                name: name.to_owned(),
                range: open..close + 1,
            });
            from = close + 1;
        }
    }
    found
}

/// `${...}` spans that are not a well-formed `${env.NAME}`, as byte ranges.
fn malformed_references(s: &str) -> Vec<std::ops::Range<usize>> {
    let good = env_references(s);
    let mut bad = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("${").map(|i| from + i) {
        let end = s[open..].find('}').map_or(s.len(), |i| open + i + 1);
        if !good.iter().any(|r| r.range.start == open) {
            bad.push(open..end);
        }
        from = end.max(open + 2);
    }
    bad
}

/// A name a `${env.NAME}` may reference: a letter or `_`, then letters, digits, `_`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `s` with every `${env.NAME}` replaced by `lookup(NAME)`; the first variable that
/// `lookup` does not know is the error.
///
/// ```
/// use toolgate_core::spec::expand_env;
/// let value = expand_env("Bearer ${env.TOKEN}", |name| (name == "TOKEN").then(|| "s3cret".to_owned()));
/// assert_eq!(value.as_deref(), Ok("Bearer s3cret"));
/// assert_eq!(expand_env("${env.NOPE}", |_| None), Err("NOPE".to_owned()));
/// ```
pub fn expand_env(
    s: &str,
    mut lookup: impl FnMut(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for r in env_references(s) {
        out.push_str(&s[at..r.range.start]);
        out.push_str(&lookup(&r.name).ok_or_else(|| r.name.clone())?);
        at = r.range.end;
    }
    out.push_str(&s[at..]);
    Ok(out)
}

/// Whether `name` can be a namespace: a tool name without dots.
pub fn is_namespace(name: &str) -> bool {
    !name.contains('.') && crate::validate_name(name).is_ok()
}

/// Every problem in the `mcp_servers:` section, and declared tools that take a
/// server's namespace.
pub(super) fn check_mcp_servers(doc: &Document, spec: &SpecFile) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut push = |d: Diagnostic, key: bool| {
        let span = if key {
            doc.key_span(&d.path)
        } else {
            doc.value_span(&d.path)
        };
        out.push(d.with_span(span));
    };
    for (namespace, server) in &spec.mcp_servers {
        let at = format!("/mcp_servers/{}", pointer_segment(namespace));
        if !is_namespace(namespace) {
            push(
                Diagnostic::error(&at, format!("`{namespace}` cannot be a namespace"))
                    .with_help("name it with letters, digits, `_` or `-` and no dots, e.g. `github`; its tools are called `NAMESPACE.TOOL`"),
                true,
            );
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) => push(
                Diagnostic::error(&at, "an MCP server has `command` (stdio) or `url` (HTTP), not both")
                    .with_help("keep `command:` to start the server, or `url:` to reach a running one"),
                true,
            ),
            (None, None) => push(
                Diagnostic::error(&at, format!("MCP server `{namespace}` needs `command` (stdio) or `url` (HTTP)"))
                    .with_help("add `command:` (a program to start, spoken to over stdio) or `url:` (a running server's http(s) endpoint)"),
                true,
            ),
            (Some(command), None) if command.trim().is_empty() => push(
                Diagnostic::error(format!("{at}/command"), "`command` is empty")
                    .with_help("name the program to start, e.g. `command: npx`"),
                false,
            ),
            (None, Some(url)) if !env_references(url).is_empty() => push(
                Diagnostic::error(format!("{at}/url"), URL_READS_ENV)
                    .with_help("write the URL literally, and pass a credential in `headers:` (e.g. `Authorization: Bearer ${env.TOKEN}`), which reads the environment"),
                false,
            ),
            (None, Some(url)) => {
                if let Some(problem) = url_problem(url) {
                    push(
                        Diagnostic::error(format!("{at}/url"), problem)
                            .with_help("write the endpoint as `https://host/mcp` (or http:// for a server on this machine)"),
                        false,
                    );
                }
            }
            _ => {}
        }
        let misplaced: [(&str, bool, &str); 4] = [
            ("args", !server.args.is_empty(), "url"),
            ("env", !server.env.is_empty(), "url"),
            ("cwd", server.cwd.is_some(), "url"),
            ("headers", !server.headers.is_empty(), "command"),
        ];
        for (key, present, other) in misplaced {
            let has_other = if other == "url" {
                server.url.is_some() && server.command.is_none()
            } else {
                server.command.is_some() && server.url.is_none()
            };
            if present && has_other {
                let help = if key == "headers" {
                    "a program started with `command` gets settings through `env:`"
                } else {
                    "a server reached by `url` is already running; only `headers:` apply to it"
                };
                push(
                    Diagnostic::error(
                        format!("{at}/{key}"),
                        format!("`{key}` has no effect on a server reached by `{other}`"),
                    )
                    .with_help(help),
                    true,
                );
            }
        }
        for (name, value) in &server.env {
            let path = format!("{at}/env/{}", pointer_segment(name));
            if !is_env_name(name) {
                push(
                    Diagnostic::error(
                        &path,
                        format!("`{name}` is not an environment variable name"),
                    )
                    .with_help("use letters, digits and `_`, not starting with a digit"),
                    true,
                );
            }
            references(&path, value, &mut push);
        }
        for (name, value) in &server.headers {
            let path = format!("{at}/headers/{}", pointer_segment(name));
            references(&path, value, &mut push);
            if crate::is_secret_header(name) && env_references(value).is_empty() {
                push(
                    Diagnostic::warning(
                        &path,
                        format!("header `{name}` holds a secret written into the spec file"),
                    )
                    .with_help(format!(
                        "keep it in an environment variable: `{name}: \"Bearer ${{env.TOKEN}}\"`"
                    )),
                    false,
                );
            }
        }
        for (key, value) in [
            ("connect", &server.timeouts.connect),
            ("list", &server.timeouts.list),
            ("call", &server.timeouts.call),
        ] {
            if let Some(value) = value
                && humantime::parse_duration(value).is_err()
            {
                push(
                    Diagnostic::error(
                        format!("{at}/timeouts/{key}"),
                        format!("`{value}` is not a duration"),
                    )
                    .with_help("write a number and a unit, e.g. `500ms`, `30s` or `2m`"),
                    false,
                );
            }
        }
    }
    let namespaces: Vec<&str> = spec.mcp_servers.keys().map(String::as_str).collect();
    for (i, tool) in spec.tools.iter().enumerate() {
        if let Some((namespace, _)) = tool.name.split_once('.')
            && spec.mcp_servers.contains_key(namespace)
        {
            push(
                Diagnostic::error(
                    format!("/tools/{i}/name"),
                    format!("tool `{}` is in namespace `{namespace}`, which belongs to the tools of MCP server `{namespace}`", tool.name),
                )
                .with_help("rename the tool, or rename the server under `mcp_servers:`"),
                false,
            );
        }
    }
    for (i, rule) in spec.policy.rules.iter().enumerate() {
        if let Some(namespace) = rule.tools.strip_suffix(".*")
            && !namespace.contains('.')
            && !namespaces.is_empty()
            && !spec.mcp_servers.contains_key(namespace)
            && !spec
                .tools
                .iter()
                .any(|t| t.name.starts_with(&format!("{namespace}.")))
        {
            let mut d = Diagnostic::warning(
                format!("/policy/rules/{i}/tools"),
                format!("no tool is in namespace `{namespace}`, so this rule matches nothing"),
            );
            d.help = did_you_mean(namespace, namespaces.iter().copied());
            push(d, false);
        }
    }
    out
}

/// Reports `${...}` that is not a well-formed `${env.NAME}`.
fn references(path: &str, value: &str, push: &mut impl FnMut(Diagnostic, bool)) {
    for bad in malformed_references(value) {
        let text = &value[bad];
        push(
            Diagnostic::error(path, format!("`{text}` is not an environment reference"))
                .with_help("write `${env.NAME}`, e.g. `${env.GITHUB_TOKEN}`"),
            false,
        );
    }
}

/// Why an MCP server's `url` holding `${env.NAME}` is refused: it would be sent as
/// written, and a host read from the environment would escape the network policy.
pub const URL_READS_ENV: &str = "an MCP server's `url` does not read the environment: `${env.NAME}` there would be sent as written";

/// Why `url` cannot be an MCP endpoint, if it cannot.
fn url_problem(url: &str) -> Option<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some(format!("`{url}` is not an absolute URL"));
    };
    if scheme != "http" && scheme != "https" {
        return Some(format!("URL scheme `{scheme}` is not supported"));
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() {
        return Some(format!("`{url}` names no host"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Vec<Diagnostic> {
        let checked = super::super::check(text);
        checked.diagnostics
    }

    fn messages(text: &str) -> Vec<String> {
        check(text).into_iter().map(|d| d.message).collect()
    }

    #[test]
    fn a_well_formed_section_has_no_problems() {
        let text = r#"
mcp_servers:
  fs:
    command: npx
    args: [-y, server]
    env: {TOKEN: "${env.FS_TOKEN}"}
    effects: {read_text_file: read}
    timeouts: {connect: 5s, call: 1m}
  gh:
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer ${env.GH}"}
"#;
        assert_eq!(check(text), vec![]);
    }

    #[test]
    fn a_url_that_reads_the_environment_is_an_error_naming_headers_instead() {
        for url in [
            "https://${env.HOST}/mcp",
            "https://h.example/${env.TENANT}/mcp",
        ] {
            let found = check(&format!("mcp_servers:\n  a: {{url: '{url}'}}\n"));
            assert_eq!(found.len(), 1, "{url}: {found:?}");
            assert_eq!(found[0].message, URL_READS_ENV);
            assert_eq!(found[0].path, "/mcp_servers/a/url");
            assert!(
                found[0]
                    .help
                    .as_deref()
                    .unwrap_or_default()
                    .contains("headers:")
            );
        }
    }

    #[test]
    fn a_server_needs_exactly_one_of_command_and_url() {
        let both = messages("mcp_servers:\n  a: {command: x, url: 'http://127.0.0.1/mcp'}\n");
        assert_eq!(
            both,
            ["an MCP server has `command` (stdio) or `url` (HTTP), not both"]
        );
        let neither = messages("mcp_servers:\n  a: {args: [x]}\n");
        assert_eq!(
            neither,
            ["MCP server `a` needs `command` (stdio) or `url` (HTTP)"]
        );
    }

    #[test]
    fn settings_of_the_other_transport_are_refused() {
        let text = "mcp_servers:\n  a: {url: 'https://h/mcp', env: {A: b}}\n  b: {command: x, headers: {X: y}}\n";
        assert_eq!(
            messages(text),
            [
                "`env` has no effect on a server reached by `url`",
                "`headers` has no effect on a server reached by `command`"
            ]
        );
    }

    #[test]
    fn a_namespace_has_no_dots_and_tools_may_not_take_it() {
        let text = "tools:\n  - {name: fs.read, description: x}\nmcp_servers:\n  fs: {command: x}\n  a.b: {command: y}\n";
        let found = messages(text);
        assert!(
            found.contains(
                &"tool `fs.read` is in namespace `fs`, which belongs to the tools of MCP server `fs`"
                    .to_owned()
            ),
            "{found:?}"
        );
        assert!(
            found.contains(&"`a.b` cannot be a namespace".to_owned()),
            "{found:?}"
        );
    }

    #[test]
    fn malformed_references_bad_durations_and_literal_secrets_are_reported() {
        let text = "mcp_servers:\n  a:\n    url: https://h/mcp\n    headers: {Authorization: Bearer abc, X-Key: '${TOKEN}'}\n    timeouts: {call: soon}\n";
        let found = check(text);
        let summary: Vec<(Severity, &str)> = found
            .iter()
            .map(|d| (d.severity, d.message.as_str()))
            .collect();
        use super::super::Severity;
        assert_eq!(
            summary,
            [
                (
                    Severity::Warning,
                    "header `Authorization` holds a secret written into the spec file"
                ),
                (
                    Severity::Error,
                    "`${TOKEN}` is not an environment reference"
                ),
                (
                    Severity::Warning,
                    "header `X-Key` holds a secret written into the spec file"
                ),
                (Severity::Error, "`soon` is not a duration"),
            ]
        );
        assert!(found.iter().all(|d| d.span.is_some()));
    }

    #[test]
    fn env_references_are_found_and_expanded() {
        assert_eq!(
            env_references("${env.A}-${env.B_2}")
                .into_iter()
                .map(|r| r.name)
                .collect::<Vec<_>>(),
            ["A", "B_2"]
        );
        assert!(env_references("${env.}${env.1A}${A}{env.A}").is_empty());
        assert_eq!(
            malformed_references("x ${env.A} ${B} ${env.C"),
            vec![11..15, 16..23]
        );
        let lookup = |name: &str| Some(format!("<{name}>"));
        assert_eq!(
            expand_env("a ${env.X} b ${env.Y}", lookup).unwrap(),
            "a <X> b <Y>"
        );
        assert_eq!(expand_env("no refs", |_| None).unwrap(), "no refs");
    }

    #[test]
    fn a_rule_for_a_namespace_nobody_has_is_a_warning() {
        let text = "mcp_servers:\n  github: {command: x}\npolicy:\n  rules:\n    - {tools: 'githb.*', decision: deny}\n";
        let found = check(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].message,
            "no tool is in namespace `githb`, so this rule matches nothing"
        );
        assert_eq!(found[0].help.as_deref(), Some("did you mean `github`?"));
    }
}
