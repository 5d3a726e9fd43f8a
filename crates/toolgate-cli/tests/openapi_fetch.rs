//! `toolgate import --from openapi https://...`: a description fetched from a real
//! HTTPS server on loopback (tests/openapi/https_server.py, its certificate signed
//! by a test CA made with openssl), under the network policy of HTTP bindings.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../toolgate-core/tests/data/openapi"
);
const SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/openapi/https_server.py"
);

/// The HTTPS server serving a copy of the test descriptions under `specs/v1/`, and
/// its port; killed when dropped.
struct Server {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs/v1");
    std::fs::create_dir_all(&specs).unwrap();
    for file in ["shop.yaml", "common.yaml", "pets-2.0.json"] {
        std::fs::copy(Path::new(DATA).join(file), specs.join(file)).unwrap();
    }
    let mut child = Command::new("python3")
        .arg(SERVER)
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the server prints its port");
    Server { child, port, dir }
}

/// `toolgate ARGS` in `dir`, trusting the server's test CA.
fn toolgate(server: &Server, dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .env("SSL_CERT_FILE", server.dir.path().join("ca.pem"))
        .output()
        .expect("the toolgate binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_description_fetched_over_https_imports_as_its_file_does_with_its_relative_references() {
    let server = serve();
    let local = tempfile::tempdir().unwrap();
    for file in ["shop.yaml", "common.yaml", "pets-2.0.json"] {
        std::fs::copy(Path::new(DATA).join(file), local.path().join(file)).unwrap();
    }
    let allow = format!("127.0.0.1:{}", server.port);
    for file in ["shop.yaml", "pets-2.0.json"] {
        let url = format!("https://127.0.0.1:{}/specs/v1/{file}", server.port);
        let fetched = toolgate(
            &server,
            local.path(),
            &["import", "--from", "openapi", &url, "--allow", &allow],
        );
        assert!(
            fetched.status.success(),
            "{file}: {}",
            text(&fetched.stderr)
        );
        let read = support::toolgate(local.path(), &["import", "--from", "openapi", file]);
        assert!(read.status.success(), "{}", text(&read.stderr));
        // The same tools; only the header's first line names where they came from.
        let body = |out: &Output| {
            text(&out.stdout)
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(body(&fetched), body(&read), "{file}");
        assert_eq!(text(&fetched.stderr), text(&read.stderr), "{file}");
        assert!(
            text(&fetched.stdout).starts_with(&format!("# Tools imported from {url} (")),
            "{}",
            text(&fetched.stdout)
        );
    }
}

#[test]
fn a_loopback_description_is_fetched_only_when_allowed_and_a_redirect_is_checked_too() {
    let server = serve();
    let cwd = tempfile::tempdir().unwrap();
    let url = format!("https://127.0.0.1:{}/specs/v1/shop.yaml", server.port);
    let out = toolgate(&server, cwd.path(), &["import", "--from", "openapi", &url]);
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stderr).trim(),
        format!(
            "error: cannot read {url}: 127.0.0.1 is a loopback address, which is fetched only when allowed; pass `--allow 127.0.0.1:{}` if it is meant",
            server.port
        )
    );
    // Allowed on this port only, a redirect to another port is refused before it is
    // followed.
    let moved = format!(
        "https://127.0.0.1:{}/to-port/9/specs/v1/shop.yaml",
        server.port
    );
    let allow = format!("127.0.0.1:{}", server.port);
    let out = toolgate(
        &server,
        cwd.path(),
        &["import", "--from", "openapi", &moved, "--allow", &allow],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(
            "`127.0.0.1` is allowed on other ports than 9, which is fetched only when allowed; pass `--allow 127.0.0.1:9` if it is meant"
        ),
        "{}",
        text(&out.stderr)
    );
    // A file that is not there, and a bad entry, say so.
    let missing = format!("https://127.0.0.1:{}/specs/v1/absent.yaml", server.port);
    let out = toolgate(
        &server,
        cwd.path(),
        &["import", "--from", "openapi", &missing, "--allow", &allow],
    );
    assert!(
        text(&out.stderr).contains("answered 404 Not Found"),
        "{}",
        text(&out.stderr)
    );
    let out = toolgate(
        &server,
        cwd.path(),
        &[
            "import",
            "--from",
            "openapi",
            &url,
            "--allow",
            "10.0.0.0/99",
        ],
    );
    assert!(
        text(&out.stderr).starts_with("error: --allow 10.0.0.0/99: "),
        "{}",
        text(&out.stderr)
    );
}
