//! Semantic checks on a well-formed spec: names, schemas, responses, bindings,
//! state keys and placeholders. The state and placeholder rules are in
//! [`templates`]; this file holds the rest and the walk that runs them all.

use std::collections::HashMap;

use serde_json::Value;

use super::diagnostic::{Diagnostic, Span};
use super::document::{Document, pointer_segment};
use super::mcp_servers::check_mcp_servers;
use super::model::{BindingKind, McpBinding, SpecFile, ToolSpec};
use super::salvage::{Placed, Salvaged};
use super::structure::violation_message;
use super::template::{Scope, placeholders};

mod templates;

/// Every semantic problem in `spec`, located in `doc`.
pub(crate) fn check_rules(doc: &Document, spec: &SpecFile) -> Vec<Diagnostic> {
    let placed: Vec<Placed> = (0..spec.tools.len()).map(Placed::sound).collect();
    check(doc, spec, &placed, true)
}

/// As [`check_rules`], for what a file with structural problems leaves checkable.
pub(super) fn check_rules_at(doc: &Document, part: &Salvaged) -> Vec<Diagnostic> {
    check(doc, &part.spec, &part.placed, part.state_sound)
}

/// `spec.tools[k]` stands at `/tools/{placed[k].index}` in `doc`.
fn check(doc: &Document, spec: &SpecFile, placed: &[Placed], state_sound: bool) -> Vec<Diagnostic> {
    let mut rules = Rules {
        doc,
        spec,
        state_sound,
        out: Vec::new(),
    };
    rules.state_defaults();
    rules.patterns();
    rules.out.extend(check_mcp_servers(doc, spec));
    rules.network();
    rules
        .out
        .extend(super::limits::check_limits(doc, &spec.limits));
    rules
        .out
        .extend(super::rate_limits::check_rate_limits(doc, spec));
    rules.out.extend(super::budgets::check_budgets(doc, spec));
    rules
        .out
        .extend(super::auth::check_auth(doc, &spec.auth, &spec.network));
    rules
        .out
        .extend(super::code_mode::check_code_mode(doc, &spec.code_mode));
    let positions: Vec<usize> = placed.iter().map(|place| place.index).collect();
    rules.out.extend(super::network_checks::check_network_use(
        doc, spec, &positions,
    ));
    rules.out.extend(crate::flow::check_flow(doc, spec));
    rules
        .out
        .extend(super::telemetry::check_span_arguments(doc, spec));
    rules
        .out
        .extend(super::policy_checks::check_policy(doc, spec));
    let mut first_by_name: HashMap<&str, usize> = HashMap::new();
    for (tool, place) in spec.tools.iter().zip(placed) {
        let i = place.index;
        let at = format!("/tools/{i}");
        if place.is_unsound("name") {
            // Its name is already reported as missing or malformed.
        } else if let Err(e) = crate::validate_name(&tool.name) {
            let help = match suggest_name(&tool.name) {
                Some(name) => format!("rename it, e.g. `name: {name}`"),
                None => "give the tool a name, e.g. `name: lookup_order`".into(),
            };
            rules.error(&format!("{at}/name"), e.to_string(), Some(help));
        } else if let Some(first) = first_by_name.get(tool.name.as_str()) {
            let line = rules.line_of(&format!("/tools/{first}/name"));
            rules.error(
                &format!("{at}/name"),
                format!("tool `{}` is declared twice", tool.name),
                Some(format!(
                    "the first declaration is tool #{} (line {line}); rename or remove one",
                    first + 1
                )),
            );
        } else {
            first_by_name.insert(&tool.name, i);
        }
        rules.tool(&at, tool, place);
    }
    rules.out
}

struct Rules<'a> {
    doc: &'a Document,
    spec: &'a SpecFile,
    /// False when `state:` has structural problems: state keys are then unknown.
    state_sound: bool,
    out: Vec<Diagnostic>,
}

impl Rules<'_> {
    fn push(&mut self, diagnostic: Diagnostic) {
        let span = self.doc.value_span(&diagnostic.path);
        self.out.push(diagnostic.with_span(span));
    }

    fn error(&mut self, path: &str, message: String, help: Option<String>) {
        let mut d = Diagnostic::error(path, message);
        d.help = help;
        self.push(d);
    }

    /// An error at a span other than the value at `path`.
    fn error_at(&mut self, path: &str, span: Option<Span>, message: String, help: Option<String>) {
        let mut d = Diagnostic::error(path, message);
        d.help = help;
        self.out.push(d.with_span(span));
    }

    fn line_of(&self, path: &str) -> usize {
        let offset = self.doc.value_span(path).map_or(0, |s| s.offset);
        self.doc.line_of(offset)
    }

    /// `inject:`: each parameter one the tool declares, each template one
    /// that fills it from the caller.
    fn injected(&mut self, at: &str, tool: &ToolSpec) {
        let properties = tool
            .parameters
            .as_ref()
            .and_then(|p| p.get("properties"))
            .and_then(serde_json::Value::as_object);
        for (param, template) in &tool.inject {
            let path = format!("{at}/inject/{}", super::document::pointer_segment(param));
            if let Err(why) = super::inject::check_template(template) {
                self.error(
                    &path,
                    why,
                    Some("e.g. `inject: {tenant_id: \"{claims.tenant}\"}`".into()),
                );
            }
            if tool.parameters.is_some() && !properties.is_some_and(|p| p.contains_key(param)) {
                let help = match properties {
                    Some(p) if !p.is_empty() => {
                        super::did_you_mean(param, p.keys().map(String::as_str)).unwrap_or_else(|| {
                            "name a parameter declared under `parameters.properties`".into()
                        })
                    }
                    _ => "declare it under `parameters.properties`: the tool receives it, the model never sees it".into(),
                };
                self.error(
                    &path,
                    format!("`{param}` is not a parameter of `{}`", tool.name),
                    Some(help),
                );
            }
        }
    }

    fn tool(&mut self, at: &str, tool: &ToolSpec, place: &Placed) {
        let parameters = self.schema(&format!("{at}/parameters"), tool.parameters.as_ref());
        if let Some(p) = &tool.parameters
            && p.get("type").is_some_and(|t| t != "object")
        {
            self.error(
                &format!("{at}/parameters/type"),
                "`parameters` must describe an object: tools take named arguments".into(),
                Some("set `type: object` and list the arguments under `properties:`".into()),
            );
        }
        let returns = self.schema(&format!("{at}/returns"), tool.returns.as_ref());
        if let Some(returns) = returns {
            match &tool.response {
                Some(response) => {
                    for v in violations(&returns, response) {
                        let help = v.help.unwrap_or_else(|| {
                            "change the canned response or the `returns` schema so they agree"
                                .into()
                        });
                        self.error(
                            &format!("{at}/response{}", v.pointer),
                            format!("the mock response does not match `returns`: {}", v.message),
                            Some(help),
                        );
                    }
                }
                // A bound tool's response comes from its server, not from this file.
                None if tool.binding_kind() != BindingKind::Mock => {}
                // A binding cut for a structural problem may still be meant.
                None if place.is_unsound("http") || place.is_unsound("mcp") => {}
                None => {
                    let reasons: Vec<String> = violations(&returns, &tool.canned_response())
                        .into_iter()
                        .map(|v| v.message)
                        .collect();
                    if !reasons.is_empty() {
                        // The default `{"ok": true}` is not in the file: point at `returns`.
                        let path = format!("{at}/returns");
                        let span = self.doc.key_span(&path);
                        self.error_at(
                            &path,
                            span,
                            format!(
                                "without a `response:`, this mock returns {{\"ok\": true}}, which does not match `returns`: {}",
                                reasons.join("; ")
                            ),
                            Some("add a `response:` with a value that matches `returns`".into()),
                        );
                    }
                }
            }
        }
        if let Some(parameters) = &parameters {
            for (i, example) in tool.examples.iter().enumerate() {
                for v in violations(parameters, example) {
                    let help = v.help.unwrap_or_else(|| {
                        "change the example or `parameters` so they agree".into()
                    });
                    self.error(
                        &format!("{at}/examples/{i}{}", v.pointer),
                        format!("this example does not match `parameters`: {}", v.message),
                        Some(help),
                    );
                }
            }
        }
        self.injected(at, tool);
        if tool.http.is_some() && tool.mcp.is_some() {
            self.error(
                &format!("{at}/mcp"),
                "a tool has one binding, `http` or `mcp`, not both".into(),
                Some("remove one of them; a tool with neither is a mock".into()),
            );
        }
        self.mcp(at, tool);
        if let Some(http) = &tool.http {
            self.url(&format!("{at}/http/url"), &http.url);
            self.reachable(&format!("{at}/http/url"), &http.url);
            self.secret_header_arguments(at, tool);
            self.out.extend(super::http_checks::check_http_binding(
                self.doc,
                &format!("{at}/http"),
                http,
            ));
            if http.no_body && http.body.is_some() {
                self.error(
                    &format!("{at}/http/no_body"),
                    "`no_body: true` and a `body` contradict each other".into(),
                    Some("remove one of them".into()),
                );
            }
        }
        if let Some(timeout) = &tool.timeout
            && humantime::parse_duration(timeout).is_err()
        {
            self.error(
                &format!("{at}/timeout"),
                format!("`{timeout}` is not a duration"),
                Some("write a number and a unit, e.g. `500ms`, `30s` or `2m`".into()),
            );
        }
        self.state_writes(at, tool);
        self.placeholders(at, tool);
    }

    /// Checks that a schema is valid JSON Schema; returns it when it is.
    fn schema(&mut self, path: &str, schema: Option<&Value>) -> Option<Value> {
        let schema = schema?;
        let meta = jsonschema::draft202012::meta::validator();
        let mut valid = true;
        let field = path.rsplit('/').next().unwrap_or_default();
        for error in meta.iter_errors(schema) {
            valid = false;
            let pointer = error.instance_path().as_str().to_owned();
            let (message, help) = violation_message(&error);
            self.error(
                &format!("{path}{pointer}"),
                format!("`{field}` is not a valid JSON Schema: {message}"),
                Some(help.unwrap_or_else(|| {
                    "see https://json-schema.org/understanding-json-schema for the keywords".into()
                })),
            );
        }
        if valid && let Err(e) = jsonschema::draft202012::new(schema) {
            valid = false;
            let (pointer, message, help) = match e.kind() {
                jsonschema::error::ValidationErrorKind::Referencing(_)
                    if let Some((pointer, target)) =
                        dangling_ref(schema, schema, String::new()) =>
                {
                    (
                        pointer,
                        format!("`{field}` has a `$ref` that points nowhere: `{target}`"),
                        "point it inside the schema, e.g. `$ref: \"#/$defs/Name\"` with `Name` under `$defs:`; other documents are not fetched",
                    )
                }
                jsonschema::error::ValidationErrorKind::Format { format } if format == "regex" => (
                    e.instance_path().as_str().to_owned(),
                    format!("`{field}` has a `pattern` that is not a regular expression"),
                    "write an ECMA 262 regular expression, e.g. `^[0-9]{4}$`",
                ),
                _ => (
                    e.instance_path().as_str().to_owned(),
                    format!("`{field}` cannot be used as a JSON Schema: {}", e.masked()),
                    "fix the marked keyword",
                ),
            };
            self.error(&format!("{path}{pointer}"), message, Some(help.into()));
        }
        valid.then(|| schema.clone())
    }

    fn mcp(&mut self, at: &str, tool: &ToolSpec) {
        let path = format!("{at}/mcp");
        match &tool.mcp {
            Some(McpBinding::Short(s)) if s.trim().is_empty() => self.error(
                &path,
                "`mcp` is empty".into(),
                Some("give the server's command line or its http(s) URL".into()),
            ),
            Some(McpBinding::Short(s)) if s.starts_with("http://") || s.starts_with("https://") => {
                self.url(&path, s)
            }
            Some(McpBinding::Full(server)) if server.command.is_some() == server.url.is_some() => {
                let help = if server.command.is_some() {
                    "keep `command:` to start the server, or `url:` to reach a running one, not both"
                } else {
                    "add `command:` (a program to start, spoken to over stdio) or `url:` (a running server's http(s) endpoint)"
                };
                let span = self.doc.key_span(&path);
                self.error_at(
                    &path,
                    span,
                    "an `mcp` binding needs exactly one of `command` (stdio) or `url` (HTTP)"
                        .into(),
                    Some(help.into()),
                )
            }
            Some(McpBinding::Full(server)) => {
                if let Some(url) = &server.url {
                    self.url(&format!("{path}/url"), url);
                }
            }
            _ => {}
        }
    }

    /// An absolute http(s) URL whose scheme and host come from the file, not from arguments.
    fn url(&mut self, path: &str, url: &str) {
        let Some((scheme, rest)) = url.split_once("://") else {
            return self.error(
                path,
                format!("`{url}` is not an absolute URL"),
                Some("start it with https:// or http://".into()),
            );
        };
        if scheme != "http" && scheme != "https" {
            return self.error(
                path,
                format!("URL scheme `{scheme}` is not supported"),
                Some("use https:// or http://".into()),
            );
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.is_empty() {
            self.error(
                path,
                format!("`{url}` names no host"),
                Some("write the host after `://`, as in `https://api.example.com/orders`".into()),
            );
        } else if let Some(open) = authority.find('{') {
            // Point at the placeholder itself when it can be found in the text.
            let close = authority[open..]
                .find('}')
                .map_or(authority.len(), |c| open + c + 1);
            let (open, message, help) = origin_reference(authority, open);
            let span = self.placeholder_span(path, &authority[open..close]);
            self.error_at(path, span, message.into(), Some(help.into()));
        }
    }

    /// Policy rules and principal scopes name tools as `name`, `ns.*` or `*`; any
    /// other pattern would silently match nothing, so a deny rule would not deny.
    fn patterns(&mut self) {
        let mut found: Vec<(String, String)> = Vec::new();
        for (i, rule) in self.spec.policy.rules.iter().enumerate() {
            found.push((format!("/policy/rules/{i}/tools"), rule.tools.clone()));
        }
        for (id, principal) in &self.spec.principals {
            for (i, scope) in principal.scopes.iter().enumerate() {
                found.push((
                    format!("/principals/{}/scopes/{i}", pointer_segment(id)),
                    scope.clone(),
                ));
            }
        }
        for (path, pattern) in found {
            let name = pattern.strip_suffix(".*").unwrap_or(&pattern);
            if pattern != "*" && crate::validate_name(name).is_err() {
                self.error(
                    &path,
                    format!("`{pattern}` is not a tool pattern"),
                    Some("write a tool name, `namespace.*` for every tool in a namespace, or `*` for every tool".into()),
                );
            }
        }
    }
}

/// One way a value breaks a schema.
pub(crate) struct Violation {
    /// The JSON pointer of the offending part, relative to the value.
    pub pointer: String,
    pub message: String,
    pub help: Option<String>,
}

/// Every way `value` breaks `schema`. Strings that hold placeholders are filled at
/// run time, so their own violations are skipped.
pub(crate) fn violations(schema: &Value, value: &Value) -> Vec<Violation> {
    let Ok(validator) = jsonschema::draft202012::new(schema) else {
        return Vec::new();
    };
    validator
        .iter_errors(value)
        .filter(|e| {
            e.instance()
                .as_str()
                .is_none_or(|s| placeholders(s).is_empty())
        })
        .map(|e| {
            let (message, help) = violation_message(&e);
            Violation {
                pointer: e.instance_path().as_str().to_owned(),
                message,
                help,
            }
        })
        .collect()
}

/// The first `$ref` in `schema` that does not resolve inside `root`: its pointer
/// (relative to `root`) and its target.
fn dangling_ref(schema: &Value, root: &Value, pointer: String) -> Option<(String, String)> {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                let resolves = target
                    .strip_prefix('#')
                    .and_then(|p| {
                        let decoded = percent_decode(p)?;
                        root.pointer(&decoded)
                    })
                    .is_some();
                if !resolves {
                    return Some((format!("{pointer}/$ref"), target.clone()));
                }
            }
            map.iter().find_map(|(key, value)| {
                dangling_ref(value, root, format!("{pointer}/{}", pointer_segment(key)))
            })
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| dangling_ref(item, root, format!("{pointer}/{i}"))),
        _ => None,
    }
}

/// `%xx` escapes in a URI fragment, decoded; `None` when they do not make UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A valid tool name close to `name`: runs of other characters become one `_`.
fn suggest_name(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '-' | '.') {
            c
        } else {
            '_'
        };
        let repeated = (c == '_' || c == '.') && out.ends_with(['_', '.']);
        if !repeated {
            out.push(c);
        }
    }
    let out: String = out
        .trim_matches(['_', '.'])
        .chars()
        .take(crate::MAX_NAME_LEN)
        .collect();
    let out = out.trim_end_matches(['_', '.']);
    (crate::validate_name(out).is_ok()).then(|| out.to_owned())
}

/// What to say about a reference whose `{` stands at `open` in a URL's authority:
/// where it starts (`$` included), the message and the help.
fn origin_reference(authority: &str, open: usize) -> (usize, &'static str, &'static str) {
    match open.checked_sub(1) {
        Some(dollar) if authority[..open].ends_with('$') => (
            dollar,
            "the URL's scheme, host or port reads the environment; they must be written in the spec file, where the network policy can read them",
            "write the host literally, as in `https://api.example.com/v1?key=${env.API_KEY}`: `${env.NAME}` may fill the path and the query",
        ),
        _ => (
            open,
            "the URL's host comes from a placeholder; arguments and state may only fill the path and query",
            "write the host literally, as in `https://api.example.com/{args.path}`",
        ),
    }
}

/// The `network:` section, and binding hosts it will refuse.
impl Rules<'_> {
    fn network(&mut self) {
        for (i, entry) in self.spec.network.allow.iter().enumerate() {
            if let Err(message) = super::network::AllowEntry::parse(entry) {
                self.error(
                    &format!("/network/allow/{i}"),
                    message,
                    Some(
                        "write a host name (`api.internal`), `*.domain`, an address (`10.0.0.5`) or a CIDR range (`10.20.0.0/16`); a host or address may name one port (`127.0.0.1:8080`, `[::1]:8080`)"
                            .into(),
                    ),
                );
            }
        }
    }

    /// Warns about an argument that fills a secret header (`Authorization`, an API
    /// key) but that the audit log would keep as it is.
    fn secret_header_arguments(&mut self, at: &str, tool: &ToolSpec) {
        let Some(http) = &tool.http else { return };
        let schema = tool.input_schema();
        for (name, value) in &http.headers {
            if !crate::is_secret_header(name) {
                continue;
            }
            let path = format!("{at}/http/headers/{}", pointer_segment(name));
            for p in placeholders(value) {
                if p.scope != Scope::Args {
                    continue;
                }
                let arg = p.name();
                let probe = serde_json::json!({ arg: "probe" });
                if crate::redact_arguments(&probe, &schema)[arg] == crate::REDACTED {
                    continue;
                }
                let span = self.placeholder_span(&path, &value[p.range.clone()]);
                let mut d = Diagnostic::warning(
                    &path,
                    format!(
                        "argument `{arg}` fills the secret header `{name}`, but the audit log records `{arg}` as it is"
                    ),
                );
                d.help = Some(format!(
                    "mark it secret under `parameters`: `{arg}: {{type: string, writeOnly: true}}`, or read it from the environment with `${{env.NAME}}`"
                ));
                self.out.push(d.with_span(span));
            }
        }
    }

    /// Warns about a URL whose literal host the network policy refuses: calls to it
    /// would fail before connecting.
    fn reachable(&mut self, path: &str, url: &str) {
        let policy = super::network::NetworkPolicy::new(&self.spec.network);
        let refusal = policy.refusal_for_url(url).map(|e| e.to_string());
        let host = super::network::suggested_entry(url).unwrap_or_default();
        if let Some(message) = refusal {
            let mut d = Diagnostic::warning(path, format!("calls will be refused: {message}"));
            d.help = Some(format!(
                "add it under `network:`, e.g. `network: {{allow: [\"{host}\"]}}`, if the tool is meant to reach it"
            ));
            self.push(d);
        }
    }
}
