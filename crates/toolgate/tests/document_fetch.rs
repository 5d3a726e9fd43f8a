//! Documents fetched by URL (`fetch_document`, behind `toolgate import --from openapi
//! https://...`) stay within the network policy and the size and time limits, against
//! a real HTTP server on loopback.

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use toolgate::spec::NetworkSection;
use toolgate::{http::FetchError, http::FetchLimits, http::fetch_document};

async fn serve() -> u16 {
    let app = Router::new()
        .route("/small.yaml", get(|| async { "openapi: 3.1.0\n" }))
        .route("/big.yaml", get(|| async { "x".repeat(4096) }))
        .route(
            "/slow.yaml",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

#[tokio::test]
async fn a_fetched_document_stays_within_the_policy_and_its_size_and_time_limits() {
    let port = serve().await;
    let url = |path: &str| format!("http://127.0.0.1:{port}/{path}");
    let limits = FetchLimits {
        max_bytes: 1024,
        timeout: Duration::from_millis(500),
        max_redirects: 0,
    };
    let refused = fetch_document(&NetworkSection::default(), &url("small.yaml"), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        refused,
        FetchError::Refused {
            url: url("small.yaml"),
            reason: "127.0.0.1 is a loopback address".into(),
            allow: format!("127.0.0.1:{port}"),
        }
    );
    let network = NetworkSection {
        allow: vec![format!("127.0.0.1:{port}")],
        allow_public: true,
    };
    let fetched = fetch_document(&network, &url("small.yaml"), &limits)
        .await
        .unwrap();
    assert_eq!(fetched.text, "openapi: 3.1.0\n");
    let big = fetch_document(&network, &url("big.yaml"), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        big.to_string(),
        format!("{} is larger than the 1024 bytes read", url("big.yaml"))
    );
    let slow = fetch_document(&network, &url("slow.yaml"), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        slow.to_string(),
        format!("{} was not fetched within 500ms", url("slow.yaml"))
    );
    let ftp = fetch_document(&network, "ftp://127.0.0.1/x", &limits)
        .await
        .unwrap_err();
    assert!(ftp.to_string().contains("https or http only"), "{ftp}");
}
