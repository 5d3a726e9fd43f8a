//! The server every binding's URL starts with: `--server` (a URL, or the index of a
//! server the document lists), else the document's first server with its variables
//! at their defaults (Swagger 2.0: `schemes`, `host` and `basePath`). A server that
//! is not public gets a `network:` entry, so the spec file's calls are not refused.

use serde_json::Value;

use super::document::OpenApiVersion;
use super::{RestImportError, swagger2};
use crate::spec::{NetworkPolicy, NetworkSection, literal_authority};

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

/// The `network:` entry a server needs when the default policy refuses it.
pub(super) fn network_entry(url: &str) -> Option<String> {
    NetworkPolicy::new(&NetworkSection::default()).refusal_for_url(url)?;
    let (_, host, port) = literal_authority(url)?;
    Some(match port {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
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
        assert_eq!(
            network_entry("http://127.0.0.1:4010").as_deref(),
            Some("127.0.0.1:4010")
        );
        assert_eq!(network_entry("https://api.github.com"), None);
    }
}
