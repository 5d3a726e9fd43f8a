//! Search by meaning runs its model off the async workers: `search_tools` with a
//! scorer embeds its query on a blocking thread, so one session's slow embedding
//! never stalls another's call. Served over streamable HTTP on loopback on a
//! current-thread runtime, where a search that blocked the worker would block
//! every session; the scorer stands in for a slow model.

#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::McpServer;
use toolgate::search::Scorer;
use toolgate::serve::FrontDoor;
use toolgate::{
    Catalog, DynTool, Gate, ToolDescriptor, search::CatalogScorer, search::SearchTools,
    spec::SpecTool,
};

/// A scorer as slow as a model on a busy machine: each query waits until
/// `released` is set (at most `PATIENCE`), and notes whether it was.
#[derive(Default)]
struct SlowScorer {
    started: AtomicBool,
    released: AtomicBool,
    released_in_time: AtomicBool,
}

const PATIENCE: Duration = Duration::from_secs(10);

impl Scorer for SlowScorer {
    fn rank(&self, _query: &str, _limit: usize) -> Vec<String> {
        self.started.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if self.released.load(Ordering::SeqCst) {
                self.released_in_time.store(true, Ordering::SeqCst);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Vec::new()
    }
}

impl CatalogScorer for SlowScorer {
    fn insert(&self, _tool: &ToolDescriptor) {}
    fn remove(&self, _name: &str) {}
}

fn spec_tool(name: &str, description: &str) -> Arc<dyn DynTool> {
    let spec = serde_json::from_value(json!({
        "name": name, "description": description, "effect": "read", "response": "found"
    }))
    .unwrap();
    Arc::new(SpecTool::new(spec, "support.yaml"))
}

async fn client(url: &str) -> rmcp::service::RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_on_another_session_completes_while_a_search_embeds_its_query() {
    let scorer = Arc::new(SlowScorer::default());
    let mut catalog = Catalog::new();
    catalog
        .register(spec_tool(
            "orders.lookup",
            "Look up an order by its number.",
        ))
        .unwrap();
    let search = SearchTools::new(&catalog).with_scorer(scorer.clone());
    catalog.register(Arc::new(search)).unwrap();
    let server = McpServer::builder(Arc::new(Gate::builder(catalog).build())).build();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(
        FrontDoor::new(server, HttpAccess::open()).serve(listener, async {
            let _ = stopped.await;
        }),
    );
    let searcher = client(&url).await;
    let other = client(&url).await;

    let searching = {
        let peer = searcher.peer().clone();
        tokio::spawn(async move {
            peer.call_tool(call("search_tools", json!({"query": "find my order"})))
                .await
        })
    };
    let deadline = Instant::now() + PATIENCE;
    while !scorer.started.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        scorer.started.load(Ordering::SeqCst),
        "the search never reached the scorer"
    );

    let result = other
        .call_tool(call("orders.lookup", json!({})))
        .await
        .unwrap();
    scorer.released.store(true, Ordering::SeqCst);
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let searched = searching.await.unwrap().unwrap();
    assert_eq!(searched.is_error, Some(false), "{searched:?}");
    assert!(
        scorer.released_in_time.load(Ordering::SeqCst),
        "the other session's call waited for the search's embedding to finish"
    );

    searcher.cancel().await.unwrap();
    other.cancel().await.unwrap();
    let _ = stop.send(());
    let _ = served.await;
}
