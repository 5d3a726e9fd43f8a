//! A request body written as its media type: JSON (the default), form fields
//! (`application/x-www-form-urlencoded`, `multipart/form-data`), or text.
//!
//! The multipart writer covers what an HTTP binding sends, text fields, in a few
//! lines, rather than a dependency: each field one part, a list one part per item,
//! and a boundary that appears in no field.

use serde_json::Value;
use toolgate_core::ToolError;

use super::encode::{as_text, encode_component};

/// The body's bytes and `Content-Type`, written as `content_type` says: JSON (the
/// default), form fields (`application/x-www-form-urlencoded`, `multipart/form-data`:
/// an object's members, a list member repeated, `null` left out), or text (a string
/// as it is).
pub(super) fn encode_body(
    body: &Value,
    content_type: Option<&str>,
) -> Result<(Vec<u8>, String), ToolError> {
    let media = content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let fields = || -> Result<Vec<(String, String)>, ToolError> {
        let Value::Object(members) = body else {
            return Err(ToolError::permanent(format!(
                "the request body is sent as {media}, which needs an object of fields; make `body` an object (in the spec file)"
            )));
        };
        let mut out = Vec::new();
        for (key, value) in members {
            match value {
                Value::Null => {}
                Value::Array(items) => out.extend(
                    items
                        .iter()
                        .filter(|v| !v.is_null())
                        .map(|v| (key.clone(), as_text(v))),
                ),
                other => out.push((key.clone(), as_text(other))),
            }
        }
        Ok(out)
    };
    let write_error =
        |e: serde_json::Error| ToolError::permanent(format!("cannot write the request body: {e}"));
    match media.as_str() {
        "application/x-www-form-urlencoded" => {
            let encoded: Vec<String> = fields()?
                .iter()
                .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
                .collect();
            Ok((encoded.join("&").into_bytes(), media))
        }
        "multipart/form-data" => {
            let fields = fields()?;
            let boundary = (0u32..)
                .map(|n| format!("toolgate-boundary-{n:08x}"))
                .find(|b| {
                    fields
                        .iter()
                        .all(|(k, v)| !k.contains(b.as_str()) && !v.contains(b.as_str()))
                })
                .unwrap_or_default();
            let mut out = String::new();
            for (key, value) in &fields {
                let name = key.replace(['"', '\r', '\n'], "_");
                out.push_str(&format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                ));
            }
            out.push_str(&format!("--{boundary}--\r\n"));
            Ok((
                out.into_bytes(),
                format!("multipart/form-data; boundary={boundary}"),
            ))
        }
        m if m.starts_with("text/") => {
            let text = match body {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Ok((text.into_bytes(), content_type.unwrap_or(m).to_owned()))
        }
        _ => Ok((
            serde_json::to_vec(body).map_err(write_error)?,
            content_type.unwrap_or("application/json").to_owned(),
        )),
    }
}

/// `application/x-www-form-urlencoded` encoding: unreserved characters as they
/// are, a space as `+`, anything else percent-encoded.
fn form_encode(text: &str) -> String {
    encode_component(text).replace("%20", "+")
}
