//! The `limits:` section: bounds on what one call may carry, set by the operator.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diagnostic::Diagnostic;
use super::document::Document;

/// The largest `max_argument_bytes` a spec may set: 256 MiB. A tool call's
/// arguments come from a model or a client; more than this is a mistake (or a way
/// to make the gate hold that much in memory), not a call.
pub const MAX_ARGUMENT_BYTES_CEILING: u64 = 256 << 20;

/// Bounds on what one call may carry.
///
/// ```yaml
/// limits:
///   max_argument_bytes: 65536   # 64 KiB
///   rate:                       # see `RateLimit`
///     - {principal: "*", calls: 60, per: 1m}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    /// The largest arguments a call may have, in bytes of compact JSON (default
    /// 1 MiB, at most 268435456); a larger call is refused before anything reads
    /// it. `toolgate serve` also sizes the MCP message it accepts from this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_argument_bytes: Option<u64>,
    /// Rate limits: calls per time window and calls in flight, per principal,
    /// tool pattern, or both (see [`RateLimit`](super::RateLimit)). Each
    /// serving process counts on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate: Vec<super::RateLimit>,
}

impl LimitsSection {
    /// True for a section that says nothing (every limit at its default).
    pub fn is_default(&self) -> bool {
        self == &LimitsSection::default()
    }
}

/// Why `max_argument_bytes` cannot be `bytes`: the problem, and what to write
/// instead. Shared by `toolgate check` and the `--max-argument-bytes` flag.
pub fn check_max_argument_bytes(bytes: u64) -> Result<(), (String, String)> {
    if bytes == 0 {
        return Err((
            "`max_argument_bytes` is 0, so no call could carry arguments".into(),
            "write a number of bytes, e.g. `65536` (64 KiB); leave it out for the default of 1048576 (1 MiB)".into(),
        ));
    }
    if bytes > MAX_ARGUMENT_BYTES_CEILING {
        return Err((
            format!(
                "`max_argument_bytes` is {bytes}, more than the {MAX_ARGUMENT_BYTES_CEILING} bytes (256 MiB) a call's arguments may be"
            ),
            "write at most 268435456; pass large content by reference (a URL or a file path) rather than inside a call".into(),
        ));
    }
    Ok(())
}

/// The problems of a `limits:` section.
pub(super) fn check_limits(doc: &Document, limits: &LimitsSection) -> Vec<Diagnostic> {
    let Some(bytes) = limits.max_argument_bytes else {
        return Vec::new();
    };
    match check_max_argument_bytes(bytes) {
        Ok(()) => Vec::new(),
        Err((message, help)) => {
            let path = "/limits/max_argument_bytes";
            vec![
                Diagnostic::error(path, message)
                    .with_help(help)
                    .with_span(doc.value_span(path)),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_past_the_ceiling_are_refused_and_the_ends_are_not() {
        assert!(check_max_argument_bytes(0).is_err());
        assert!(check_max_argument_bytes(1).is_ok());
        assert!(check_max_argument_bytes(MAX_ARGUMENT_BYTES_CEILING).is_ok());
        assert!(check_max_argument_bytes(MAX_ARGUMENT_BYTES_CEILING + 1).is_err());
        assert!(check_max_argument_bytes(u64::MAX).is_err());
    }
}
