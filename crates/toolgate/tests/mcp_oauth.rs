//! Toolgate as an OAuth resource server: JWT access tokens, signed in the test
//! with a key made for it and published as a JWKS file, checked on every
//! request to `serve --http`; the protected resource metadata (RFC 9728) and the
//! challenges a refused request gets.

#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use toolgate::auth::HttpAccess;
use toolgate::auth::OAuth;
use toolgate::mcp::server::McpServer;
use toolgate::serve::FrontDoor;
use toolgate::spec::{OAuthSection, SpecFile};
use toolgate::{
    Catalog, Gate, GateStore, MemoryGateStore, SqliteStore, policy::PrincipalSpec, store::AuditLog,
    tool::Tier,
};

const ISSUER: &str = "https://auth.example.test";
const AUDIENCE: &str = "https://tools.example.test/mcp";

/// The authorization server's signing key, and its public half as a JWK.
struct Signer {
    key: EncodingKey,
    jwk: Value,
}

fn signer(kid: &str) -> Signer {
    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
    let pkcs8 = pair.to_pkcs8v1().unwrap();
    let point = pair.public_key().as_ref().to_vec(); // 0x04 || x || y
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    Signer {
        key: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a good token for the support widget; `change` edits them.
fn claims(change: impl FnOnce(&mut Value)) -> Value {
    let mut claims = json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "user-17", "client_id": "helpdesk-widget",
        "scope": "openid tools", "exp": now() + 300, "iat": now(), "jti": "t-1",
    });
    change(&mut claims);
    claims
}

fn sign(signer: &Signer, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &signer.key).unwrap()
}

fn spec() -> SpecFile {
    serde_json::from_value(json!({
        "tools": [
            {"name": "lookup", "description": "Look a record up.", "effect": "read", "response": {"found": true}},
            {"name": "update", "description": "Change a record.", "effect": "write", "response": {"updated": true}}
        ]
    }))
    .unwrap()
}

fn principal(ceiling: Tier, claim: &str, value: &str) -> PrincipalSpec {
    serde_json::from_value(json!({"ceiling": ceiling, "match": {claim: value}})).unwrap()
}

struct Served {
    url: String,
    base: String,
    _dir: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

async fn served(signer: &Signer) -> Served {
    served_with(signer, |_| {}, |_| Arc::new(MemoryGateStore::default())).await
}

/// [`served`] with `change` applied to the `oauth:` section and the store
/// `store` makes in the server's directory.
async fn served_with(
    signer: &Signer,
    change: impl FnOnce(&mut OAuthSection),
    store: impl FnOnce(&std::path::Path) -> Arc<dyn GateStore>,
) -> Served {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jwks.json"),
        json!({"keys": [signer.jwk]}).to_string(),
    )
    .unwrap();
    let section = OAuthSection {
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        jwks: "jwks.json".into(),
        scopes: vec!["tools".into()],
        ..OAuthSection::default()
    };
    let mut section = section;
    change(&mut section);
    let declared = [
        (
            "support_bot".to_owned(),
            principal(Tier::Read, "client_id", "helpdesk-widget"),
        ),
        ("ops".to_owned(), principal(Tier::External, "groups", "ops")),
    ];
    let oauth = OAuth::new(&section, declared.clone(), dir.path()).unwrap();
    let gate =
        Gate::from_spec(&spec(), "toolgate.yaml", &Catalog::new(), store(dir.path())).unwrap();
    let server = McpServer::builder(Arc::new(gate))
        .principals(declared.iter().map(|(id, p)| p.to_principal(id)))
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(
        FrontDoor::new(server, HttpAccess::open().with_oauth(oauth)).serve(listener, async {
            let _ = stopped.await;
        }),
    );
    Served {
        url: format!("{base}/mcp"),
        base,
        _dir: dir,
        _stop: stop,
    }
}

async fn ping(url: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.send().await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_valid_token_runs_as_the_principal_whose_match_takes_its_claims() {
    let signer = signer("k1");
    let served = served(&signer).await;
    let widget = sign(&signer, "k1", &claims(|_| {}));
    // The first principal whose `match` takes the claims applies.
    let ops = sign(
        &signer,
        "k1",
        &claims(|c| {
            c["client_id"] = json!("ops-console");
            c["groups"] = json!(["staff", "ops"]);
        }),
    );
    for (token, expected) in [(widget, vec!["lookup"]), (ops, vec!["lookup", "update"])] {
        let config =
            StreamableHttpClientTransportConfig::with_uri(served.url.as_str()).auth_header(token);
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<String> = tools.into_iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, expected);
    }
}

async fn client(url: &str, token: String) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn names(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn a_token_s_toolgate_scopes_narrow_its_principal_and_never_widen_it() {
    let signer = signer("k1");
    let served = served(&signer).await;
    let ops = |scope: &str| {
        sign(
            &signer,
            "k1",
            &claims(|c| {
                c["client_id"] = json!("ops-console");
                c["groups"] = json!(["ops"]);
                c["scope"] = json!(scope);
            }),
        )
    };
    let widget = |scope: &str| sign(&signer, "k1", &claims(|c| c["scope"] = json!(scope)));
    let cases = [
        (
            "no toolgate scope: the principal's own",
            ops("openid tools"),
            vec!["lookup", "update"],
        ),
        (
            "toolgate:lookup",
            ops("tools toolgate:lookup"),
            vec!["lookup"],
        ),
        (
            "toolgate:*",
            ops("tools toolgate:*"),
            vec!["lookup", "update"],
        ),
        (
            "a namespace no tool is in",
            ops("tools toolgate:crm.*"),
            vec![],
        ),
        (
            "the widget asking for more",
            widget("tools toolgate:update"),
            vec![],
        ),
        (
            "the widget asking for its own",
            widget("tools toolgate:lookup toolgate:update"),
            vec!["lookup"],
        ),
    ];
    for (case, token, expected) in cases {
        let client = client(&served.url, token).await;
        assert_eq!(names(&client).await, expected, "{case}");
        client.cancel().await.unwrap();
    }
    let narrowed = client(&served.url, ops("tools toolgate:lookup")).await;
    narrowed
        .call_tool(CallToolRequestParams::new("lookup"))
        .await
        .unwrap();
    let refused = narrowed
        .call_tool(CallToolRequestParams::new("update"))
        .await;
    assert!(refused.is_err(), "outside the token's scopes: {refused:?}");
    // The same principal with a token that does not narrow it still may.
    let whole = client(&served.url, ops("tools")).await;
    whole
        .call_tool(CallToolRequestParams::new("update"))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_protected_resource_metadata_is_served_at_both_well_known_paths() {
    let served = served(&signer("k1")).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let document: Value = reqwest::get(format!("{}{path}", served.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(document["resource"], AUDIENCE, "{path}");
        assert_eq!(document["authorization_servers"], json!([ISSUER]));
        assert_eq!(document["scopes_supported"], json!(["tools"]));
    }
    let refused = ping(&served.url, None).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(
        challenge(&refused),
        "Bearer resource_metadata=\"https://tools.example.test/.well-known/oauth-protected-resource/mcp\", scope=\"tools\""
    );
}

#[tokio::test]
async fn every_bad_token_is_refused_with_the_right_status_and_challenge() {
    let signer = signer("k1");
    let stranger = self::signer("k1");
    let served = served(&signer).await;
    let payload = |claims: &Value| URL_SAFE_NO_PAD.encode(claims.to_string());
    let good = sign(&signer, "k1", &claims(|_| {}));
    let (head, rest) = good.split_once('.').unwrap();
    let (_, signature) = rest.split_once('.').unwrap();
    let rest = rest.to_owned();
    let hs256 = {
        let public = serde_json::to_vec(&signer.jwk).unwrap();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(
            &header,
            &claims(|_| {}),
            &EncodingKey::from_secret(&public).unwrap(),
        )
        .unwrap()
    };
    let cases = [
        (
            "expired",
            sign(&signer, "k1", &claims(|c| c["exp"] = json!(now() - 3600))),
            401,
            "expired",
        ),
        (
            "not yet valid",
            sign(&signer, "k1", &claims(|c| c["nbf"] = json!(now() + 3600))),
            401,
            "not valid yet",
        ),
        (
            "wrong issuer",
            sign(
                &signer,
                "k1",
                &claims(|c| c["iss"] = json!("https://evil.test")),
            ),
            401,
            "another issuer",
        ),
        (
            "wrong audience",
            sign(
                &signer,
                "k1",
                &claims(|c| c["aud"] = json!("https://other.test/mcp")),
            ),
            401,
            "another audience",
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"k1"}"#),
                payload(&claims(|_| {}))
            ),
            401,
            "not a signed JWT",
        ),
        ("HS256 with the public key", hs256, 401, "HS256"),
        (
            "unknown kid",
            sign(&signer, "k9", &claims(|_| {})),
            401,
            "`k9` is not one of",
        ),
        (
            "no kid",
            {
                let mut header = Header::new(Algorithm::ES256);
                header.kid = None;
                jsonwebtoken::encode(&header, &claims(|_| {}), &signer.key).unwrap()
            },
            401,
            "names no key",
        ),
        (
            "RS256 claimed over the EC key",
            format!(
                "{}.{rest}",
                URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","kid":"k1"}"#)
            ),
            401,
            "does not fit its key",
        ),
        (
            "another key under the same kid",
            sign(&stranger, "k1", &claims(|_| {})),
            401,
            "does not verify",
        ),
        (
            "tampered payload",
            format!(
                "{head}.{}.{signature}",
                payload(&claims(|c| c["groups"] = json!("ops")))
            ),
            401,
            "does not verify",
        ),
        (
            "missing scope",
            sign(&signer, "k1", &claims(|c| c["scope"] = json!("openid"))),
            403,
            "lacks a scope",
        ),
        (
            "no principal matches",
            sign(
                &signer,
                "k1",
                &claims(|c| c["client_id"] = json!("someone-else")),
            ),
            403,
            "no principal",
        ),
    ];
    for (case, token, status, says) in cases {
        let response = ping(&served.url, Some(&token)).await;
        assert_eq!(response.status(), status, "{case}");
        let header = challenge(&response);
        assert!(
            header.starts_with("Bearer resource_metadata="),
            "{case}: {header}"
        );
        match status {
            403 if case == "missing scope" => assert!(
                header.contains("error=\"insufficient_scope\""),
                "{case}: {header}"
            ),
            401 => assert!(
                header.contains("error=\"invalid_token\""),
                "{case}: {header}"
            ),
            _ => {}
        }
        let text = response.text().await.unwrap();
        assert!(text.contains(says), "{case}: {text}");
        assert!(!text.contains(&token), "{case}: the token is not echoed");
    }
    assert_eq!(
        ping(&served.url, Some(&good)).await.status(),
        200,
        "the good token still works"
    );
}

#[tokio::test]
async fn a_token_in_the_query_string_is_a_bad_request_even_when_it_is_good() {
    let signer = signer("k1");
    let served = served(&signer).await;
    let good = sign(&signer, "k1", &claims(|_| {}));
    for (url, header) in [
        (format!("{}?access_token={good}", served.url), None),
        (
            format!("{}?x=1&access_token={good}", served.url),
            Some(good.as_str()),
        ),
    ] {
        let response = ping(&url, header).await;
        assert_eq!(response.status(), 400, "{url}");
        let header = challenge(&response);
        assert!(
            header.starts_with("Bearer resource_metadata=")
                && header.contains("error=\"invalid_request\""),
            "{header}"
        );
        let text = response.text().await.unwrap();
        assert!(text.contains("in the URL is refused"), "{text}");
        assert!(!text.contains(&good), "the token is not echoed");
    }
}

/// Strings shaped like a JWT or not: three dot-separated parts of base64url
/// JSON or bytes, or anything at all.
fn token_like() -> impl Strategy<Value = String> {
    let json = prop_oneof![
        Just(r#"{"alg":"ES256","kid":"k1"}"#.to_owned()),
        Just(r#"{"alg":"none"}"#.to_owned()),
        Just(r#"{"alg":"HS256","kid":"k1"}"#.to_owned()),
        Just(r#"{"alg":"ES256","kid":"k1","crit":["x"]}"#.to_owned()),
        r#"\{"alg":"[A-Za-z0-9]{0,6}","kid":".{0,8}"\}"#,
        r#"\{"(iss|aud|exp|nbf|scope|sub)":(-?[0-9]{1,20}|".{0,10}"|\[\]|null|\{\})\}"#,
        ".{0,40}",
    ];
    let part = prop_oneof![
        json.prop_map(|s| URL_SAFE_NO_PAD.encode(s)),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(|b| URL_SAFE_NO_PAD.encode(b)),
        "[A-Za-z0-9_=+/.-]{0,40}",
    ];
    prop_oneof![
        (part.clone(), part.clone(), part).prop_map(|(a, b, c)| format!("{a}.{b}.{c}")),
        any::<String>(),
        "[ -~]{0,200}",
    ]
}

#[test]
fn no_token_panics_the_validator() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let signer = signer("k1");
    std::fs::write(
        dir.path().join("jwks.json"),
        json!({"keys": [signer.jwk]}).to_string(),
    )
    .unwrap();
    let section = OAuthSection {
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        jwks: "jwks.json".into(),
        ..OAuthSection::default()
    };
    let declared = [("ops".to_owned(), principal(Tier::Read, "sub", "user-17"))];
    let oauth = OAuth::new(&section, declared, dir.path()).unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(2048));
    runner
        .run(&token_like(), |token| {
            let verdict = runtime.block_on(oauth.verify(&token));
            prop_assert!(verdict.is_err(), "{token:?} was taken");
            Ok(())
        })
        .unwrap();
}

#[tokio::test]
async fn arbitrary_authorization_headers_are_refused_and_the_server_keeps_answering() {
    let signer = signer("k1");
    let served = served(&signer).await;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(128));
    let values = prop_oneof![
        "[ -~]{0,120}",
        token_like().prop_map(|t| format!("Bearer {t}")),
        "(Bearer|bearer|Basic|BEARER)( {0,3})[!-~]{0,60}",
    ];
    let client = reqwest::Client::new();
    for _ in 0..128 {
        let value = values.new_tree(&mut runner).unwrap().current();
        let Ok(header) = reqwest::header::HeaderValue::from_str(&value) else {
            continue;
        };
        let response = client
            .post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", header)
            .body("{}")
            .send()
            .await
            .unwrap();
        assert!(
            [400, 401, 403].contains(&response.status().as_u16()),
            "{value:?}: {}",
            response.status()
        );
    }
    let good = sign(&signer, "k1", &claims(|_| {}));
    assert_eq!(ping(&served.url, Some(&good)).await.status(), 200);
}

#[tokio::test]
async fn the_audit_log_records_a_token_s_subject_and_id_but_never_the_token() {
    let signer = signer("k1");
    let served = served_with(
        &signer,
        |_| {},
        |dir| Arc::new(SqliteStore::open(dir.join("state.db")).unwrap()),
    )
    .await;
    let token = sign(&signer, "k1", &claims(|_| {}));
    let config = StreamableHttpClientTransportConfig::with_uri(served.url.as_str())
        .auth_header(token.clone());
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("lookup"))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    client.cancel().await.unwrap();

    let store = SqliteStore::open(served._dir.path().join("state.db")).unwrap();
    let records = store.tail(10).unwrap();
    assert!(!records.is_empty());
    for record in &records {
        assert_eq!(record.entry.principal, "support_bot");
        assert_eq!(record.entry.auth.as_deref(), Some("oauth"));
        assert_eq!(
            record.entry.credential.as_deref(),
            Some("token of user-17 (t-1)"),
            "the token's `sub` and `jti`"
        );
    }
    assert!(toolgate::audit::verify_chain(&records).is_ok());
    drop(store);
    // Neither the token nor its signature is in any file of the store.
    let signature = token.rsplit('.').next().unwrap();
    for file in std::fs::read_dir(served._dir.path()).unwrap() {
        let path = file.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(
            !text.contains(signature),
            "{} holds the token",
            path.display()
        );
    }
}

#[tokio::test]
async fn a_remembered_token_stops_working_once_it_expires() {
    let signer = signer("k1");
    let served = served_with(
        &signer,
        |oauth| oauth.leeway_seconds = Some(0),
        |_| Arc::new(MemoryGateStore::default()),
    )
    .await;
    let expires = now() + 2;
    let token = sign(&signer, "k1", &claims(|c| c["exp"] = json!(expires)));
    // Checked once, then remembered.
    assert_eq!(ping(&served.url, Some(&token)).await.status(), 200);
    assert_eq!(ping(&served.url, Some(&token)).await.status(), 200);
    while now() <= expires {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let refused = ping(&served.url, Some(&token)).await;
    assert_eq!(refused.status(), 401);
    assert!(
        challenge(&refused).contains("invalid_token"),
        "{}",
        challenge(&refused)
    );
}
