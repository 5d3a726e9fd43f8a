//! Running `http:` bindings: one request per call, under the spec file's network policy.
//!
//! Each hop (the first request and every redirect) is checked before anything is
//! sent, by the checked resolver of [`super::resolver`]: the scheme must be http(s),
//! an IP-literal host must pass the policy on the hop's port, and a host name is
//! resolved to the addresses that pass only. Redirects are followed here, not by the
//! client, so each target is checked the same way; when a redirect leaves the
//! origin, secret headers are dropped, and a body that carries credentials is not
//! sent again: the call fails instead, saying so.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use serde_json::Value;
use toolgate_core::spec::{HttpBinding, HttpMethod, NetworkPolicy, NetworkSection, ToolSpec};
use toolgate_core::{ToolCtx, ToolError, redact_headers};
use tracing::Instrument;
use url::Url;

use super::fill::EnvLookup;
use super::request::{Prepared, prepare};
use super::resolver::{UrlRefusal, check_literal, checked_client, refusal_in, url_port};
use super::response::{
    DEFAULT_MAX_RESPONSE_BYTES, error_body_limit, is_json, parse_retry_after, read_limited,
    status_error, success_value,
};
use super::secrets::Secrets;

/// The total time a request may take when the tool declares no `timeout`.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait for a connection; a tool's shorter `timeout` applies too.
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Redirects followed when a binding does not say.
pub const DEFAULT_MAX_REDIRECTS: u32 = 5;
/// Pooled clients kept at most (one per connect timeout and port); past it the pool
/// starts again, so redirects through many ports cannot grow it without end.
const MAX_CLIENTS: usize = 64;

/// Runs HTTP bindings for the tools of one spec file: its network policy, the
/// environment `${env.NAME}` reads, and pooled clients. Share one per spec file.
///
/// ```no_run
/// # async fn demo(tool: &toolgate::spec::ToolSpec) -> Result<(), toolgate::ToolError> {
/// use toolgate::spec::NetworkSection;
/// use toolgate::{http::HttpRuntime, Principal, ToolCtx};
///
/// let runtime = HttpRuntime::new(&NetworkSection::default());
/// let ctx = ToolCtx::new("call-1", Principal::operator());
/// let value = runtime.call(tool, &ctx, &serde_json::json!({"id": "A-1"})).await?;
/// # Ok(()) }
/// ```
pub struct HttpRuntime {
    policy: Arc<NetworkPolicy>,
    env: Arc<EnvLookup>,
    clients: Mutex<HashMap<(Duration, u16), reqwest::Client>>,
}

impl std::fmt::Debug for HttpRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRuntime")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Default for HttpRuntime {
    fn default() -> Self {
        HttpRuntime::new(&NetworkSection::default())
    }
}

impl HttpRuntime {
    /// A runtime under `network`, reading `${env.NAME}` from the process environment.
    pub fn new(network: &NetworkSection) -> Self {
        HttpRuntime {
            policy: Arc::new(NetworkPolicy::new(network)),
            env: Arc::new(|name: &str| std::env::var(name).ok()),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Reads `${env.NAME}` from `lookup` instead of the process environment.
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.env = Arc::new(lookup);
        self
    }

    /// The network policy every request is checked against: which addresses and hosts it may reach.
    pub fn policy(&self) -> &NetworkPolicy {
        &self.policy
    }

    /// The addresses a request to `url` may connect to, resolving its host as the
    /// connector would; the refusal when there are none.
    pub async fn check_url(&self, url: &Url) -> Result<Vec<IpAddr>, ToolError> {
        super::resolver::check_url(&self.policy, url)
            .await
            .map_err(refusal_error)
    }

    /// Runs `tool`'s HTTP binding with `arguments`: the value of a 2xx response, or
    /// an error the gate can act on (retryable for 429, 5xx, timeouts and broken
    /// connections; permanent otherwise).
    pub async fn call(
        &self,
        tool: &ToolSpec,
        ctx: &ToolCtx,
        arguments: &Value,
    ) -> Result<Value, ToolError> {
        let Some(binding) = &tool.http else {
            return Err(ToolError::permanent(format!(
                "tool `{}` has no `http:` binding",
                tool.name
            )));
        };
        let mut prepared = prepare(binding, arguments, ctx.state_map(), &*self.env)?;
        if let (Some(header), Some(key)) = (&binding.idempotency_header, ctx.idempotency_key()) {
            prepared
                .headers
                .retain(|(name, _, _)| !name.eq_ignore_ascii_case(header));
            prepared
                .headers
                .push((header.clone(), key.to_owned(), false));
        }
        let timeout = tool
            .timeout
            .as_deref()
            .and_then(|t| humantime::parse_duration(t).ok())
            .unwrap_or(DEFAULT_HTTP_TIMEOUT);
        let mut deadline = Instant::now() + timeout;
        if let Some(outer) = ctx.deadline() {
            deadline = deadline.min(outer);
        }
        let host = host_label(&prepared.url);
        let secrets = prepared.secrets.clone();
        let exchange = self.exchange(
            &tool.name,
            binding,
            prepared,
            timeout.min(MAX_CONNECT_TIMEOUT),
        );
        let result = tokio::select! {
            _ = ctx.cancellation().cancelled() => Err(ToolError::permanent(format!(
                "the request to {host} was cancelled"
            ))),
            result = tokio::time::timeout_at(deadline.into(), exchange) => match result {
                Ok(result) => result,
                // The request may have gone out: what it did is not known.
                Err(_) => Err(ToolError::unknown(format!(
                    "{host} did not answer within {} (the tool's timeout); the request may have been received",
                    humantime::format_duration(timeout)
                ))),
            },
        };
        match result {
            Ok(value) => Ok(secrets.mask_value(value)),
            Err(error) => {
                tracing::debug!(tool = %tool.name, error = %secrets.mask(&error.to_string()), "HTTP binding failed");
                Err(mask_error(error, &secrets))
            }
        }
    }

    /// Sends the request and follows redirects, checking every hop.
    async fn exchange(
        &self,
        tool: &str,
        binding: &HttpBinding,
        prepared: Prepared,
        connect_timeout: Duration,
    ) -> Result<Value, ToolError> {
        let limit = binding
            .max_response_bytes
            .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES)
            .max(1);
        let max_redirects = binding.max_redirects.unwrap_or(DEFAULT_MAX_REDIRECTS);
        let Prepared {
            method,
            mut url,
            mut headers,
            mut body,
            content_type: body_type,
            body_has_secrets,
            secrets,
        } = prepared;
        let mut method = to_method(method);
        let mut redirects = 0;
        loop {
            check_literal(&self.policy, &url).map_err(refusal_error)?;
            let client = self.client(connect_timeout, &url)?;
            let host = host_label(&url);
            let started = Instant::now();
            tracing::debug!(tool, method = %method, url = %secrets.mask(url.as_str()), "HTTP request");
            if tracing::enabled!(tracing::Level::TRACE) {
                let shown: Vec<(String, String)> = redact_headers(
                    headers
                        .iter()
                        .map(|(name, value, _)| (name.as_str(), value.as_str())),
                )
                .into_iter()
                .map(|(name, value)| (name, secrets.mask(&value)))
                .collect();
                tracing::trace!(tool, headers = ?shown, "HTTP request headers");
            }
            let mut request = client.request(method.clone(), url.clone());
            let mut has_accept = false;
            let mut has_content_type = false;
            for (name, value, secret) in &headers {
                has_accept |= name.eq_ignore_ascii_case("accept");
                has_content_type |= name.eq_ignore_ascii_case("content-type");
                let mut value = reqwest::header::HeaderValue::from_bytes(value.as_bytes())
                    .map_err(|_| {
                        ToolError::permanent(format!(
                            "header `{name}` has a value HTTP cannot carry"
                        ))
                    })?;
                value.set_sensitive(*secret);
                request = request.header(name.as_str(), value);
            }
            if !has_accept {
                request = request.header(ACCEPT, "application/json, text/plain;q=0.9, */*;q=0.8");
            }
            if let Some(bytes) = &body {
                if !has_content_type {
                    request = request.header(
                        CONTENT_TYPE,
                        body_type.as_deref().unwrap_or("application/json"),
                    );
                }
                request = request.body(bytes.clone());
            }
            // The client span of the request (the HTTP conventions: no query
            // string, which may hold a secret), its trace context sent on.
            let span = tracing::info_span!(
                "http.client",
                otel.name = %method,
                otel.kind = "client",
                http.request.method = %method,
                server.address = url.host_str().unwrap_or_default(),
                url.path = %secrets.mask(url.path()),
                http.response.status_code = tracing::field::Empty,
                toolgate.tool = tool,
            );
            for (name, value) in crate::telemetry::trace_fields(&span) {
                request = request.header(name, value);
            }
            let mut response = request
                .send()
                .instrument(span.clone())
                .await
                .map_err(|e| send_error(&e, &host, connect_timeout))?;
            let status = response.status();
            span.record("http.response.status_code", i64::from(status.as_u16()));
            tracing::debug!(
                tool,
                status = status.as_u16(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "HTTP response"
            );
            if status.is_redirection()
                && let Some(location) = response.headers().get(LOCATION)
            {
                if redirects >= max_redirects {
                    return Err(ToolError::permanent(format!(
                        "{host} redirected more than {max_redirects} times; raise the binding's `max_redirects` or call the final URL directly"
                    )));
                }
                redirects += 1;
                let next = location
                    .to_str()
                    .ok()
                    .and_then(|l| url.join(l).ok())
                    .ok_or_else(|| {
                        ToolError::permanent(format!(
                            "{host} redirected to a location that is not a URL"
                        ))
                    })?;
                let code = status.as_u16();
                if code == 303 || (matches!(code, 301 | 302) && method == reqwest::Method::POST) {
                    method = reqwest::Method::GET;
                    body = None;
                }
                if next.origin() != url.origin() {
                    headers.retain(|(_, _, secret)| !secret);
                    if body.is_some() && body_has_secrets {
                        return Err(ToolError::permanent(format!(
                            "{host} answered {code} to send the request, body included, to {}; the body carries credentials, which are never sent to another origin, so the request was not repeated there; call that URL directly if it is meant",
                            host_label(&next)
                        )));
                    }
                }
                tracing::debug!(tool, status = code, to = %secrets.mask(next.as_str()), "following redirect");
                url = next;
                continue;
            }
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if status.is_success() {
                if is_json(content_type.as_deref())
                    && response.content_length().is_some_and(|n| n > limit)
                {
                    return Err(ToolError::permanent(format!(
                        "the JSON response from {host} is larger than the limit of {limit} bytes, so it was not read; raise the binding's `max_response_bytes` if the tool needs it"
                    )));
                }
                let body = read_limited(&mut response, limit).await.map_err(|e| {
                    ToolError::unknown(format!(
                        "{host} answered {status} but its response broke off ({}), so what it did is not known",
                        root_cause(&e)
                    ))
                })?;
                if body.truncated {
                    tracing::debug!(tool, limit, "response cut at the size limit");
                }
                return success_value(status.as_u16(), content_type.as_deref(), body, &host, limit);
            }
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now()));
            let excerpt = read_limited(&mut response, error_body_limit(limit))
                .await
                .map(|b| b.bytes)
                .unwrap_or_default();
            return Err(status_error(status, retry_after, &excerpt, &host, &secrets));
        }
    }

    /// The client for a connect timeout and the port of `url`: built once, then
    /// shared (with its pool). Its resolver checks addresses for that port.
    fn client(&self, connect_timeout: Duration, url: &Url) -> Result<reqwest::Client, ToolError> {
        let port = url_port(url).unwrap_or_default();
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&(connect_timeout, port)) {
            return Ok(client.clone());
        }
        let client = checked_client(self.policy.clone(), port)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(connect_timeout)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ToolError::permanent(format!("cannot start the HTTP client: {}", root_cause(&e)))
            })?;
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert((connect_timeout, port), client.clone());
        Ok(client)
    }
}

/// A refused URL as a tool error: permanent unless it was a failed lookup.
fn refusal_error(refusal: UrlRefusal) -> ToolError {
    match refusal {
        UrlRefusal::Scheme(scheme) => ToolError::permanent(format!(
            "refused a `{scheme}:` URL; HTTP bindings speak only http and https"
        )),
        refusal if refusal.may_pass() => ToolError::retryable(refusal.to_string()),
        refusal => ToolError::permanent(refusal.to_string()),
    }
}

/// `host` or `host:port`, for messages.
fn host_label(url: &Url) -> String {
    let host = url.host_str().unwrap_or("(no host)");
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

fn to_method(method: HttpMethod) -> reqwest::Method {
    match method {
        HttpMethod::Get => reqwest::Method::GET,
        HttpMethod::Post => reqwest::Method::POST,
        HttpMethod::Put => reqwest::Method::PUT,
        HttpMethod::Patch => reqwest::Method::PATCH,
        HttpMethod::Delete => reqwest::Method::DELETE,
        HttpMethod::Head => reqwest::Method::HEAD,
        HttpMethod::Options => reqwest::Method::OPTIONS,
    }
}

/// The innermost cause of an error: the part that says what happened, without the
/// URL the outer layers add.
fn root_cause(error: &(dyn StdError + 'static)) -> String {
    let mut cause = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

/// A failed send as a tool error: a policy refusal from the resolver is permanent;
/// a connect timeout or failure (nothing was sent) may pass; a failure once
/// connected leaves the outcome unknown.
fn send_error(error: &reqwest::Error, host: &str, connect_timeout: Duration) -> ToolError {
    if let Some(refusal) = refusal_in(error) {
        return refusal_error(UrlRefusal::Policy(refusal));
    }
    let root = root_cause(error);
    if error.is_timeout() {
        ToolError::retryable(format!(
            "could not connect to {host} within {}",
            humantime::format_duration(connect_timeout)
        ))
    } else if error.is_connect() {
        ToolError::retryable(format!("could not connect to {host}: {root}"))
    } else {
        // Connected, so the request may have been received before it failed.
        ToolError::unknown(format!(
            "the connection to {host} failed before it answered ({root}); the request may have been received"
        ))
    }
}

/// The error with every secret masked out of its message.
fn mask_error(error: ToolError, secrets: &Secrets) -> ToolError {
    if secrets.is_empty() {
        return error;
    }
    match error {
        ToolError::Retryable {
            message,
            retry_after,
        } => ToolError::Retryable {
            message: secrets.mask(&message),
            retry_after,
        },
        ToolError::Permanent { message } => ToolError::Permanent {
            message: secrets.mask(&message),
        },
        ToolError::InvalidInput { message } => ToolError::InvalidInput {
            message: secrets.mask(&message),
        },
        ToolError::Unknown { message } => ToolError::Unknown {
            message: secrets.mask(&message),
        },
    }
}
