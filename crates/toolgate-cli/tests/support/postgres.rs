//! A fresh PostgreSQL database per test (on the server `TOOLGATE_TEST_POSTGRES`
//! names, made with `psql`), a scratch directory whose spec stores there, and
//! `toolgate serve --http` instances on it.
//!
//! Without `TOOLGATE_TEST_POSTGRES` a test skips with a message, unless
//! `TOOLGATE_TEST_POSTGRES_REQUIRED` is set (as `scripts/postgres-store` sets it),
//! when it fails.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use super::await_line;

/// A fresh database, its URL split into the password and the rest (the password
/// goes to the instances through the environment, as `${env.TG_TEST_PGPASSWORD}`).
pub struct Database {
    /// `postgres://USER:${env.TG_TEST_PGPASSWORD}@HOST:PORT/NAME`.
    pub templated: String,
    pub password: String,
}

impl Database {
    /// A database named after `prefix`, this process and a counter; `None` (with
    /// a message) without `TOOLGATE_TEST_POSTGRES`.
    pub fn new(prefix: &str) -> Option<Self> {
        let Some(base) = std::env::var("TOOLGATE_TEST_POSTGRES")
            .ok()
            .filter(|v| !v.is_empty())
        else {
            assert!(
                std::env::var_os("TOOLGATE_TEST_POSTGRES_REQUIRED").is_none(),
                "TOOLGATE_TEST_POSTGRES_REQUIRED is set but TOOLGATE_TEST_POSTGRES is not"
            );
            eprintln!(
                "skipped: set TOOLGATE_TEST_POSTGRES to a PostgreSQL URL (scripts/postgres-store does) to run the multi-instance tests"
            );
            return None;
        };
        let name = format!("{prefix}_{}", std::process::id() as u64 * 1000 + next());
        let out = Command::new("psql")
            .args([
                base.as_str(),
                "-q",
                "-c",
                &format!("CREATE DATABASE {name}"),
            ])
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // postgres://USER:PASSWORD@HOST:PORT/DB
        let (scheme, rest) = base.split_once("://")?;
        let (user_pass, host) = rest.split_once('@')?;
        let (user, password) = user_pass.split_once(':')?;
        let server = host.rsplit_once('/').map_or(host, |(s, _)| s);
        Some(Self {
            templated: format!("{scheme}://{user}:${{env.TG_TEST_PGPASSWORD}}@{server}/{name}"),
            password: password.to_owned(),
        })
    }
}

fn next() -> u64 {
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::SeqCst) as u64
}

/// A scratch directory with a spec naming the database.
pub struct Site {
    pub dir: tempfile::TempDir,
    pub db: Database,
}

impl Site {
    pub fn new(db: Database, spec: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("store: \"{}\"\n{spec}", db.templated);
        std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
        Self { dir, db }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("TOOLGATE_STATE_DIR")
            .env_remove("TOOLGATE_STORE")
            .env("TG_TEST_PGPASSWORD", &self.db.password);
        command
    }

    /// `toolgate ARGS` to its end: whether it succeeded, its stdout and stderr.
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.command(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `toolgate keys add PRINCIPAL`: the new key.
    pub fn key(&self, principal: &str) -> String {
        let (ok, out, err) = self.run(&["keys", "add", principal]);
        assert!(ok, "{err}");
        out.trim().to_owned()
    }

    /// `toolgate serve --http 127.0.0.1:0`, its URL, and its first lines of stderr.
    pub fn serve(&self) -> Instance {
        let mut child = self
            .command(&["serve", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (url, said) = await_line(&mut child, |line| {
            line.split_whitespace()
                .find(|w| w.starts_with("http://"))
                .map(str::to_owned)
        });
        Instance { child, url, said }
    }

    /// The whole audit log, as `audit tail --json` prints it.
    pub fn audit(&self) -> Vec<Value> {
        let (ok, out, err) = self.run(&["audit", "tail", "-n", "1000000", "--json"]);
        assert!(ok, "{err}");
        serde_json::from_str(&out).unwrap()
    }
}

/// A running `toolgate serve`, killed when dropped.
pub struct Instance {
    pub child: Child,
    pub url: String,
    pub said: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `lookup` tool anyone may call, which writes (so every call is audited).
pub const LOOKUP: &str = r#"
tools:
  - name: lookup
    description: Look up an order.
    effect: write
    parameters:
      type: object
      properties:
        n: {type: integer}
      required: [n]
    response: {status: shipped}
policy:
  rules:
    - {tools: lookup, decision: allow, reason: lookups run at once}
"#;

/// Whether a `tools/call` result is an error result.
pub fn is_error(result: &Value) -> bool {
    result.get("isError") == Some(&Value::Bool(true))
}
