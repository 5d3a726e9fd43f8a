//! Asynchronous approval over MCP (the draft SEP-2848, on the tasks extension),
//! driven by the official SDK's client (rmcp) over streamable HTTP on loopback:
//! a call that waits for an approver answers with a task carrying SEP-2643's
//! `available` envelope; `tasks/get` keeps it working until a person answers,
//! then runs the call through the gate once, from whichever server sharing the
//! store is asked first, and completes with the result and a disposition; a
//! denial completes it without running anything; `tasks/cancel` withdraws it.

#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, Implementation, TaskStatus as McpStatus,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::{McpServer, ServeOptions};
use toolgate::serve::FrontDoor;
use toolgate::spec::SpecFile;
use toolgate::store::{ApprovalStatus, ApprovalStore};
use toolgate::{Catalog, Gate, MemoryGateStore, Tool, ToolCtx, ToolError, ToolHandler};

/// Send a wire transfer.
#[derive(Tool)]
#[tool(effect = "external")]
struct WireTransfer(Arc<AtomicUsize>);

#[derive(Deserialize, JsonSchema)]
struct Transfer {
    /// Dollars.
    amount: u64,
}

impl ToolHandler for WireTransfer {
    type Input = Transfer;
    type Output = Value;
    async fn call(&self, _ctx: &ToolCtx, transfer: Transfer) -> Result<Value, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"sent": transfer.amount}))
    }
}

const SPEC: &str = r#"
policy:
  rules:
    - {tools: wire_transfer, decision: ask, reason: transfers need treasury approval}
tools:
  - name: wire_transfer
    description: Send a wire transfer.
    effect: external
"#;

fn server(
    store: Arc<MemoryGateStore>,
    runs: &Arc<AtomicUsize>,
    options: ServeOptions,
) -> McpServer {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    let spec: SpecFile = serde_json::from_value(doc.value).unwrap();
    let natives = Catalog::new()
        .with_native(WireTransfer(runs.clone()))
        .unwrap();
    let gate = Arc::new(Gate::from_spec(&spec, "tools.yaml", &natives, store).unwrap());
    McpServer::builder(gate).options(options).build()
}

#[derive(Clone, Default)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_tasks().build();
        ClientConfig::new(
            capabilities,
            Implementation::new("approvals-client", "1.0.0"),
        )
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

async fn client(url: &str) -> RunningService<RoleClient, Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    Client
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn transfer(amount: u64) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({"amount": amount}) else {
        unreachable!()
    };
    CallToolRequestParams::new("wire_transfer").with_arguments(arguments)
}

/// A whole MCP message as JSON.
fn wire(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

async fn get(client: &RunningService<RoleClient, Client>, id: &str) -> GetTaskResult {
    client.get_task(GetTaskParams::new(id)).await.unwrap()
}

struct Desk {
    store: Arc<MemoryGateStore>,
    runs: Arc<AtomicUsize>,
    url: String,
    _stop: oneshot::Sender<()>,
}

async fn desk() -> Desk {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let (url, stop) = over_http(server(store.clone(), &runs, ServeOptions::default())).await;
    Desk {
        store,
        runs,
        url,
        _stop: stop,
    }
}

#[tokio::test]
async fn a_call_waiting_for_an_approver_is_a_task_that_runs_once_when_approved() {
    let desk = desk().await;
    let client = client(&desk.url).await;
    let info = wire(&client.peer_info().unwrap().capabilities);
    assert!(
        info["extensions"]
            .get("io.modelcontextprotocol/tool-approval")
            .is_some(),
        "{info}"
    );

    let response = client.call_tool_once(transfer(50_000)).await.unwrap();
    let CallToolResponse::Task(created) = &response else {
        panic!("{response:?}")
    };
    let created = wire(created);
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert!(
        created["statusMessage"]
            .as_str()
            .unwrap()
            .contains("transfers need treasury approval"),
        "{created}"
    );
    assert_eq!(
        created["_meta"]["io.modelcontextprotocol/authorization"],
        json!({"reason": "insufficient_authorization", "remediation": "available",
               "remediationHints": [{"type": "task"}]})
    );
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("ap-"), "the task is the approval: {id}");

    // Waiting: working, the envelope repeated, nothing ran.
    let waiting = wire(&get(&client, &id).await);
    assert_eq!(waiting["status"], "working", "{waiting}");
    assert_eq!(
        waiting["_meta"]["io.modelcontextprotocol/authorization"]["remediation"],
        "available"
    );
    assert_eq!(desk.runs.load(Ordering::SeqCst), 0);

    // A person approves out of band; the next tasks/get runs it, once.
    desk.store.approve(&id, None, SystemTime::now()).unwrap();
    let done = wire(&get(&client, &id).await);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        done["result"]["_meta"]["io.modelcontextprotocol/tool-approval-disposition"],
        "approved-executed"
    );
    let again = wire(&get(&client, &id).await);
    assert_eq!(again["status"], "completed");
    assert_eq!(desk.runs.load(Ordering::SeqCst), 1, "run once, read twice");
    let approval = ApprovalStore::get(desk.store.as_ref(), &id)
        .unwrap()
        .unwrap();
    assert_eq!(approval.status, ApprovalStatus::Consumed);
}

#[tokio::test]
async fn a_denied_task_completes_without_running_and_says_so() {
    let desk = desk().await;
    let client = client(&desk.url).await;
    let CallToolResponse::Task(created) = client.call_tool_once(transfer(90_000)).await.unwrap()
    else {
        panic!("a task")
    };
    let id = created.task.task_id;
    desk.store
        .deny(&id, Some("over the monthly limit"), SystemTime::now())
        .unwrap();
    let done = wire(&get(&client, &id).await);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(
        done["result"]["_meta"]["io.modelcontextprotocol/tool-approval-disposition"],
        "denied-not-executed"
    );
    assert_eq!(
        done["result"]["_meta"]["io.modelcontextprotocol/authorization"]["remediation"],
        "unavailable"
    );
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("over the monthly limit"),
        "{done}"
    );
    assert_eq!(desk.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn another_server_on_the_same_store_answers_for_the_task() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let (first, stop) = over_http(server(store.clone(), &runs, ServeOptions::default())).await;
    let id = {
        let client = client(&first).await;
        let CallToolResponse::Task(created) =
            client.call_tool_once(transfer(10_000)).await.unwrap()
        else {
            panic!("a task")
        };
        created.task.task_id
    };
    // The first server is gone (a restart, or another instance behind a balancer).
    drop(stop);
    store.approve(&id, None, SystemTime::now()).unwrap();
    let (second, _stop) = over_http(server(store.clone(), &runs, ServeOptions::default())).await;
    let client = client(&second).await;
    let done = wire(&get(&client, &id).await);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cancelled_task_withdraws_the_call() {
    let desk = desk().await;
    let client = client(&desk.url).await;
    let CallToolResponse::Task(created) = client.call_tool_once(transfer(20_000)).await.unwrap()
    else {
        panic!("a task")
    };
    let id = created.task.task_id;
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    let done = get(&client, &id).await;
    assert_eq!(done.task.status(), McpStatus::Cancelled);
    let approval = ApprovalStore::get(desk.store.as_ref(), &id)
        .unwrap()
        .unwrap();
    assert_eq!(approval.status, ApprovalStatus::Denied);
    // Read again, it stays withdrawn.
    assert_eq!(get(&client, &id).await.task.status(), McpStatus::Cancelled);
    assert_eq!(desk.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_the_option_a_waiting_call_fails_now_as_before() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let options = ServeOptions {
        async_approvals: false,
        ..ServeOptions::default()
    };
    let (url, _stop) = over_http(server(store, &runs, options)).await;
    let client = client(&url).await;
    let response = client.call_tool_once(transfer(50_000)).await.unwrap();
    let CallToolResponse::Complete(result) = response else {
        panic!("{response:?}")
    };
    assert_eq!(result.is_error, Some(true));
}
