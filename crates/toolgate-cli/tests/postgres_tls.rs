//! TLS to a real PostgreSQL that takes only TLS connections (`ssl = on`, `hostssl`
//! lines only), its certificate for `db.test` signed by a test CA:
//! `scripts/postgres-store` makes both and names them in `TOOLGATE_TEST_POSTGRES_TLS`
//! (`postgres://USER:PASSWORD@127.0.0.1:PORT/postgres`), `…_TLS_CA` and
//! `…_TLS_OTHER_CA` (a CA that signed nothing there). The store's URL sets TLS
//! as libpq's does, with `sslmode` and `sslrootcert`.
//!
//! Without `TOOLGATE_TEST_POSTGRES_TLS` every test skips with a message, unless
//! `TOOLGATE_TEST_POSTGRES_REQUIRED` is set, when it fails.

use std::process::Command;
use std::time::Duration;

use toolgate::{PostgresStore, store::PostgresOptions, store::StateStore};

struct Tls {
    /// `postgres://USER:PASSWORD@127.0.0.1:PORT/postgres`.
    url: String,
    password: String,
    ca: String,
    other_ca: String,
}

fn tls() -> Option<Tls> {
    let Some(url) = std::env::var("TOOLGATE_TEST_POSTGRES_TLS")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        assert!(
            std::env::var_os("TOOLGATE_TEST_POSTGRES_REQUIRED").is_none(),
            "TOOLGATE_TEST_POSTGRES_REQUIRED is set but TOOLGATE_TEST_POSTGRES_TLS is not"
        );
        eprintln!(
            "skipped: set TOOLGATE_TEST_POSTGRES_TLS (scripts/postgres-store does) to run the TLS tests"
        );
        return None;
    };
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(user, _)| user.split_once(':'))
        .map(|(_, password)| password.to_owned())
        .expect("TOOLGATE_TEST_POSTGRES_TLS holds a password");
    Some(Tls {
        url,
        password,
        ca: std::env::var("TOOLGATE_TEST_POSTGRES_TLS_CA").unwrap(),
        other_ca: std::env::var("TOOLGATE_TEST_POSTGRES_TLS_OTHER_CA").unwrap(),
    })
}

impl Tls {
    /// The database by the name its certificate carries (`db.test`), reached at
    /// 127.0.0.1 through `hostaddr`, with `query` added.
    fn by_name(&self, query: &str) -> String {
        format!(
            "{}?hostaddr=127.0.0.1&{query}",
            self.url.replace("@127.0.0.1:", "@db.test:")
        )
    }

    /// The database by its address, which its certificate does not name.
    fn by_address(&self, query: &str) -> String {
        format!("{}?{query}", self.url)
    }

    /// Opens a store at `url` and writes to it; the error's text if it cannot.
    fn open(&self, url: &str) -> Result<(), String> {
        let options = PostgresOptions {
            pool_size: 2,
            // A debug build is slow at SCRAM's key stretching on a busy machine.
            connect_timeout: Duration::from_secs(60),
            ..Default::default()
        };
        let result = PostgresStore::open(url, options)
            .and_then(|store| store.apply("tls", &[("step".into(), serde_json::json!(1))]))
            .map_err(|e| e.to_string());
        if let Err(message) = &result {
            assert!(
                !message.contains(&self.password),
                "the password shows in: {message}"
            );
        }
        result
    }

    fn refused(&self, url: &str) -> String {
        match self.open(url) {
            Ok(()) => panic!("{url} connected"),
            Err(message) => message,
        }
    }
}

#[test]
fn a_store_naming_its_ca_with_sslrootcert_connects_over_verified_tls() {
    let Some(tls) = tls() else { return };
    // The database takes nothing but TLS, so connecting at all is connecting over TLS.
    tls.open(&tls.by_name(&format!("sslmode=verify-full&sslrootcert={}", tls.ca)))
        .unwrap();
    tls.open(&tls.by_address(&format!("sslmode=verify-ca&sslrootcert={}", tls.ca)))
        .unwrap();
    // libpq's require and prefer (the default) encrypt without checking the
    // certificate when no CA is named.
    tls.open(&tls.by_address("sslmode=require")).unwrap();
    tls.open(&tls.url).unwrap();
}

#[test]
fn without_the_right_ca_the_store_refuses_naming_tls_and_what_to_do() {
    let Some(tls) = tls() else { return };
    let wrong =
        tls.refused(&tls.by_name(&format!("sslmode=verify-full&sslrootcert={}", tls.other_ca)));
    assert!(wrong.contains("TLS to the database"), "{wrong}");
    assert!(
        wrong.contains(&format!(
            "not signed by the certificate authority in sslrootcert={}",
            tls.other_ca
        )),
        "{wrong}"
    );
    assert!(
        wrong.contains("point sslrootcert at the PEM file of the CA"),
        "{wrong}"
    );
    // A CA named with require checks the chain, as libpq's verify-ca.
    let wrong = tls.refused(&tls.by_name(&format!("sslmode=require&sslrootcert={}", tls.other_ca)));
    assert!(wrong.contains("not signed by"), "{wrong}");
    // The system's authorities did not sign a test CA's certificate.
    let system = tls.refused(&tls.by_name("sslrootcert=system"));
    assert!(
        system.contains("not signed by the system's certificate authorities"),
        "{system}"
    );
    // verify-full with no CA at all: refused before connecting.
    let none = tls.refused(&tls.by_name("sslmode=verify-full"));
    assert!(none.contains("add sslrootcert=/path/to/ca.pem"), "{none}");
}

#[test]
fn verify_full_checks_the_host_name_and_verify_ca_does_not() {
    let Some(tls) = tls() else { return };
    let mismatch =
        tls.refused(&tls.by_address(&format!("sslmode=verify-full&sslrootcert={}", tls.ca)));
    assert!(mismatch.contains("TLS to the database"), "{mismatch}");
    assert!(
        mismatch.contains("certificate does not name the host"),
        "{mismatch}"
    );
    tls.open(&tls.by_address(&format!("sslmode=verify-ca&sslrootcert={}", tls.ca)))
        .unwrap();
}

#[test]
fn a_database_taking_only_tls_refuses_a_plaintext_store_clearly() {
    let Some(tls) = tls() else { return };
    let plain = tls.refused(&tls.by_name("sslmode=disable"));
    assert!(plain.contains("TLS to the database"), "{plain}");
    assert!(
        plain.contains("accepts only TLS connections from here"),
        "{plain}"
    );
    assert!(plain.contains("drop sslmode=disable"), "{plain}");
}

#[test]
fn toolgate_store_migrate_reads_tls_from_the_spec_url_and_never_prints_the_password() {
    let Some(tls) = tls() else { return };
    let dir = tempfile::tempdir().unwrap();
    let templated = |ca: &str| {
        tls.by_name(&format!("sslmode=verify-full&sslrootcert={ca}"))
            .replace(
                &format!(":{}@", tls.password),
                ":${env.TG_TEST_PGPASSWORD}@",
            )
    };
    let migrate = |ca: &str| {
        std::fs::write(
            dir.path().join("toolgate.yaml"),
            format!("store: \"{}\"\n{SPEC}", templated(ca)),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["store", "migrate"])
            .current_dir(dir.path())
            .env_remove("TOOLGATE_STATE_DIR")
            .env_remove("TOOLGATE_STORE")
            .env("TG_TEST_PGPASSWORD", &tls.password)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !stdout.contains(&tls.password) && !stderr.contains(&tls.password),
            "the password shows in: {stdout}{stderr}"
        );
        (out.status.success(), stdout + &stderr)
    };
    let (ok, said) = migrate(&tls.other_ca);
    assert!(!ok, "{said}");
    assert!(
        said.contains("TLS to the database at postgres://toolgate:***@db.test"),
        "{said}"
    );
    assert!(said.contains("not signed by"), "{said}");
    let (ok, said) = migrate(&tls.ca);
    assert!(ok, "{said}");
}

const SPEC: &str = "tools:
  - name: lookup
    description: Look up an order.
    effect: read
    parameters: {type: object}
    response: {status: shipped}
";
