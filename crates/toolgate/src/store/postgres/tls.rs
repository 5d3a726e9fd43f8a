//! TLS to the database, set as libpq sets it: `sslmode` and `sslrootcert` in the
//! store's URL (`postgres://…?sslmode=verify-full&sslrootcert=/etc/toolgate/db-ca.pem`,
//! or libpq's `key=value` form), which operators already write for `psql`.
//!
//! tokio-postgres knows `sslmode=disable|prefer|require` and refuses `verify-ca`,
//! `verify-full` and `sslrootcert`, so both are taken off the URL here and turned
//! into a rustls configuration that does what libpq documents:
//!
//! - `disable`: no TLS. `allow` and `prefer` (the default): TLS if the server offers
//!   it. `require`: TLS or nothing. Without a CA these encrypt but check no
//!   certificate (as libpq without `root.crt`); with `sslrootcert=FILE` they check
//!   the certificate's chain, as `verify-ca` (libpq: "if a root CA file exists, the
//!   behavior of sslmode=require will be the same as that of verify-ca").
//! - `verify-ca`: TLS, with a certificate signed by the CA in `sslrootcert`.
//! - `verify-full`: that, and the certificate names the host connected to.
//! - `sslrootcert=system`: the system's roots, only with `verify-full` (its default
//!   then); libpq refuses weaker modes there, since anyone can get a certificate
//!   from a public CA for a name they own.
//!
//! Unlike libpq, toolgate reads no `~/.postgresql/root.crt` and no `PG*`
//! variables: the URL says it all. A relative `sslrootcert` is taken from the
//! working directory, as libpq takes it.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_cert_signed_by_trust_anchor};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use tokio_postgres::config::SslMode;

use super::StoreError;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// libpq's `sslrootcert`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Root {
    None,
    File(PathBuf),
    System,
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Encryption only (`prefer`/`require` without a CA).
    Nothing,
    /// Signed by a trusted CA (`verify-ca`, or a CA named with a weaker mode).
    Chain,
    /// Signed, and naming the host (`verify-full`).
    Full,
}

/// The URL's TLS settings, ready to connect with.
pub(super) struct Tls {
    /// The mode tokio-postgres negotiates with.
    pub(super) mode: SslMode,
    pub(super) connector: tokio_postgres_rustls::MakeRustlsConnect,
    /// The settings as an operator wrote them, for messages: `sslmode=… sslrootcert=…`.
    pub(super) shown: String,
    root: Root,
}

/// Takes `sslmode` and `sslrootcert` off `url` (what tokio-postgres would refuse)
/// and builds the TLS they ask for; the URL without them goes to tokio-postgres.
pub(super) fn split(url: &str, location: &str) -> Result<(String, Tls), StoreError> {
    let bad = |problem: String| StoreError::BadStoreUrl {
        location: location.to_owned(),
        problem,
    };
    let (rest, params) = if url.contains("://") {
        split_query(url)
    } else {
        split_key_values(url)
    };
    let mut mode = None;
    let mut root = Root::None;
    for (key, value) in params {
        if key == "sslmode" {
            mode = Some(match value.as_str() {
                "disable" => Mode::Disable,
                "allow" => Mode::Allow,
                "prefer" => Mode::Prefer,
                "require" => Mode::Require,
                "verify-ca" => Mode::VerifyCa,
                "verify-full" => Mode::VerifyFull,
                other => {
                    return Err(bad(format!(
                        "sslmode={other} is not one of libpq's modes: disable, allow, prefer, require, verify-ca, verify-full"
                    )));
                }
            });
        } else if value == "system" {
            root = Root::System;
        } else if value.is_empty() {
            root = Root::None;
        } else {
            root = Root::File(PathBuf::from(value));
        }
    }
    let mode = match (mode, &root) {
        (None, Root::System) => Mode::VerifyFull,
        (Some(mode), Root::System) if mode != Mode::VerifyFull => {
            return Err(bad(format!(
                "sslmode={} is too weak for sslrootcert=system: with the system's certificate authorities only sslmode=verify-full (the default there) checks that the certificate is the database's, as libpq insists; drop sslmode, or name the database's own CA with sslrootcert=FILE",
                mode_name(mode)
            )));
        }
        (mode, _) => mode.unwrap_or(Mode::Prefer),
    };
    let check = match (mode, &root) {
        (Mode::Disable, _) => Check::Nothing,
        (Mode::VerifyFull, _) => Check::Full,
        (Mode::VerifyCa, _) => Check::Chain,
        (_, Root::None) => Check::Nothing,
        (_, _) => Check::Chain,
    };
    if check != Check::Nothing && root == Root::None {
        return Err(bad(format!(
            "sslmode={} checks the database's certificate, so it needs the certificate authority that signed it: add sslrootcert=/path/to/ca.pem to the URL (or sslrootcert=system for the system's authorities, with verify-full)",
            mode_name(mode)
        )));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(Lenient {
            provider: provider.clone(),
            chain: None,
        }),
        Check::Chain | Check::Full => {
            let roots = Arc::new(roots(&root).map_err(bad)?);
            let webpki =
                WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
                    .build()
                    .map_err(|e| {
                        bad(format!(
                            "cannot check certificates against {}: {e}",
                            root_name(&root)
                        ))
                    })?;
            if check == Check::Full {
                webpki
            } else {
                Arc::new(Lenient {
                    provider: provider.clone(),
                    chain: Some(roots),
                })
            }
        }
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    let shown = match &root {
        Root::None => format!("sslmode={}", mode_name(mode)),
        root => format!(
            "sslmode={} sslrootcert={}",
            mode_name(mode),
            root_name(root)
        ),
    };
    let tls = Tls {
        mode: match mode {
            Mode::Disable => SslMode::Disable,
            Mode::Allow | Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        },
        connector: tokio_postgres_rustls::MakeRustlsConnect::new(config),
        shown,
        root,
    };
    Ok((rest, tls))
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Disable => "disable",
        Mode::Allow => "allow",
        Mode::Prefer => "prefer",
        Mode::Require => "require",
        Mode::VerifyCa => "verify-ca",
        Mode::VerifyFull => "verify-full",
    }
}

fn root_name(root: &Root) -> String {
    match root {
        Root::None => "no certificate authority".into(),
        Root::File(path) => path.display().to_string(),
        Root::System => "system".into(),
    }
}

/// The certificate authorities `root` names.
fn roots(root: &Root) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Root::None => {}
        Root::System => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err("sslrootcert=system, but this system has no certificate authorities to trust (is ca-certificates installed?)".into());
            }
        }
        Root::File(path) => {
            let problem = |e: String| {
                format!(
                    "cannot use the certificate authorities in sslrootcert={} ({e})",
                    path.display()
                )
            };
            let pem = std::fs::read(path).map_err(|e| problem(e.to_string()))?;
            use rustls::pki_types::pem::PemObject;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| problem(e.to_string()))?;
            if certs.is_empty() {
                return Err(problem("the file holds no PEM certificate".into()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| problem(e.to_string()))?;
            }
        }
    }
    Ok(roots)
}

/// The URL without `sslmode` and `sslrootcert` in its query, and their values.
fn split_query(url: &str) -> (String, Vec<(String, String)>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), Vec::new());
    };
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    for part in query.split('&') {
        let pair = url::form_urlencoded::parse(part.as_bytes()).next();
        match pair {
            Some((key, value)) if key == "sslmode" || key == "sslrootcert" => {
                taken.push((key.into_owned(), value.into_owned()));
            }
            _ => kept.push(part),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (rest, taken)
}

/// libpq's `key=value key='quoted value'` form without `sslmode` and
/// `sslrootcert`, and their values.
fn split_key_values(text: &str) -> (String, Vec<(String, String)>) {
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            break;
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let _ = chars.next_if(|(_, c)| *c == '=');
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '\'').is_some() {
            while let Some((_, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                value.push(c);
            }
        }
        let end = chars.peek().map_or(text.len(), |&(i, _)| i);
        if key == "sslmode" || key == "sslrootcert" {
            taken.push((key, value));
        } else {
            kept.push(text[start..end].trim_end());
        }
    }
    (kept.join(" "), taken)
}

impl Tls {
    /// What went wrong with TLS in `e`, and what to do, if TLS is what failed.
    pub(super) fn failure(&self, e: &tokio_postgres::Error) -> Option<(String, String)> {
        if let Some(db) = e.as_db_error() {
            // pg_hba.conf's `hostssl` lines only: "no pg_hba.conf entry for host …,
            // no encryption".
            if db.code() == &tokio_postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                && db.message().contains("no encryption")
            {
                return Some((
                    format!("the database accepts only TLS connections from here, and this one was not encrypted ({}, {})", db.message(), self.shown),
                    "drop sslmode=disable from the store URL, and name the database's CA with sslmode=verify-full&sslrootcert=/path/to/ca.pem".into(),
                ));
            }
            return None;
        }
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            let rustls = s.downcast_ref::<rustls::Error>().or_else(|| {
                s.downcast_ref::<std::io::Error>()
                    .and_then(|io| io.get_ref())
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            });
            if let Some(rustls) = rustls {
                return Some(self.explain(rustls));
            }
            if s.to_string().contains("server does not support TLS") {
                return Some((
                    format!("{} asks for TLS, and the database does not offer it", self.shown),
                    "turn TLS on in the database (ssl = on in postgresql.conf, with its certificate and key), or lower sslmode".into(),
                ));
            }
            source = s.source();
        }
        None
    }

    fn explain(&self, e: &rustls::Error) -> (String, String) {
        let ca = match &self.root {
            Root::File(path) => format!(
                "the certificate authority in sslrootcert={}",
                path.display()
            ),
            Root::System => "the system's certificate authorities (sslrootcert=system)".into(),
            Root::None => "no certificate authority".into(),
        };
        let problem = format!("the TLS handshake failed ({e}; {})", self.shown);
        let fix = match e {
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => "the database's certificate does not name the host in the URL: connect by a name the certificate carries (hostaddr=IP sets where to connect apart from the name checked), or use sslmode=verify-ca to check only who signed it".to_owned(),
            rustls::Error::InvalidCertificate(
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. },
            ) => "the database's certificate is out of its validity period: renew it, or check this machine's clock".to_owned(),
            rustls::Error::InvalidCertificate(_) => format!(
                "the database's certificate is not signed by {ca}: point sslrootcert at the PEM file of the CA that signed the database's certificate (the server's ssl_ca_file, or ask its operator)"
            ),
            _ => "check that the database's TLS settings (ssl_cert_file, ssl_key_file, ssl_min_protocol_version) allow TLS 1.2 or 1.3".to_owned(),
        };
        (problem, fix)
    }
}

/// The two checks short of `verify-full`: `require`/`prefer` without a CA (no
/// `chain`: TLS encrypts, and the certificate is not checked, libpq's behaviour)
/// and `verify-ca` (the certificate chains to a trusted CA in `chain`; the host
/// name is not checked). Either way the handshake's signatures are checked.
#[derive(Debug)]
struct Lenient {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<rustls::RootCertStore>>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.chain {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> Result<(String, String, SslMode), String> {
        split(url, "db")
            .map(|(rest, tls)| (rest, tls.shown, tls.mode))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn libpq_tls_parameters_are_taken_off_the_url() {
        let ca = std::env::temp_dir().join("toolgate-tls-unit-ca.pem");
        // Any certificate will do as a CA to load.
        std::fs::write(&ca, TEST_CA).unwrap();
        let url = format!(
            "postgres://u:p@db:5432/tg?application_name=x&sslmode=verify-full&sslrootcert={}",
            ca.display()
        );
        let (rest, shown, mode) = settings(&url).unwrap();
        assert_eq!(rest, "postgres://u:p@db:5432/tg?application_name=x");
        assert_eq!(
            shown,
            format!("sslmode=verify-full sslrootcert={}", ca.display())
        );
        assert_eq!(mode, SslMode::Require);
        let (rest, shown, mode) = settings(&format!(
            "host=db password='a b\\'c' sslrootcert='{}' sslmode = require user=u",
            ca.display()
        ))
        .unwrap();
        assert_eq!(rest, "host=db password='a b\\'c' user=u");
        assert_eq!(
            shown,
            format!("sslmode=require sslrootcert={}", ca.display())
        );
        assert_eq!(mode, SslMode::Require);
        assert_eq!(
            settings("postgres://db/tg").unwrap(),
            (
                "postgres://db/tg".into(),
                "sslmode=prefer".into(),
                SslMode::Prefer
            )
        );
        assert_eq!(
            settings("postgres://db/tg?sslmode=disable").unwrap(),
            (
                "postgres://db/tg".into(),
                "sslmode=disable".into(),
                SslMode::Disable
            )
        );
    }

    #[test]
    fn a_mode_that_checks_needs_a_ca_and_system_roots_need_verify_full() {
        let err = settings("postgres://db/tg?sslmode=verify-full").unwrap_err();
        assert!(err.contains("add sslrootcert="), "{err}");
        let err = settings("postgres://db/tg?sslmode=verify-ca").unwrap_err();
        assert!(err.contains("add sslrootcert="), "{err}");
        let err = settings("postgres://db/tg?sslmode=require&sslrootcert=system").unwrap_err();
        assert!(err.contains("too weak for sslrootcert=system"), "{err}");
        let err = settings("postgres://db/tg?sslmode=verify-everything").unwrap_err();
        assert!(err.contains("not one of libpq's modes"), "{err}");
        let err = settings("postgres://db/tg?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem")
            .unwrap_err();
        assert!(err.contains("sslrootcert=/nonexistent/ca.pem"), "{err}");
    }

    /// A self-signed certificate (openssl req -x509 -newkey ec), for loading only.
    const TEST_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBjDCCATOgAwIBAgIUbKblNpSeTaE6M1UQRRXTBn/eOFMwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQdG9vbGdhdGUtdW5pdC1jYTAgFw0yNjEyMDIwMTEyNTFaGA8y
MTI2MTEwODAxMTI1MVowGzEZMBcGA1UEAwwQdG9vbGdhdGUtdW5pdC1jYTBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABDVRsCITDOaa5lQfzEmq3CNMHzttumnVN4nt
/q/taBuWTXjur0eURfexVv00NxdsK1ff9g3NczNznxUkEUyfS9qjUzBRMB0GA1Ud
DgQWBBSb4gHeiyjEmW1KHxDxu0HLMvPk9TAfBgNVHSMEGDAWgBSb4gHeiyjEmW1K
HxDxu0HLMvPk9TAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIEPF
0klygzbYexg2D5XfKcCnIq0yQ4MhSKIrq2cQAI7wAiB6TDXIsxuOTfq1P2veKosy
Z9JgxdOwYAoJe6QwLpV3LQ==
-----END CERTIFICATE-----
";
}
