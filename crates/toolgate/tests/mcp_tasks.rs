//! The MCP tasks extension on `toolgate serve`, driven by the official SDK's client
//! (rmcp) over streamable HTTP on loopback and over a pipe (the stdio framing): a
//! background tool's call answers with a task, `tasks/get` polls it to its result,
//! `tasks/cancel` cancels it through the gate, and the task outlives the client
//! that started it.

#![cfg(feature = "mcp")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, Implementation, NumberOrString, ProgressNotificationParam,
    ProgressToken, TaskStatus as McpStatus, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::{Downstream, McpServer};
use toolgate::serve::FrontDoor;
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, MemoryGateStore, Principal, Tool, ToolCtx, ToolError, ToolHandler,
    gate::TaskFilter, store::AuditLog, store::TaskStatus,
};

/// Build a report, reporting progress, taking `millis`.
#[derive(Tool)]
#[tool(effect = "write")]
struct BuildReport;

#[derive(Deserialize, JsonSchema)]
struct Job {
    millis: u64,
}

impl ToolHandler for BuildReport {
    type Input = Job;
    type Output = Value;
    async fn call(&self, ctx: &ToolCtx, job: Job) -> Result<Value, ToolError> {
        if let Some(downstream) = Downstream::current() {
            downstream
                .progress(1.0, Some(2.0), Some("half".into()))
                .await;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(job.millis)) => {}
            _ = ctx.cancellation().cancelled() => return Err(ToolError::permanent("stopped")),
        }
        Ok(json!({"report": "ready"}))
    }
}

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

impl ToolHandler for LookupOrder {
    type Input = Job;
    type Output = Value;
    async fn call(&self, _ctx: &ToolCtx, _job: Job) -> Result<Value, ToolError> {
        Ok(json!({"status": "shipped"}))
    }
}

const SPEC: &str = r#"
policy:
  effects: {write: allow, read: allow}
tools:
  - name: build_report
    description: Build a report.
    effect: write
    background: true
  - name: lookup_order
    description: Look up an order.
    effect: read
"#;

fn server(store: Arc<MemoryGateStore>) -> (McpServer, Arc<Gate>) {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    let spec: SpecFile = serde_json::from_value(doc.value).unwrap();
    let natives = Catalog::new()
        .with_native(BuildReport)
        .unwrap()
        .with_native(LookupOrder)
        .unwrap();
    let gate = Arc::new(Gate::from_spec(&spec, "tools.yaml", &natives, store).unwrap());
    (McpServer::builder(gate.clone()).build(), gate)
}

#[derive(Clone, Default)]
struct Client {
    tasks: bool,
    progress: Arc<Mutex<Vec<f64>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("tasks-client", "1.0.0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }
}

fn tasking() -> Client {
    Client {
        tasks: true,
        ..Client::default()
    }
}

async fn over_http(server: McpServer) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(
        FrontDoor::new(server, HttpAccess::open()).serve(listener, async {
            let _ = stopped.await;
        }),
    );
    (url, stop)
}

async fn http_client(url: &str, client: Client) -> RunningService<RoleClient, Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    client
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn over_pipe(server: McpServer, client: Client) -> RunningService<RoleClient, Client> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(server.serve_stream(tokio::io::split(server_io), std::future::pending()));
    client.serve(tokio::io::split(client_io)).await.unwrap()
}

fn call(name: &str, millis: u64) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({"millis": millis}) else {
        unreachable!()
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

fn task_of(response: CallToolResponse) -> String {
    match response {
        CallToolResponse::Task(task) => task.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn settled(client: &RunningService<RoleClient, Client>, id: &str) -> GetTaskResult {
    for _ in 0..100 {
        let got = client.get_task(GetTaskParams::new(id)).await.unwrap();
        if got.task.status() != McpStatus::Working {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never ended")
}

fn result_text(got: &GetTaskResult) -> String {
    let value = serde_json::to_value(&got.task).unwrap();
    value["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_background_tool_called_over_http_answers_with_a_task_polled_to_its_result() {
    let store = Arc::new(MemoryGateStore::default());
    let (server, _gate) = server(store.clone());
    let (url, _stop) = over_http(server).await;
    let client = http_client(&url, tasking()).await;
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert!(capabilities.supports_tasks(), "{capabilities:?}");

    let response = client
        .call_tool_once(call("build_report", 300))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = &response else {
        panic!("{response:?}")
    };
    assert_eq!(created.task.ttl_ms, Some(3_600_000));
    let id = created.task.task_id.clone();
    let working = client.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(working.task.status(), McpStatus::Working);
    // tasks/update has nothing to answer, and ignores what it is sent.
    let mut responses = rmcp::model::InputResponses::default();
    responses.insert("unknown-key".into(), json!({"action": "accept"}));
    client
        .update_task(UpdateTaskParams::new(&id, responses))
        .await
        .unwrap();

    let done = settled(&client, &id).await;
    assert_eq!(done.task.status(), McpStatus::Completed);
    assert!(result_text(&done).contains("ready"), "{done:?}");
    // A tool that does not run in the background answers as ever.
    let plain = client
        .call_tool_once(call("lookup_order", 0))
        .await
        .unwrap();
    assert!(matches!(plain, CallToolResponse::Complete(_)), "{plain:?}");
    // The gate recorded the call as any other.
    assert!(store.pending().unwrap().is_empty());
    let unknown = client.get_task(GetTaskParams::new("task-nope")).await;
    assert!(
        format!("{unknown:?}").contains("no task has id"),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn a_task_cancelled_over_mcp_is_cancelled_in_the_gate() {
    let store = Arc::new(MemoryGateStore::default());
    let (server, gate) = server(store.clone());
    let (url, _stop) = over_http(server).await;
    let client = http_client(&url, tasking()).await;
    let id = task_of(
        client
            .call_tool_once(call("build_report", 30_000))
            .await
            .unwrap(),
    );
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    let done = settled(&client, &id).await;
    assert_eq!(done.task.status(), McpStatus::Cancelled);
    let task = gate.task(&id, &Principal::operator()).unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled);
    // Cancelling it again is the same empty acknowledgement.
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_task_outlives_the_client_that_started_it() {
    let (server, gate) = server(Arc::default());
    let (url, _stop) = over_http(server).await;
    let first = http_client(&url, tasking()).await;
    let id = task_of(
        first
            .call_tool_once(call("build_report", 300))
            .await
            .unwrap(),
    );
    first.cancel().await.unwrap();

    let second = http_client(&url, tasking()).await;
    let done = settled(&second, &id).await;
    assert_eq!(done.task.status(), McpStatus::Completed);
    let all = gate
        .tasks(&TaskFilter::default(), &Principal::operator())
        .unwrap();
    assert_eq!(all.len(), 1);
}

#[tokio::test]
async fn over_stdio_a_task_reports_progress_and_any_call_may_ask_to_be_a_task() {
    let (server, _gate) = server(Arc::default());
    let client = tasking();
    let progress = client.progress.clone();
    let running = over_pipe(server, client).await;

    let mut params = call("build_report", 200);
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    params.meta = Some(meta);
    let id = task_of(running.call_tool_once(params).await.unwrap());
    let done = settled(&running, &id).await;
    assert_eq!(done.task.status(), McpStatus::Completed);
    assert_eq!(*progress.lock().unwrap(), [1.0]);

    let mut asked = call("lookup_order", 0);
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.insert("toolgate/task".into(), json!(true));
    asked.meta = Some(meta);
    let id = task_of(running.call_tool_once(asked).await.unwrap());
    assert!(result_text(&settled(&running, &id).await).contains("shipped"));
}

#[tokio::test]
async fn a_client_without_the_extension_waits_for_a_background_call_s_result() {
    let (server, gate) = server(Arc::default());
    let running = over_pipe(server, Client::default()).await;
    let response = running
        .call_tool_once(call("build_report", 100))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = response else {
        panic!("{response:?}")
    };
    assert_eq!(result.is_error, Some(false));
    let text = serde_json::to_string(&result.content).unwrap();
    assert!(text.contains("ready"), "{text}");
    // It still ran as a task of the gate.
    let all = gate
        .tasks(&TaskFilter::default(), &Principal::operator())
        .unwrap();
    assert_eq!(all[0].status, TaskStatus::Completed);
    // And tasks/* need the extension.
    let refused = running.get_task(GetTaskParams::new(&all[0].id)).await;
    assert!(refused.is_err(), "{refused:?}");
}
