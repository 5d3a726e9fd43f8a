//! The server every binding's URL starts with: `--server` (a URL, or the index of a
//! server the document lists), else the document's first server with its variables
//! at their defaults (Swagger 2.0: `schemes`, `host` and `basePath`).
//!
//! A server that is not public (loopback, private, link-local, a cloud metadata
//! service, `localhost`, a name only a private network resolves) gets a `network:`
//! entry only when the operator chose it: a `--server` URL, or an `--allow` entry
//! that covers it. A description is untrusted input, so a host it names is
//! otherwise left out of `network:` with a warning, and calls to it stay refused.

use std::net::{IpAddr, Ipv4Addr};

use indexmap::IndexMap;
use serde_json::Value;

use super::document::OpenApiVersion;
use super::{NoteKind, RestImportError, RestImportOptions, RestNote, swagger2};
use crate::spec::{
    AddressClass, METADATA_HOSTS, NetworkPolicy, NetworkSection, classify, default_port,
    is_metadata_address, is_private_name, literal_authority,
};

/// The server URL, without a trailing `/`.
pub(super) fn server_url(
    root: &Value,
    version: OpenApiVersion,
    choice: Option<&str>,
) -> Result<String, RestImportError> {
    let listed: Vec<String> = match version {
        OpenApiVersion::Swagger2 => swagger2::server(root).into_iter().collect(),
        _ => root
            .get("servers")
            .and_then(Value::as_array)
            .map(|servers| servers.iter().filter_map(filled).collect())
            .unwrap_or_default(),
    };
    let url = match choice {
        Some(index) if index.parse::<usize>().is_ok() => {
            let i: usize = index.parse().unwrap_or_default();
            listed.get(i).cloned().ok_or_else(|| {
                RestImportError::Server(format!(
                    "--server {i}: the description lists {} server(s){}; give an index below that, or a URL",
                    listed.len(),
                    list(&listed)
                ))
            })?
        }
        Some(url) => url.to_owned(),
        None => listed.first().cloned().ok_or_else(|| {
            RestImportError::Server(
                "the description names no server; pass --server https://host/base".into(),
            )
        })?,
    };
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(RestImportError::Server(format!(
            "the server `{url}` is not an absolute http(s) URL; pass --server https://host/base{}",
            list(&listed)
        )));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

fn list(servers: &[String]) -> String {
    if servers.is_empty() {
        String::new()
    } else {
        format!(
            " (it lists {})",
            servers
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// A server object's URL with its variables at their defaults.
pub(super) fn filled(server: &Value) -> Option<String> {
    let mut url = server.get("url")?.as_str()?.to_owned();
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (name, var) in vars {
            if let Some(default) = var.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    Some(url)
}

/// A host that is not public: the `network.allow` entry that opens it (`host`, or
/// `host:port` when the URL names its port) and what it is, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PrivateHost {
    pub entry: String,
    pub what: String,
}

/// The host of `url` when it is not public; `None` for a public host, or a URL
/// whose host is not written out.
pub(super) fn private_host(url: &str) -> Option<PrivateHost> {
    let (_, host, port) = literal_authority(url)?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let what = match bare.parse::<IpAddr>() {
        Ok(ip) if is_metadata_address(ip) => {
            "the address of a cloud metadata service, which hands out the machine's credentials"
                .to_owned()
        }
        Ok(ip) => match classify(ip) {
            AddressClass::Public => return None,
            class => class.describe().to_owned(),
        },
        Err(_) if METADATA_HOSTS.iter().any(|h| bare.eq_ignore_ascii_case(h)) => {
            "the name of a cloud metadata service, which hands out the machine's credentials"
                .to_owned()
        }
        Err(_) if bare.eq_ignore_ascii_case("localhost") => "this machine (loopback)".to_owned(),
        Err(_) if is_private_name(bare) => "a name only a private network resolves".to_owned(),
        Err(_) => return None,
    };
    let entry = match port {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    Some(PrivateHost { entry, what })
}

/// Whether the operator's `--allow` entries cover `url`'s host and port.
fn allowed_by(policy: &NetworkPolicy, url: &str) -> bool {
    let Some((scheme, host, port)) = literal_authority(url) else {
        return false;
    };
    let Some(port) = port.or_else(|| default_port(scheme)) else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => policy.lists_address(ip, port),
        Err(_) => {
            policy.lists_host(bare, port)
                || (bare.eq_ignore_ascii_case("localhost")
                    && policy.lists_address(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
        }
    }
}

/// The `network:` section for the tools' URLs (`server` first), the notes on what
/// it lists, and a warning for each host that is not public and was left out.
pub(super) fn network_section(
    server: &str,
    tool_urls: &[&str],
    options: &RestImportOptions,
) -> (NetworkSection, Vec<RestNote>, Vec<String>) {
    // A `--server URL` was typed by the operator; an index picks one of the document's.
    let chosen = options
        .server
        .as_deref()
        .is_some_and(|s| s.parse::<usize>().is_err());
    let operator = NetworkPolicy::new(&NetworkSection {
        allow: options.allow.clone(),
        allow_public: true,
    });
    let mut network = NetworkSection::default();
    let mut notes = Vec::new();
    // Hosts left out: what each is, and how many tools call it.
    let mut refused: IndexMap<String, (String, usize)> = IndexMap::new();
    let urls = std::iter::once((server, false)).chain(tool_urls.iter().map(|u| (*u, true)));
    for (url, is_tool) in urls {
        let Some(host) = private_host(url) else {
            continue;
        };
        if network.allow.contains(&host.entry) {
            continue;
        }
        let why = if chosen {
            "--server names it"
        } else if allowed_by(&operator, url) {
            "--allow lets it through"
        } else {
            let left_out = refused.entry(host.entry).or_insert((host.what, 0));
            left_out.1 += usize::from(is_tool);
            continue;
        };
        notes.push(RestNote {
            kind: NoteKind::Server,
            tool: None,
            message: format!(
                "`{}` is not a public host: allowed under `network:`, as {why}",
                host.entry
            ),
        });
        network.allow.push(host.entry);
    }
    let warnings = refused
        .into_iter()
        .filter(|(_, (_, tools))| *tools > 0)
        .map(|(entry, (what, tools))| {
            let tools = if tools == 1 {
                "the tool bound to it".to_owned()
            } else {
                format!("the {tools} tools bound to it")
            };
            format!(
                "the description's server `{entry}` is {what}; it is not added to `network.allow`, so calls of {tools} will be refused. Pass `--allow {entry}` if the tools are meant to reach it"
            )
        })
        .collect();
    (network, notes, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_server_is_chosen_by_flag_or_listed_first_with_its_variables() {
        let doc = json!({"servers": [{"url": "https://{region}.x.example/v1/", "variables": {"region": {"default": "eu"}}}, {"url": "/relative"}]});
        let v = OpenApiVersion::V3_0;
        assert_eq!(
            server_url(&doc, v, None).unwrap(),
            "https://eu.x.example/v1"
        );
        assert_eq!(
            server_url(&doc, v, Some("http://127.0.0.1:4010")).unwrap(),
            "http://127.0.0.1:4010"
        );
        let err = server_url(&doc, v, Some("1")).unwrap_err().to_string();
        assert!(err.contains("`/relative` is not an absolute"), "{err}");
        let err = server_url(&doc, v, Some("7")).unwrap_err().to_string();
        assert!(err.contains("lists 2 server(s)"), "{err}");
        assert!(
            server_url(&json!({}), v, None)
                .unwrap_err()
                .to_string()
                .contains("--server")
        );
        let entry = |url: &str| private_host(url).map(|h| h.entry);
        assert_eq!(
            entry("http://127.0.0.1:4010").as_deref(),
            Some("127.0.0.1:4010")
        );
        assert_eq!(entry("https://api.github.com"), None);
    }

    #[test]
    fn hosts_that_are_not_public_are_told_apart_from_public_ones() {
        let what = |url: &str| private_host(url).map(|h| h.what);
        for url in [
            "http://169.254.169.254/latest",
            "http://[fd00:ec2::254]/latest",
            "http://100.100.100.200/",
            "http://metadata.google.internal/computeMetadata/v1",
        ] {
            assert!(
                what(url).unwrap().contains("cloud metadata service"),
                "{url}"
            );
        }
        assert_eq!(
            what("http://localhost:8080").as_deref(),
            Some("this machine (loopback)")
        );
        assert!(what("http://10.1.2.3/").unwrap().contains("private"));
        assert!(what("http://[fe80::1]:81/").unwrap().contains("link-local"));
        assert_eq!(
            what("https://billing.internal/v1").as_deref(),
            Some("a name only a private network resolves")
        );
        for url in [
            "https://api.github.com",
            "https://8.8.8.8/",
            "https://{region}.shop.example",
        ] {
            assert_eq!(what(url), None, "{url}");
        }
    }
}
