//! `toolgate serve --http` and the names it answers: `--allowed-host` and
//! `--allowed-origin` add to the bind address and `localhost`, on a real
//! `toolgate` process over loopback.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use support::HELPDESK;

/// A running `toolgate serve --http 127.0.0.1:0 ARGS`, killed when dropped.
struct Served {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(dir.path(), HELPDESK);
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    Served {
        child,
        url,
        _dir: dir,
    }
}

/// The status of an `initialize` sent with these extra headers.
async fn status(url: &str, headers: &[(&str, &str)]) -> u16 {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn allowed_host_and_allowed_origin_add_names_the_server_answers() {
    let plain = serve(&[]);
    let port = plain
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let localhost = format!("localhost:{port}");
    let own = format!("http://localhost:{port}");
    assert_eq!(status(&plain.url, &[]).await, 200);
    assert_eq!(status(&plain.url, &[("host", &localhost)]).await, 200);
    assert_eq!(status(&plain.url, &[("origin", &own)]).await, 200);
    assert_eq!(
        status(&plain.url, &[("host", "tools.example.test")]).await,
        403
    );
    assert_eq!(
        status(&plain.url, &[("origin", "https://app.example.test")]).await,
        403
    );

    let widened = serve(&[
        "--allowed-host",
        "tools.example.test",
        "--allowed-origin",
        "https://app.example.test",
        "--allowed-origin",
        "http://localhost:5173",
    ]);
    assert_eq!(
        status(&widened.url, &[("host", "tools.example.test")]).await,
        200
    );
    assert_eq!(
        status(&widened.url, &[("origin", "https://app.example.test")]).await,
        200
    );
    assert_eq!(
        status(&widened.url, &[("origin", "http://localhost:5173")]).await,
        200
    );
    assert_eq!(
        status(&widened.url, &[("host", "other.example.test")]).await,
        403
    );
    assert_eq!(
        status(&widened.url, &[("origin", "https://evil.example.test")]).await,
        403
    );
}

#[test]
fn a_malformed_allowed_origin_is_refused_before_serving_saying_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(dir.path(), HELPDESK);
    let out = support::toolgate(
        dir.path(),
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--allowed-origin",
            "app.example.test",
        ],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`app.example.test` is not an origin"),
        "{stderr}"
    );
    assert!(stderr.contains("https://app.example.com"), "{stderr}");
}
