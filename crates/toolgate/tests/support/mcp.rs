//! The official SDK's client (rmcp) against an `McpServer`: a client handler that
//! answers elicitation as told and records the notifications it gets, and the
//! server over a pipe (the stdio transport's framing) or streamable HTTP.

#![allow(deprecated)] // MCP logging: deprecated in 2026-07-28, current in 2025-11-25.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::{McpServer, ServeError, ServeReport};
use toolgate::serve::FrontDoor;

/// A client that answers elicitation as told and keeps the notifications it gets.
#[derive(Clone, Default)]
pub struct Client {
    /// `None`: the client does not declare elicitation.
    pub answer: Option<(ElicitationAction, Option<Value>)>,
    pub asked: Arc<Mutex<Vec<String>>>,
    pub progress: Arc<Mutex<Vec<f64>>>,
    pub progress_tokens: Arc<Mutex<Vec<ProgressToken>>>,
    pub tools_changed: Arc<Mutex<usize>>,
    pub logs: Arc<Mutex<Vec<Value>>>,
}

impl Client {
    pub fn answering(action: ElicitationAction, content: Option<Value>) -> Self {
        Client {
            answer: Some((action, content)),
            ..Client::default()
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.answer {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("test-client", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        let (action, content) = self.answer.clone().expect("asked without the capability");
        let mut result = ElicitResult::new(action);
        result.content = content;
        Ok(result)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
        self.progress_tokens
            .lock()
            .unwrap()
            .push(params.progress_token);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.tools_changed.lock().unwrap() += 1;
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params.data);
    }
}

/// A server on one end of a pipe, a client on the other.
pub struct PipeSession {
    pub client: RunningService<RoleClient, Client>,
    pub stop: oneshot::Sender<()>,
    pub server: JoinHandle<Result<ServeReport, ServeError>>,
}

pub async fn over_pipe(server: McpServer, client: Client) -> PipeSession {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(server.serve_stream(tokio::io::split(server_io), async {
        let _ = stopped.await;
    }));
    let client = client.serve(tokio::io::split(client_io)).await.unwrap();
    PipeSession {
        client,
        stop,
        server,
    }
}

/// A server on a loopback port; its URL, and how to stop it.
pub struct HttpServer {
    pub url: String,
    pub stop: oneshot::Sender<()>,
    pub server: JoinHandle<Result<ServeReport, ServeError>>,
}

pub async fn over_http(server: McpServer, access: HttpAccess) -> HttpServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(FrontDoor::new(server, access).serve(listener, async {
        let _ = stopped.await;
    }));
    HttpServer { url, stop, server }
}

/// A `tools/call` of `name` with `arguments` (a JSON object).
pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// A result's text content, one line a block.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
