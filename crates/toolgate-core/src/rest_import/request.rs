//! The parts of a request an operation declares — its parameters and its body —
//! and the media types toolgate sends.
//!
//! Both readers fill this model: the OpenAPI 3 one (`operations`) and the Swagger
//! 2.0 one (`swagger2`), which is why it sits below both. Only the model and the
//! media-type ranking live here; reading a document into them is the readers' work.

use std::rc::Rc;

use serde_json::Value;

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Location> {
        Some(match s {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            _ => return None,
        })
    }
}

/// One parameter, its schema still as written.
#[derive(Debug, Clone)]
pub(super) struct Param {
    pub name: String,
    pub location: Location,
    pub required: bool,
    pub description: Option<String>,
    pub deprecated: bool,
    pub schema: Value,
    pub base: Rc<str>,
    pub style: Option<String>,
    pub explode: Option<bool>,
    /// `allowReserved` (a query parameter's).
    pub allow_reserved: bool,
}

/// The request body chosen among the media types the operation accepts.
#[derive(Debug, Clone)]
pub(super) struct Body {
    pub media_type: String,
    pub schema: Value,
    pub base: Rc<str>,
    pub required: bool,
    pub description: Option<String>,
}

/// What an operation's request body can be sent as.
#[derive(Debug, Clone)]
pub(super) enum BodyChoice {
    None,
    Chosen(Body),
    /// Only media types toolgate does not send (listed).
    Unsupported(Vec<String>),
}

/// A parameter as read: the common model (`None` for a Swagger 2.0 body or form
/// parameter, kept raw in the second field for the Swagger 2.0 reader's `body`).
pub(super) type ReadParam = (Option<Param>, Option<Value>);

/// Whether toolgate sends a body of this media type, and how it ranks (lower first).
pub(super) fn body_rank(media_type: &str) -> Option<u8> {
    let media = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if media == "application/json" {
        Some(0)
    } else if media.ends_with("+json") || media == "*/*" || media == "application/*" {
        Some(1)
    } else if media == "application/x-www-form-urlencoded" {
        Some(2)
    } else if media == "multipart/form-data" {
        Some(3)
    } else if media.starts_with("text/") {
        Some(4)
    } else {
        None
    }
}

/// Whether a media type is JSON.
pub(super) fn is_json(media_type: &str) -> bool {
    let media = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media == "application/json" || media.ends_with("+json")
}
