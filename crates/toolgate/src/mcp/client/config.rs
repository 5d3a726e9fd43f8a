//! An upstream server's settings, resolved: `${env.NAME}` read, paths made absolute,
//! durations parsed, and the spec file's `network:` policy that a server reached by
//! URL must pass. Resolved values that came from the environment are secrets: they
//! never reach `Debug` output, logs or messages (see [`Scrubber`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use toolgate_core::Effect;
use toolgate_core::spec::{
    McpBinding, McpServerRef, McpServerSpec, McpTimeouts, NetworkPolicy, URL_READS_ENV,
    UpstreamRevision, env_references, expand_env,
};

/// Environment variables a stdio server inherits from toolgate; everything else it
/// gets only through its `env:` settings. The same list other MCP clients pass, so
/// an operator's other secrets do not leak into every server.
pub const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The default time to start a server (or reach it) and finish the handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time a server has to answer `tools/list`.
pub const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time a server has to answer one `tools/call`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads one environment variable. Tests pass their own.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment.
pub fn process_env() -> EnvLookup {
    Arc::new(|name| std::env::var(name).ok())
}

/// A value that must not be shown: `Debug` prints `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(toolgate_core::REDACTED)
    }
}

/// How toolgate reaches the server.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A program started by toolgate, spoken to over its stdin and stdout.
    Stdio {
        program: PathBuf,
        args: Vec<String>,
        /// What the program gets on top of [`INHERITED_ENV`].
        env: Vec<(String, Secret)>,
        cwd: Option<PathBuf>,
    },
    /// A running server's streamable HTTP endpoint.
    Http {
        url: String,
        headers: Vec<(String, Secret)>,
    },
}

/// Everything needed to run one upstream server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The namespace its tools are listed under (or, for a spec-file binding, the tool).
    pub name: String,
    /// How it is reached: a command run over stdio, or a URL.
    pub transport: Transport,
    /// The operator's effects by the tool's name on the server.
    pub effects: IndexMap<String, Effect>,
    /// The operator's output labels by the tool's name on the server (`*`: any).
    pub outputs: IndexMap<String, toolgate_core::ToolOutput>,
    /// The operator's costs by the tool's name on the server (`*`: any).
    pub costs: IndexMap<String, toolgate_core::spec::Cost>,
    /// How long starting (or reaching) it and the handshake may take.
    pub connect_timeout: Duration,
    /// How long it has to answer `tools/list`.
    pub list_timeout: Duration,
    /// How long it has to answer one `tools/call`.
    pub call_timeout: Duration,
    /// Every value read from the environment, to scrub from messages.
    pub scrubber: Scrubber,
    /// Where a server reached by URL may be: the spec file's `network:` section
    /// (public addresses only by default, as for `http:` bindings).
    pub network: Arc<NetworkPolicy>,
    /// Which MCP revision to speak to it.
    pub revision: UpstreamRevision,
}

/// Why a server's settings cannot be used. The operator must act.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A `${env.NAME}` the settings read is not set.
    #[error(
        "MCP server `{server}`: {place} references the environment variable `{variable}`, which is not set; export it before starting toolgate"
    )]
    MissingEnv {
        /// The server's namespace.
        server: String,
        /// Where the reference is written (`command`, `env.TOKEN`, a header, ...).
        place: String,
        /// The variable that is not set.
        variable: String,
    },
    #[error(
        "MCP server `{server}`: {problem}; fix it in the spec file (`toolgate check` shows where)"
    )]
    /// A setting cannot be used as written.
    Invalid {
        /// The server's namespace.
        server: String,
        /// What is wrong, and where.
        problem: String,
    },
    /// The URL is outside the spec file's `network:` policy.
    #[error("MCP server `{server}` at {url}: {reason}")]
    Refused {
        /// The server's namespace.
        server: String,
        /// The URL refused.
        url: String,
        /// Why the policy refuses it.
        reason: String,
    },
}

impl ServerConfig {
    /// Resolves a server of the `mcp_servers:` section. `base_dir` (the spec file's
    /// directory) anchors relative paths and is the default working directory.
    pub fn from_spec(
        name: &str,
        spec: &McpServerSpec,
        base_dir: Option<&Path>,
        env: &EnvLookup,
    ) -> Result<ServerConfig, ConfigError> {
        let mut scrubber = Scrubber::default();
        let invalid = |problem: String| ConfigError::Invalid {
            server: name.to_owned(),
            problem,
        };
        let transport = match (&spec.command, &spec.url) {
            (Some(command), None) => {
                let env = resolve_map(name, "env", &spec.env, env, &mut scrubber)?;
                Transport::Stdio {
                    program: program_path(command, base_dir),
                    args: spec.args.clone(),
                    env,
                    cwd: spec
                        .cwd
                        .as_ref()
                        .map(|cwd| anchored(Path::new(cwd), base_dir))
                        .or_else(|| base_dir.map(Path::to_path_buf)),
                }
            }
            (None, Some(url)) if !env_references(url).is_empty() => {
                return Err(invalid(URL_READS_ENV.into()));
            }
            (None, Some(url)) => Transport::Http {
                url: url.clone(),
                headers: resolve_headers(name, &spec.headers, env, &mut scrubber)?,
            },
            _ => {
                return Err(invalid(
                    "it needs exactly one of `command` (stdio) or `url` (HTTP)".into(),
                ));
            }
        };
        let (connect_timeout, list_timeout, call_timeout) =
            timeouts(&spec.timeouts).map_err(|(key, value)| {
                invalid(format!("`timeouts.{key}: {value}` is not a duration"))
            })?;
        Ok(ServerConfig {
            name: name.to_owned(),
            transport,
            effects: spec.effects.clone(),
            outputs: spec.outputs.clone(),
            costs: spec.costs.clone(),
            revision: spec.revision,
            connect_timeout,
            list_timeout,
            call_timeout,
            scrubber,
            network: Arc::new(NetworkPolicy::default()),
        })
    }

    /// The same settings under `network` (a spec file's `network:` section).
    pub fn with_network(mut self, network: Arc<NetworkPolicy>) -> Self {
        self.network = network;
        self
    }

    /// Whether the server's URL passes the network policy as written: its scheme,
    /// and an IP-literal host on its port. A host name is checked again each time it
    /// is resolved, when connecting.
    pub fn check_network(&self) -> Result<(), ConfigError> {
        let Transport::Http { url, .. } = &self.transport else {
            return Ok(());
        };
        let refused = |reason: String| ConfigError::Refused {
            server: self.name.clone(),
            url: url.clone(),
            reason,
        };
        let parsed =
            url::Url::parse(url).map_err(|e| refused(format!("the URL is not valid ({e})")))?;
        crate::http::resolver::check_literal(&self.network, &parsed)
            .map_err(|e| refused(e.to_string()))
    }

    /// Resolves the server of a declared tool's `mcp:` binding.
    pub fn from_binding(
        tool: &str,
        binding: &McpBinding,
        base_dir: Option<&Path>,
        env: &EnvLookup,
    ) -> Result<ServerConfig, ConfigError> {
        let full = match binding {
            McpBinding::Short(text)
                if text.starts_with("http://") || text.starts_with("https://") =>
            {
                McpServerRef {
                    command: None,
                    args: Vec::new(),
                    env: IndexMap::new(),
                    url: Some(text.clone()),
                    headers: IndexMap::new(),
                    tool: None,
                    revision: UpstreamRevision::Auto,
                }
            }
            McpBinding::Short(text) => {
                let mut words =
                    split_command_line(text).map_err(|problem| ConfigError::Invalid {
                        server: tool.to_owned(),
                        problem: format!("the command line `{text}` {problem}"),
                    })?;
                if words.is_empty() {
                    return Err(ConfigError::Invalid {
                        server: tool.to_owned(),
                        problem: "`mcp` is empty".into(),
                    });
                }
                let command = words.remove(0);
                McpServerRef {
                    command: Some(command),
                    args: words,
                    env: IndexMap::new(),
                    url: None,
                    headers: IndexMap::new(),
                    tool: None,
                    revision: UpstreamRevision::Auto,
                }
            }
            McpBinding::Full(full) => (**full).clone(),
        };
        let spec = McpServerSpec {
            command: full.command,
            args: full.args,
            env: full.env,
            url: full.url,
            headers: full.headers,
            revision: full.revision,
            ..McpServerSpec::default()
        };
        Self::from_spec(tool, &spec, base_dir, env)
    }

    /// What a result of the server's tool `name` brings in: the operator's
    /// word under `outputs:` (by name, else `*`), else untrusted content.
    pub fn output_of(&self, name: &str) -> toolgate_core::Labels {
        self.outputs
            .get(name)
            .or_else(|| self.outputs.get("*"))
            .map_or(toolgate_core::Labels::UNTRUSTED, |o| o.brings())
    }

    /// What one call of the server's tool `name` costs: the operator's word
    /// under `costs:` (by name, else `*`), else nothing.
    pub fn cost_of(&self, name: &str) -> Option<toolgate_core::spec::Cost> {
        self.costs
            .get(name)
            .or_else(|| self.costs.get("*"))
            .cloned()
    }

    /// `stdio` or `http`.
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// The tool's name on the server for a declared tool bound with `mcp:`.
pub(super) fn bound_tool_name<'a>(declared: &'a str, binding: &'a McpBinding) -> &'a str {
    match binding {
        McpBinding::Full(full) => full.tool.as_deref().unwrap_or(declared),
        McpBinding::Short(_) => declared,
    }
}

fn timeouts(t: &McpTimeouts) -> Result<(Duration, Duration, Duration), (&'static str, String)> {
    let parse = |key: &'static str, value: &Option<String>, default: Duration| match value {
        None => Ok(default),
        Some(text) => humantime::parse_duration(text).map_err(|_| (key, text.clone())),
    };
    Ok((
        parse("connect", &t.connect, DEFAULT_CONNECT_TIMEOUT)?,
        parse("list", &t.list, DEFAULT_LIST_TIMEOUT)?,
        parse("call", &t.call, DEFAULT_CALL_TIMEOUT)?,
    ))
}

fn resolve_map(
    server: &str,
    section: &str,
    map: &IndexMap<String, String>,
    env: &EnvLookup,
    scrubber: &mut Scrubber,
) -> Result<Vec<(String, Secret)>, ConfigError> {
    map.iter()
        .map(|(key, template)| {
            let value = resolve(
                server,
                &format!("`{section}.{key}`"),
                template,
                env,
                scrubber,
            )?;
            Ok((key.clone(), value))
        })
        .collect()
}

fn resolve_headers(
    server: &str,
    headers: &IndexMap<String, String>,
    env: &EnvLookup,
    scrubber: &mut Scrubber,
) -> Result<Vec<(String, Secret)>, ConfigError> {
    const RESERVED: [&str; 4] = ["accept", "mcp-session-id", "last-event-id", "content-type"];
    for name in headers.keys() {
        if RESERVED.iter().any(|r| name.eq_ignore_ascii_case(r)) {
            return Err(ConfigError::Invalid {
                server: server.to_owned(),
                problem: format!(
                    "header `{name}` is set by the MCP transport itself and cannot be overridden"
                ),
            });
        }
    }
    resolve_map(server, "headers", headers, env, scrubber)
}

/// One setting with its `${env.NAME}` references read. Values read from the
/// environment join the scrubber; so does a whole value under a secret header name.
fn resolve(
    server: &str,
    place: &str,
    template: &str,
    env: &EnvLookup,
    scrubber: &mut Scrubber,
) -> Result<Secret, ConfigError> {
    let mut read = Vec::new();
    let value = expand_env(template, |name| {
        let value = env(name)?;
        read.push(value.clone());
        Some(value)
    })
    .map_err(|variable| ConfigError::MissingEnv {
        server: server.to_owned(),
        place: place.to_owned(),
        variable,
    })?;
    for secret in read {
        scrubber.add(secret);
    }
    Ok(Secret(value))
}

/// A program named with a `/` is a path: relative ones are taken from `base_dir`.
/// A bare name is looked up on `PATH` when started.
fn program_path(command: &str, base_dir: Option<&Path>) -> PathBuf {
    if command.contains('/') {
        anchored(Path::new(command), base_dir)
    } else {
        PathBuf::from(command)
    }
}

fn anchored(path: &Path, base_dir: Option<&Path>) -> PathBuf {
    match base_dir {
        Some(base) if path.is_relative() => base.join(path),
        _ => path.to_path_buf(),
    }
}

/// Splits a command line into words the way a shell would for plain words, single
/// and double quotes and backslash escapes; no expansion of any kind.
pub fn split_command_line(line: &str) -> Result<Vec<String>, &'static str> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("has an unclosed single quote"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("ends inside double quotes"),
                        },
                        Some(c) => word.push(c),
                        None => return Err("has an unclosed double quote"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("ends with a lone backslash"),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Replaces values read from the environment with `[redacted]` in text that is about
/// to be shown: server error messages, its stderr, failure reports.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Scrubber {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<String>,
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scrubber({} secrets)", self.secrets.len())
    }
}

impl Scrubber {
    /// Values shorter than this are not scrubbed: replacing every `1` or `true` in a
    /// message would hide more than it protects.
    const MIN_LEN: usize = 4;

    pub fn add(&mut self, secret: String) {
        if secret.chars().count() >= Self::MIN_LEN && !self.secrets.contains(&secret) {
            self.secrets.push(secret);
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), toolgate_core::REDACTED);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> EnvLookup {
        Arc::new(move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn env_references_resolve_and_their_values_stay_out_of_debug_output() {
        let spec = McpServerSpec {
            command: Some("./server".into()),
            env: [("TOKEN".to_owned(), "tok-${env.SECRET_TOKEN}".to_owned())]
                .into_iter()
                .collect(),
            ..McpServerSpec::default()
        };
        let env = env_of(&[("SECRET_TOKEN", "hunter22")]);
        let config = ServerConfig::from_spec("s", &spec, Some(Path::new("/srv")), &env).unwrap();
        let Transport::Stdio {
            program, env, cwd, ..
        } = &config.transport
        else {
            panic!("stdio expected");
        };
        assert_eq!(program, Path::new("/srv/./server"));
        assert_eq!(cwd.as_deref(), Some(Path::new("/srv")));
        assert_eq!(env[0].1.expose(), "tok-hunter22");
        let debug = format!("{config:?}");
        assert!(!debug.contains("hunter22"), "{debug}");
        assert_eq!(
            config.scrubber.scrub("auth failed for tok-hunter22"),
            "auth failed for tok-[redacted]"
        );
    }

    #[test]
    fn a_missing_variable_is_named_with_the_setting_that_needs_it() {
        let spec = McpServerSpec {
            url: Some("https://h/mcp".into()),
            headers: [(
                "Authorization".to_owned(),
                "Bearer ${env.GH_TOKEN}".to_owned(),
            )]
            .into_iter()
            .collect(),
            ..McpServerSpec::default()
        };
        let err = ServerConfig::from_spec("gh", &spec, None, &env_of(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "MCP server `gh`: `headers.Authorization` references the environment variable `GH_TOKEN`, which is not set; export it before starting toolgate"
        );
    }

    #[test]
    fn a_url_that_reads_the_environment_is_refused_not_sent_as_written() {
        let spec = McpServerSpec {
            url: Some("https://${env.HOST}/mcp".into()),
            ..McpServerSpec::default()
        };
        let err =
            ServerConfig::from_spec("up", &spec, None, &env_of(&[("HOST", "h")])).unwrap_err();
        assert!(err.to_string().contains(URL_READS_ENV), "{err}");
    }

    #[test]
    fn a_short_binding_is_split_like_a_shell_command_line() {
        assert_eq!(
            split_command_line(r#"npx -y "@scope/server name" 'a b' c\ d"#).unwrap(),
            ["npx", "-y", "@scope/server name", "a b", "c d"]
        );
        assert_eq!(split_command_line("  ").unwrap(), Vec::<String>::new());
        assert!(split_command_line("x 'open").is_err());
        let config = ServerConfig::from_binding(
            "lookup",
            &McpBinding::Short("node server.js --port 1".into()),
            None,
            &env_of(&[]),
        )
        .unwrap();
        let Transport::Stdio { program, args, .. } = &config.transport else {
            panic!("stdio expected");
        };
        assert_eq!(program, Path::new("node"));
        assert_eq!(args, &["server.js", "--port", "1"]);
    }

    #[test]
    fn transport_headers_cannot_be_overridden() {
        let spec = McpServerSpec {
            url: Some("https://h/mcp".into()),
            headers: [("Mcp-Session-Id".to_owned(), "x".to_owned())]
                .into_iter()
                .collect(),
            ..McpServerSpec::default()
        };
        let err = ServerConfig::from_spec("h", &spec, None, &env_of(&[])).unwrap_err();
        assert!(
            err.to_string().contains("set by the MCP transport itself"),
            "{err}"
        );
    }
}
