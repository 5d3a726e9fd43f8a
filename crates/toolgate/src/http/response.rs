//! An HTTP response as the tool's value or error.
//!
//! JSON bodies (`application/json`, `*/*+json`, or no content type and a body that
//! parses) become the value itself. Other bodies become `{status, content_type, body}`
//! with the body as text, cut at the size limit (`truncated: true` then). A JSON body
//! over the limit is an error: half a document is not a value. A status outside 2xx
//! is an error carrying the status and a short, sanitized excerpt of the body;
//! 429 and 5xx are retryable (after `Retry-After` when the server sends it).

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolgate_core::{SanitizeOptions, ToolError, sanitize_description};

use super::secrets::Secrets;

/// The largest body read when a binding does not say: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;
/// How much of an error body is read for its excerpt.
const ERROR_BODY_BYTES: u64 = 8 * 1024;
/// How many characters of an error body the model sees.
const EXCERPT_CHARS: usize = 300;

/// A body read up to a limit.
pub(super) struct Body {
    pub bytes: Vec<u8>,
    /// The server had more to send than the limit.
    pub truncated: bool,
}

/// Reads at most `limit` bytes of the body, chunk by chunk; the rest is never read
/// (dropping the response closes the connection).
pub(super) async fn read_limited(
    response: &mut reqwest::Response,
    limit: u64,
) -> Result<Body, reqwest::Error> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let expected = response
        .content_length()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected.min(limit).min(64 * 1024));
    while let Some(chunk) = response.chunk().await? {
        let room = limit - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body {
                bytes,
                truncated: true,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body {
        bytes,
        truncated: false,
    })
}

/// How many bytes of an error body to read.
pub(super) fn error_body_limit(limit: u64) -> u64 {
    limit.min(ERROR_BODY_BYTES)
}

/// Whether a content type is JSON.
pub(super) fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        let media = ct
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        media == "application/json" || media.ends_with("+json")
    })
}

fn is_textual(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        let media = ct.to_ascii_lowercase();
        media.starts_with("text/")
            || [
                "json",
                "xml",
                "javascript",
                "x-www-form-urlencoded",
                "yaml",
                "csv",
            ]
            .iter()
            .any(|k| media.contains(k))
    })
}

/// The value of a successful response.
pub(super) fn success_value(
    status: u16,
    content_type: Option<&str>,
    body: Body,
    host: &str,
    limit: u64,
) -> Result<Value, ToolError> {
    let json_declared = is_json(content_type);
    if json_declared && body.truncated {
        return Err(ToolError::permanent(format!(
            "the JSON response from {host} is larger than the limit of {limit} bytes, so it was not read whole; raise the binding's `max_response_bytes` if the tool needs it"
        )));
    }
    if (json_declared || content_type.is_none())
        && !body.truncated
        && let Ok(value) = serde_json::from_slice::<Value>(&body.bytes)
    {
        return Ok(value);
    }
    let text = match std::str::from_utf8(&body.bytes) {
        Ok(text) => text.to_owned(),
        // A cut inside a multi-byte character is still text.
        Err(e) if e.error_len().is_none() => {
            String::from_utf8_lossy(&body.bytes[..e.valid_up_to()]).into_owned()
        }
        Err(_) if is_textual(content_type) => String::from_utf8_lossy(&body.bytes).into_owned(),
        Err(_) => format!(
            "({} bytes of {} content, not shown)",
            body.bytes.len(),
            content_type.unwrap_or("binary")
        ),
    };
    let mut value = json!({"status": status, "content_type": content_type, "body": text});
    if body.truncated {
        value["truncated"] = json!(true);
    }
    Ok(value)
}

/// The error for a status outside 2xx.
pub(super) fn status_error(
    status: reqwest::StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
    host: &str,
    secrets: &Secrets,
) -> ToolError {
    let reason = status.canonical_reason().unwrap_or("");
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let excerpt = sanitize_description(
        &secrets.mask(&text),
        &SanitizeOptions::for_output().with_max_chars(EXCERPT_CHARS),
    )
    .text;
    let mut message = format!("HTTP {} {reason} from {host}", status.as_u16());
    let retryable = status.as_u16() == 429 || status.is_server_error();
    if retryable && let Some(wait) = retry_after {
        message.push_str(&format!(
            " (retry after {})",
            humantime::format_duration(wait)
        ));
    }
    if !excerpt.is_empty() {
        message.push_str(": ");
        message.push_str(&excerpt);
    }
    if retryable {
        ToolError::Retryable {
            message,
            retry_after,
        }
    } else {
        ToolError::permanent(message)
    }
}

/// Reads `Retry-After`: a number of seconds, or an HTTP date (a date in the past
/// means now).
pub(super) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(bytes: &[u8], truncated: bool) -> Body {
        Body {
            bytes: bytes.to_vec(),
            truncated,
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn json_bodies_are_values_and_other_bodies_are_described() {
        assert_eq!(
            success_value(
                200,
                Some("application/problem+json"),
                body(b"{\"a\":1}", false),
                "h",
                10
            )
            .unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            success_value(200, None, body(b"[1,2]", false), "h", 10).unwrap(),
            json!([1, 2])
        );
        assert_eq!(
            success_value(200, Some("text/plain"), body(b"[1,2]", false), "h", 10).unwrap(),
            json!({"status": 200, "content_type": "text/plain", "body": "[1,2]"})
        );
        assert_eq!(
            success_value(
                200,
                Some("image/png"),
                body(&[0x89, 0xff, 0x00], false),
                "h",
                10
            )
            .unwrap()["body"],
            json!("(3 bytes of image/png content, not shown)")
        );
    }

    #[test]
    fn a_cut_body_is_marked_and_a_cut_json_body_is_an_error() {
        let v = success_value(
            200,
            Some("text/plain"),
            body("héllo".as_bytes()[..2].as_ref(), true),
            "h",
            2,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"status": 200, "content_type": "text/plain", "body": "h", "truncated": true})
        );
        let err = success_value(
            200,
            Some("application/json"),
            body(b"{\"a\":", true),
            "h",
            5,
        )
        .unwrap_err();
        assert!(err.to_string().contains("max_response_bytes"), "{err}");
    }

    #[test]
    fn error_statuses_carry_an_excerpt_and_are_retryable_only_for_429_and_5xx() {
        let secrets = Secrets::default();
        let not_found = status_error(
            reqwest::StatusCode::NOT_FOUND,
            None,
            b"no such\n order",
            "h",
            &secrets,
        );
        assert_eq!(
            not_found,
            ToolError::permanent("HTTP 404 Not Found from h: no such order")
        );
        let busy = status_error(
            reqwest::StatusCode::SERVICE_UNAVAILABLE,
            Some(Duration::from_secs(2)),
            b"",
            "h",
            &secrets,
        );
        assert_eq!(
            busy,
            ToolError::Retryable {
                message: "HTTP 503 Service Unavailable from h (retry after 2s)".into(),
                retry_after: Some(Duration::from_secs(2))
            }
        );
        let long = "x".repeat(5000);
        let err = status_error(
            reqwest::StatusCode::BAD_REQUEST,
            None,
            long.as_bytes(),
            "h",
            &secrets,
        );
        assert!(err.to_string().len() < 400, "{}", err.to_string().len());
    }
}
