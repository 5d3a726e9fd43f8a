//! Rate limits, the `rate:` entries of the `limits:` section: how many calls a
//! principal, a tool (or tool pattern), or one principal's calls of a tool may
//! make per time window (a token bucket: a rate and a burst), and how many may
//! be running at once. The runtime's gate enforces them; here is what they say
//! and how `toolgate check` finds mistakes in them.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diagnostic::Diagnostic;
use super::document::Document;
use super::model::SpecFile;

/// One rate limit: which calls it counts, and how many it lets through.
///
/// The calls it counts: those of `principal` (each principal's own, for `*`)
/// to tools `tool` matches (a name, `ns.*` or `*`: together, one count), and
/// with neither, every call. The calls of a principal and a tool are counted
/// per principal when `principal` is set, and once for all callers when not.
///
/// ```yaml
/// limits:
///   rate:
///     - principal: support_bot   # support_bot's calls, any tool:
///       calls: 60                #   60 a minute,
///       per: 1m
///       burst: 10                #   at most 10 at once after a quiet spell
///     - tool: "orders.*"         # the calls of every orders tool, together:
///       in_flight: 4             #   at most 4 running at a time
///     - principal: "*"           # each principal's own calls of search_web:
///       tool: search_web         #   one a second
///       calls: 1
///       per: 1s
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// The principal whose calls count (`*`: each principal, counted apart);
    /// absent: every caller's, counted together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The tools whose calls count: a name, `ns.*` or `*` (default `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// How many calls may start per `per` (the bucket's rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u32>,
    /// The window of `calls`, such as `1s`, `1m` or `1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<String>,
    /// How many calls may start at once after a quiet spell (the bucket's
    /// size; default `calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// How many of the calls it counts may be running at the same time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u32>,
}

impl RateLimit {
    /// The window of `calls`, when `per` is a duration longer than zero.
    pub fn window(&self) -> Option<Duration> {
        let per = self.per.as_deref()?;
        humantime::parse_duration(per).ok().filter(|d| !d.is_zero())
    }

    /// What the limit holds to, in words for a refusal: `60 calls per 1m`.
    pub fn describe(&self) -> String {
        let who = match self.principal.as_deref() {
            Some("*") => "each principal's calls".to_owned(),
            Some(id) => format!("{id}'s calls"),
            None => "all calls".to_owned(),
        };
        let tool = match self.tool.as_deref() {
            None | Some("*") => String::new(),
            Some(tool) => format!(" to `{tool}`"),
        };
        let mut bounds = Vec::new();
        if let (Some(calls), Some(per)) = (self.calls, self.per.as_deref()) {
            bounds.push(format!("{calls} per {per}"));
        }
        if let Some(n) = self.in_flight {
            bounds.push(format!("{n} at a time"));
        }
        format!("{who}{tool}: {}", bounds.join(", "))
    }
}

/// The problems of `limits.rate`: bounds that let nothing through or say
/// nothing, a window that is not a duration, a principal not declared.
pub(super) fn check_rate_limits(doc: &Document, spec: &SpecFile) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, limit) in spec.limits.rate.iter().enumerate() {
        let at = |field: &str| format!("/limits/rate/{i}{field}");
        let mut error = |field: &str, message: String, help: &str| {
            let path = at(field);
            let span = doc.value_span(&path).or_else(|| doc.value_span(&at("")));
            out.push(
                Diagnostic::error(path, message)
                    .with_help(help.to_owned())
                    .with_span(span),
            );
        };
        if limit.calls.is_none() && limit.in_flight.is_none() {
            error(
                "",
                "this rate limit sets neither `calls` (with `per`) nor `in_flight`, so it limits nothing".into(),
                "write e.g. `calls: 60` and `per: 1m`, or `in_flight: 4`",
            );
        }
        match (limit.calls, limit.per.as_deref()) {
            (Some(0), _) => error(
                "/calls",
                "`calls` is 0, so no call could ever run".into(),
                "write at least 1; to refuse a tool altogether, deny it in `policy:`",
            ),
            (Some(_), None) => error(
                "/calls",
                "`calls` needs `per`, the window it counts over".into(),
                "add e.g. `per: 1m`",
            ),
            (None, Some(_)) => error(
                "/per",
                "`per` needs `calls`, how many calls it lets through".into(),
                "add e.g. `calls: 60`",
            ),
            (Some(_), Some(per)) if limit.window().is_none() => error(
                "/per",
                format!("`{per}` is not a duration longer than zero"),
                "write a duration such as `1s`, `1m` or `1h`",
            ),
            _ => {}
        }
        match (limit.burst, limit.calls) {
            (Some(0), _) => error(
                "/burst",
                "`burst` is 0, so no call could ever run".into(),
                "write at least 1, or leave it out (it defaults to `calls`)",
            ),
            (Some(_), None) => error(
                "/burst",
                "`burst` needs `calls` and `per`".into(),
                "add e.g. `calls: 60` and `per: 1m`",
            ),
            _ => {}
        }
        if limit.in_flight == Some(0) {
            error(
                "/in_flight",
                "`in_flight` is 0, so no call could ever run".into(),
                "write at least 1; to refuse a tool altogether, deny it in `policy:`",
            );
        }
        if let Some(principal) = limit.principal.as_deref()
            && principal != "*"
            && principal != "operator"
            && !spec.principals.contains_key(principal)
        {
            error(
                "/principal",
                format!("`{principal}` is not a principal the spec declares"),
                "name one declared under `principals:`, or `*` for each principal",
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(yaml: &str) -> Vec<String> {
        let spec: SpecFile = serde_saphyr::from_str(yaml).unwrap();
        let doc = Document::parse(yaml).unwrap();
        check_rate_limits(&doc, &spec)
            .into_iter()
            .map(|d| format!("{} {}", d.path, d.message))
            .collect()
    }

    #[test]
    fn a_limit_that_limits_nothing_or_everything_is_an_error() {
        let found = problems(
            "limits:\n  rate:\n    - tool: a\n    - calls: 0\n      per: 1s\n    - calls: 3\n    - in_flight: 0\n    - calls: 2\n      per: soon\n      burst: 0\n",
        );
        insta::assert_snapshot!(found.join("\n"), @r"
        /limits/rate/0 this rate limit sets neither `calls` (with `per`) nor `in_flight`, so it limits nothing
        /limits/rate/1/calls `calls` is 0, so no call could ever run
        /limits/rate/2/calls `calls` needs `per`, the window it counts over
        /limits/rate/3/in_flight `in_flight` is 0, so no call could ever run
        /limits/rate/4/per `soon` is not a duration longer than zero
        /limits/rate/4/burst `burst` is 0, so no call could ever run
        ");
    }

    #[test]
    fn a_limit_names_a_declared_principal_or_each() {
        let yaml = "principals:\n  bot: {}\nlimits:\n  rate:\n    - {principal: bot, calls: 1, per: 1s}\n    - {principal: '*', in_flight: 2}\n    - {principal: bott, in_flight: 2}\n";
        assert_eq!(
            problems(yaml),
            ["/limits/rate/2/principal `bott` is not a principal the spec declares"]
        );
    }

    #[test]
    fn a_limit_describes_itself_for_a_refusal() {
        let limit: RateLimit =
            serde_json::from_value(serde_json::json!({"principal": "*", "tool": "search_web", "calls": 1, "per": "1s", "in_flight": 2}))
                .unwrap();
        assert_eq!(
            limit.describe(),
            "each principal's calls to `search_web`: 1 per 1s, 2 at a time"
        );
        assert_eq!(limit.window(), Some(Duration::from_secs(1)));
    }
}
