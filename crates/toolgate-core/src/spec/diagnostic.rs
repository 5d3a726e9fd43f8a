//! A problem found in a spec file: what, where, and what to do.

use serde::Serialize;

/// A byte range in the spec file's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Span {
    /// Byte offset of the range's start.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

/// How bad a diagnostic is: errors make `spec check` fail, warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth fixing, but the spec file loads.
    Warning,
    /// The spec file cannot be loaded until this is fixed.
    Error,
}

/// One problem in a spec file. `path` is the JSON pointer of the offending node;
/// `span` where it stands in the text, when known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Whether it stops the spec file from loading.
    pub severity: Severity,
    /// What is wrong, in one sentence.
    pub message: String,
    /// JSON pointer of the offending node (`/tools/0/http/url`); empty for the whole file.
    pub path: String,
    /// Where the node stands in the text, when the parser knew.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    /// What to do about it, when there is a concrete suggestion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error at `path`, without span or help.
    pub fn error(path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            path: path.into(),
            span: None,
            help: None,
        }
    }

    /// A warning at `path`, without span or help.
    pub fn warning(path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(path, message)
        }
    }

    /// Adds the suggestion of what to do.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Sets where the node stands in the text (`None` leaves it unplaced).
    pub fn with_span(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    /// Whether it stops the spec file from loading.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Appends "did you mean `x`?" to a help text when a known word is close to `word`.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let best = crate::closest_names(word, known).into_iter().next()?;
    Some(format!("did you mean `{best}`?"))
}
