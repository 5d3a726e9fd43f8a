//! What a program may use, and the defaults. Each limit, when hit, ends the
//! program with an error that names it and says how to raise it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The limits of one program run. A spec file's `code_mode:` section sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodeLimits {
    /// The whole run, tool calls included (default 60 s).
    #[serde(with = "humantime_serde_compat")]
    pub wall_clock: Duration,
    /// Time spent interpreting, not counting time inside tool calls (default
    /// 10 s). The worker's CPU time is capped a little above it as a backstop.
    #[serde(with = "humantime_serde_compat")]
    pub interpreter_time: Duration,
    /// Tool calls a program may make (default 100).
    pub max_calls: usize,
    /// Bytes a program may print; the result is capped to as many (default 64 KiB).
    pub max_output_bytes: usize,
    /// The worker's address space (default 1 GiB): a program that needs more ends.
    pub max_memory_bytes: u64,
    /// How deep Python calls may nest (default 200).
    pub max_recursion_depth: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        CodeLimits {
            wall_clock: Duration::from_secs(60),
            interpreter_time: Duration::from_secs(10),
            max_calls: 100,
            max_output_bytes: 64 << 10,
            max_memory_bytes: 1 << 30,
            max_recursion_depth: 200,
        }
    }
}

/// Durations as humantime text (`"10s"`, `"1m 30s"`), as the rest of a spec
/// file writes them.
mod humantime_serde_compat {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "`{text}` is not a duration ({e}); write e.g. `10s`"
            ))
        })
    }
}
