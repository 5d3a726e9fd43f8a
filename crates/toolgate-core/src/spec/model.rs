//! The spec file format, as Rust types. `toolgate schema` prints their JSON Schema.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Effect, Scheduling, ToolUsage};

/// A `toolgate.yaml` file: tools and the conversation's data dictionary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "toolgate spec file")]
pub struct SpecFile {
    /// The tools this file declares.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Tools the model's provider runs (web search, code execution, ...); each
    /// target renders the ones it supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosted: Vec<crate::wire::HostedTool>,
    /// Who may run what: a decision per effect, and rules by tool name.
    #[serde(default, skip_serializing_if = "is_default_policy")]
    pub policy: crate::Policy,
    /// Who may call, by id (`toolgate call --as ID`): a tier ceiling and tool scopes.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub principals: IndexMap<String, crate::PrincipalSpec>,
    /// The conversation's state keys: what tools latch and guards read.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub state: IndexMap<String, StateKey>,
    /// Where HTTP bindings may connect (default: public addresses only).
    #[serde(default, skip_serializing_if = "super::NetworkSection::is_default")]
    pub network: super::NetworkSection,
    /// Bounds on what one call may carry (its arguments' size).
    #[serde(default, skip_serializing_if = "super::LimitsSection::is_default")]
    pub limits: super::LimitsSection,
    /// How many calls, or how much cost, principals may spend on tools per
    /// window, and what a call past that meets (asked or denied).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<super::Budget>,
    /// How callers of `toolgate serve --http` authenticate.
    #[serde(default, skip_serializing_if = "super::AuthSection::is_default")]
    pub auth: super::AuthSection,
    /// The limits of programs a model writes (`run_code`).
    #[serde(default, skip_serializing_if = "super::CodeModeSection::is_default")]
    pub code_mode: super::CodeModeSection,
    /// Search by meaning: a sentence-embedding model fused with the lexical ranking.
    #[serde(default, skip_serializing_if = "super::SearchSection::is_default")]
    pub search: super::SearchSection,
    /// Agent Skills to serve: folders with a `SKILL.md`, offered over MCP's
    /// skills extension and to other model APIs through `read_skill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<super::SkillsSection>,
    /// MCP servers whose tools join the catalog as `NAMESPACE.TOOL`, by namespace.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub mcp_servers: IndexMap<String, super::McpServerSpec>,
    /// What the gate's spans may record of a call (its arguments, opted in by tool).
    #[serde(default, skip_serializing_if = "super::TelemetrySection::is_default")]
    pub telemetry: super::TelemetrySection,
    /// Which tools may run when in a conversation: steps, guards and constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<crate::flow::Flow>,
    /// Scripted conversations that `toolgate test` runs offline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<crate::flow::TestScript>,
    /// Where the gate keeps state, approvals and the audit log: a PostgreSQL URL
    /// that several instances share, e.g.
    /// `postgres://toolgate:${env.PGPASSWORD}@db.internal/toolgate` (the password
    /// from the environment). Default: the SQLite file in the state directory.
    /// `--store` and `TOOLGATE_STORE` override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

fn is_default_policy(policy: &crate::Policy) -> bool {
    policy == &crate::Policy::default()
}

/// One declared tool. Without `http` or `mcp` it is a mock: it returns `response`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Canonical name: 1-128 of `[A-Za-z0-9_.-]`, `.` between namespace parts.
    pub name: String,
    /// A short human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments; absent means the tool takes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// JSON Schema of what the tool returns, shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<Value>,
    /// The canned value a mock returns (default `{"ok": true}`). Strings may
    /// interpolate `{args.NAME}` and `{state.KEY}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// State keys written after the tool succeeds; values interpolate as `response`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub set_state: IndexMap<String, Value>,
    /// A state key that receives the tool's whole response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_response_as: Option<String>,
    /// Run the tool as an HTTP request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpBinding>,
    /// Run the tool on an MCP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpBinding>,
    /// The tool runs in the background; the conversation goes on meanwhile.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// How a background tool's result reaches the model. Implies `background`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<Scheduling>,
    /// What calling the tool does to the world (default `write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    /// Guidance for the model that picks tools.
    #[serde(default, skip_serializing_if = "ToolUsage::is_empty")]
    pub usage: ToolUsage,
    /// Sample arguments, shown to APIs that accept input examples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
    /// Free-form labels, used by search.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Listed up front when the catalog is offered as "a few tools plus search"
    /// (`toolgate render --defer`, `toolgate serve --search`); other tools wait
    /// until a search finds them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub always_loaded: bool,
    /// How long a call may take, e.g. `30s`, `500ms`, `2m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// What its result brings into the conversation: `untrusted` (anything a
    /// third party wrote), `private` (customer records, secrets), both as a
    /// list, or `trusted`. HTTP and MCP bindings default to `untrusted`; mocks
    /// to nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<crate::ToolOutput>,
    /// It sends data out though it changes nothing (a URL fetcher, a search
    /// that carries its query to a third party): the rule of two counts it
    /// as an act, whatever its effect.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sends: bool,
    /// Arguments the gateway fills at call time, never the model: the
    /// parameter's name and a template of `{principal}`, `{claims.NAME}` or
    /// `${env.NAME}`, e.g. `{tenant_id: "{claims.tenant}"}`, or `{host}` for a
    /// value the MCP host sends as a secure argument (SEP-3221). Injected
    /// parameters are left out of every description of the tool; a call
    /// that supplies one is refused.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub inject: IndexMap<String, String>,
    /// What one call costs, for the budgets that count cost: a number
    /// (`cost: 3`) or an argument's value (`cost: {arg: amount_cents}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<super::Cost>,
}

/// The effect a spec tool has when it does not say.
pub const DEFAULT_SPEC_EFFECT: Effect = Effect::Write;

impl ToolSpec {
    /// The declared effect, or [`DEFAULT_SPEC_EFFECT`].
    pub fn effect(&self) -> Effect {
        self.effect.unwrap_or(DEFAULT_SPEC_EFFECT)
    }

    /// Whether the tool runs in the background (`scheduling` implies it).
    pub fn is_background(&self) -> bool {
        self.background || self.scheduling.is_some()
    }

    /// How a background tool's result is delivered (`when_idle` unless it says);
    /// `None` for a tool the model waits on.
    pub fn background_scheduling(&self) -> Option<Scheduling> {
        self.is_background()
            .then(|| self.scheduling.unwrap_or(Scheduling::WhenIdle))
    }

    /// The JSON Schema of the arguments; an empty object schema when none is declared.
    pub fn input_schema(&self) -> Value {
        self.parameters
            .clone()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}))
    }

    /// What a mock returns before interpolation.
    pub fn canned_response(&self) -> Value {
        self.response
            .clone()
            .unwrap_or_else(|| serde_json::json!({"ok": true}))
    }

    /// What its result brings in: its `output:`, else `untrusted` for HTTP and
    /// MCP bindings, else nothing.
    pub fn output_labels(&self) -> crate::Labels {
        match &self.output {
            Some(output) => output.brings(),
            None if self.binding_kind() == BindingKind::Mock => crate::Labels::default(),
            None => crate::Labels::UNTRUSTED,
        }
    }

    /// Which binding runs the tool when no native implementation is registered.
    pub fn binding_kind(&self) -> BindingKind {
        if self.mcp.is_some() {
            BindingKind::Mcp
        } else if self.http.is_some() {
            BindingKind::Http
        } else {
            BindingKind::Mock
        }
    }
}

/// What executes a tool, in precedence order: native, MCP, HTTP, mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BindingKind {
    /// A Rust handler registered with the gate under the tool's name.
    Native,
    /// A tool of an upstream MCP server (`mcp:`).
    Mcp,
    /// An HTTP request (`http:`).
    Http,
    /// The canned `response` (or `{"ok": true}`), filled from the arguments.
    Mock,
}

impl BindingKind {
    /// The kind's name in `spec check` and `list` output.
    pub fn as_str(self) -> &'static str {
        match self {
            BindingKind::Native => "native",
            BindingKind::Mcp => "mcp",
            BindingKind::Http => "http",
            BindingKind::Mock => "mock",
        }
    }
}

/// An HTTP request that implements a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpBinding {
    /// The request method (default GET).
    #[serde(default)]
    pub method: HttpMethod,
    /// The absolute http(s) URL; may interpolate `{args.NAME}` and `{state.KEY}`, and
    /// `${env.NAME}` in its path and query (masked as a secret), never in its host.
    pub url: String,
    /// Request headers; values may also reference `${env.NAME}`. A placeholder
    /// reading a list or an object is written in OpenAPI's `simple` style: `a,b`,
    /// and `k,v,k2,v2` for an object (unexploded).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// Headers (named as in `headers`) whose placeholders write an object
    /// exploded, `k=v,k2=v2` (OpenAPI's `simple` style with `explode: true`); a
    /// list is written the same either way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explode_headers: Vec<String>,
    /// Query parameters, percent-encoded; values may also reference `${env.NAME}`.
    /// A value that is one placeholder reading nothing is left out; one reading a
    /// list repeats the key. `{value, style, explode}` serializes lists and objects
    /// as OpenAPI's query styles do.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub query: IndexMap<String, QueryValue>,
    /// How path placeholders reading a list, an object or (for `label` and
    /// `matrix`) any value are written, by the argument they read (`id` for
    /// `{args.id}`): OpenAPI's path styles. A placeholder not named here is `simple`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub path: IndexMap<String, super::StyledPath>,
    /// Cookies, sent in one `Cookie` header (a secret); values may reference
    /// `${env.NAME}`, and one that is a placeholder reading nothing is left out.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub cookies: IndexMap<String, String>,
    /// HTTP basic authentication from a user and a password (`${env.NAME}`),
    /// sent as `Authorization: Basic …`, encoded at call time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<super::BasicAuth>,
    /// The request body; without it, POST, PUT and PATCH send the arguments as JSON.
    /// A member whose value is one `{args.NAME}` the call leaves out is left out.
    /// Strings may reference `${env.NAME}`; those values and any under a secret key
    /// (`password`, `api_key`, ...) are masked as secrets, and such a body is never
    /// sent to another origin on a redirect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The body's media type (default `application/json`): `application/x-www-form-urlencoded`
    /// and `multipart/form-data` send an object body's members as form fields, a
    /// `text/...` type sends a string body as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Send no body, even for POST, PUT and PATCH.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_body: bool,
    /// The largest response body read, in bytes (default 1 MiB); a longer body is cut there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_response_bytes: Option<u64>,
    /// Redirects followed at most (default 5; 0 follows none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_redirects: Option<u32>,
    /// The header that carries the call's idempotency key, when it has one
    /// (the caller's, or one the tool derives): `Idempotency-Key` for the
    /// services that take the IETF draft's header, as Stripe and PayPal do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"))]
    pub idempotency_header: Option<String>,
}

/// The method of an HTTP binding's request; `GET` when not given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// Reads; the default.
    #[default]
    Get,
    /// Creates a resource, or runs an action.
    Post,
    /// Replaces.
    Put,
    /// Changes part of the resource.
    Patch,
    /// Deletes.
    Delete,
    /// `GET` without the body.
    Head,
    /// Asks what the resource allows.
    Options,
}

impl HttpMethod {
    /// The method as sent on the request line.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Head => "HEAD",
            HttpMethod::Options => "OPTIONS",
        }
    }
}

/// A `query:` value: a template, or a template with the style that serializes a
/// list or an object (OpenAPI's `style` and `explode`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum QueryValue {
    /// `"{args.q}"`: a list repeats the key (`tag=a&tag=b`).
    Template(String),
    /// `{value: "{args.tags}", explode: false}`: `tag=a,b`.
    Styled(StyledQuery),
}

impl QueryValue {
    /// The template the value is filled from.
    pub fn template(&self) -> &str {
        match self {
            QueryValue::Template(t) => t,
            QueryValue::Styled(s) => &s.value,
        }
    }

    /// The template, to rewrite in place (resolving secrets into it, for one).
    pub fn template_mut(&mut self) -> &mut String {
        match self {
            QueryValue::Template(t) => t,
            QueryValue::Styled(s) => &mut s.value,
        }
    }

    /// Whether reserved characters pass unencoded (`allow_reserved`).
    pub fn allow_reserved(&self) -> bool {
        matches!(self, QueryValue::Styled(s) if s.allow_reserved)
    }

    /// The style and explode flag (form, exploded, for a plain template).
    pub fn style(&self) -> (QueryStyle, bool) {
        match self {
            QueryValue::Template(_) => (QueryStyle::Form, true),
            QueryValue::Styled(s) => (s.style, s.explode),
        }
    }
}

impl From<&str> for QueryValue {
    fn from(template: &str) -> Self {
        QueryValue::Template(template.to_owned())
    }
}

impl From<String> for QueryValue {
    fn from(template: String) -> Self {
        QueryValue::Template(template)
    }
}

/// A query value with its serialization spelled out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StyledQuery {
    /// The template, as a plain `query:` value.
    pub value: String,
    /// How a list or object is written (default `form`).
    #[serde(default, skip_serializing_if = "QueryStyle::is_form")]
    pub style: QueryStyle,
    /// `true` (the default) gives a list item or object member a pair of its own
    /// (`tag=a&tag=b`, `x=1&y=2`); `false` joins them into one value (`tag=a,b`).
    #[serde(default = "explode_default", skip_serializing_if = "is_true")]
    pub explode: bool,
    /// Let RFC 3986's reserved characters (`:/?@!$'()*,;`) and percent-encoded
    /// triples through as they are (OpenAPI's `allowReserved`); `[`, `]`, `#`, `&`,
    /// `=`, `+` and everything else not unreserved are still encoded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_reserved: bool,
}

fn explode_default() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// OpenAPI's query parameter styles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum QueryStyle {
    /// `tag=a&tag=b`, or `tag=a,b` unexploded; an object `x=1&y=2`, or `point=x,1,y,2`.
    #[default]
    Form,
    /// `tag=a%20b` (a list, unexploded).
    SpaceDelimited,
    /// `tag=a|b` (a list, unexploded).
    PipeDelimited,
    /// `filter[x]=1&filter[y]=2` (an object).
    DeepObject,
}

impl QueryStyle {
    fn is_form(&self) -> bool {
        *self == QueryStyle::Form
    }
}

/// The MCP server that implements a tool: a command line (stdio) or an http(s) URL,
/// written as a string, or spelled out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum McpBinding {
    /// `"npx -y some-server"` or `"https://host/mcp"`.
    Short(String),
    /// The server spelled out.
    Full(Box<McpServerRef>),
}

/// An MCP server spelled out, and optionally the tool's name there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerRef {
    /// The program to start (stdio transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment for the program; values may reference `${env.NAME}`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// The streamable HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers; values may reference `${env.NAME}`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// The tool's name on that server, when it differs from the declared name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Which MCP revision to speak to it (see `mcp_servers`' `revision`).
    #[serde(default, skip_serializing_if = "super::UpstreamRevision::is_auto")]
    pub revision: super::UpstreamRevision,
}

/// One key of the conversation's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateKey {
    /// The JSON type of its value.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<StateType>,
    /// What the key means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its value before anything writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// The JSON type a state key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateType {
    /// A JSON string.
    String,
    /// Any JSON number.
    Number,
    /// A number without a fractional part.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
}
