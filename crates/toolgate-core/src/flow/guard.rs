//! Guards at work: evaluated over a conversation's facts, and put into words —
//! what a guard says, and what must happen before it holds.
//!
//! Evaluation is three-valued: `above` and `starts_with` read the arguments of
//! the call being admitted, so where no call is being admitted (listing tools)
//! they are unknown; `claim` reads the caller's credential, unknown where none
//! is known (a flow's own guards). A value a guard cannot read is unknown too:
//! an `above` given no number, a `starts_with` given a path in disguise
//! ([`disguised_in_path`]).

use std::fmt;

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use super::model::{Above, Guard, StartsWith};

/// What a guard can read.
pub(crate) trait Facts {
    /// A state key's value (declared defaults included).
    fn state(&self, key: &str) -> Option<&Value>;
    /// Whether the tool has succeeded in this conversation.
    fn succeeded(&self, tool: &str) -> bool;
    /// Whether the step is done.
    fn is_done(&self, step: &str) -> bool;
    /// What must happen before the step is done.
    fn unmet_done(&self, step: &str) -> Vec<Cond>;
    /// The arguments of the call being admitted, if any.
    fn args(&self) -> Option<&Value>;
    /// Whether the words are for someone who may know of the tool: a principal
    /// is never told the name of a tool outside its view.
    fn may_name(&self, _tool: &str) -> bool {
        true
    }
    /// The claims of the caller's credential, where they are known.
    fn claims(&self) -> Option<&serde_json::Map<String, Value>> {
        None
    }
    /// Whether the conversation has seen the label, where that is known.
    fn seen(&self, _label: crate::SeenLabel) -> Option<bool> {
        None
    }
    /// Whether the argument (`*`: any) of the call being admitted carries
    /// untrusted text, where that is known.
    fn tainted(&self, _arg: &str) -> Option<bool> {
        None
    }
}

/// What a principal is told in place of a tool it may not know of:
/// "blocked until a step you cannot take has been done".
pub(crate) const HIDDEN_STEP: &str = "a step you cannot take";

/// `lookup_order has succeeded`, or for a tool the reader may not know of,
/// `a step you cannot take has been done`; `already` says it for good.
pub(crate) fn succeeded_words(
    tool: &str,
    may_name: &dyn Fn(&str) -> bool,
    already: bool,
) -> String {
    match (may_name(tool), already) {
        (true, false) => format!("{tool} has succeeded"),
        (true, true) => format!("{tool} has already succeeded"),
        (false, false) => format!("{HIDDEN_STEP} has been done"),
        (false, true) => format!("{HIDDEN_STEP} has already been done"),
    }
}

/// One thing that must become true, in words; or, when `permanent`, a fact that
/// no later event can change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cond {
    pub text: String,
    pub permanent: bool,
}

impl Cond {
    /// Something a later event can make true.
    pub(crate) fn needs(text: impl Into<String>) -> Self {
        Cond {
            text: text.into(),
            permanent: false,
        }
    }

    /// Something no later event can change (`not: always`, a tool already called).
    pub(crate) fn fact(text: impl Into<String>) -> Self {
        Cond {
            text: text.into(),
            permanent: true,
        }
    }
}

/// The guard's value: `None` when it cannot be told (an `above` with no call).
pub(crate) fn eval(guard: &Guard, facts: &dyn Facts) -> Option<bool> {
    match guard {
        Guard::Always => Some(true),
        Guard::IsTrue(key) => Some(facts.state(key) == Some(&Value::Bool(true))),
        Guard::IsSet(key) => Some(facts.state(key).is_some_and(|v| !v.is_null())),
        Guard::Eq(pairs) => Some(pairs.iter().all(|(key, want)| {
            let have = facts.state(key).unwrap_or(&Value::Null);
            values_equal(have, want)
        })),
        Guard::CalledOk(tool) => Some(facts.succeeded(tool)),
        Guard::Done(step) => Some(facts.is_done(step)),
        Guard::All(parts) => {
            let mut unknown = false;
            for part in parts {
                match eval(part, facts) {
                    Some(false) => return Some(false),
                    None => unknown = true,
                    Some(true) => {}
                }
            }
            (!unknown).then_some(true)
        }
        Guard::Any(parts) => {
            let mut unknown = false;
            for part in parts {
                match eval(part, facts) {
                    Some(true) => return Some(true),
                    None => unknown = true,
                    Some(false) => {}
                }
            }
            (!unknown).then_some(false)
        }
        Guard::Not(inner) => eval(inner, facts).map(|v| !v),
        Guard::Above(above) => {
            let args = facts.args()?;
            let Some(value) = args.get(&above.arg) else {
                // An absent argument is above nothing.
                return Some(false);
            };
            // A value that is no number cannot be compared: unknown, which a
            // policy rule and a confirmation read as their stricter side.
            let value = as_number(value)?;
            let limit = match (&above.state, &above.value) {
                (_, Some(limit)) => limit.as_f64(),
                (Some(key), None) => facts.state(key).and_then(Value::as_f64),
                (None, None) => None,
            }?;
            Some(value > limit)
        }
        Guard::StartsWith(test) => {
            let args = facts.args()?;
            starts_with(args, test)
        }
        Guard::Seen(label) => facts.seen(*label),
        Guard::Tainted(arg) => facts.tainted(arg),
        Guard::Claim(pairs) => {
            let claims = facts.claims()?;
            Some(
                pairs
                    .iter()
                    .all(|(name, wanted)| crate::principal::claim_holds(claims, name, wanted)),
            )
        }
    }
}

/// An argument's value as `above` compares it: a JSON number, or a string that
/// holds one (`"50000"`, `"1e9"`, surrounding spaces ignored), as upstream
/// schemas often carry amounts. Anything else — another string, `true`, `null`,
/// an array, a non-finite number — is `None`: it cannot be compared.
pub(crate) fn as_number(value: &Value) -> Option<f64> {
    let number = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    number.is_finite().then_some(number)
}

/// Whether the call's argument, as a normalized path, starts with the prefix. An
/// absent or non-string argument starts with nothing; a path in disguise
/// ([`disguised_in_path`]) cannot be told (`None`), which a policy rule reads as
/// its stricter side.
fn starts_with(args: &Value, test: &StartsWith) -> Option<bool> {
    let Some(path) = args.get(&test.arg).and_then(Value::as_str) else {
        return Some(false);
    };
    if disguised_in_path(path).is_some() {
        return None;
    }
    Some(normalize_path(path).is_some_and(|path| {
        path.starts_with(&test.value)
            || (test.value.ends_with('/') && path == test.value[..test.value.len() - 1])
    }))
}

/// Lookalikes of `/` that NFKC leaves alone but other software reads as `/`
/// (Windows' best-fit conversion turns U+2215 into `/`): fraction slash, division
/// slash, big solidus.
const SLASH_LOOKALIKES: [char; 3] = ['\u{2044}', '\u{2215}', '\u{29f8}'];

/// What makes `path` a path in disguise, if anything: a percent-escape (`%2e%2e`
/// is `..` to whatever decodes it), a character NFKC turns into `/`, `.`, `\`
/// or `%` (fullwidth `／` and `．`, `‥`, `﹒`), or a lookalike of `/` (see
/// [`SLASH_LOOKALIKES`]). Resolving `.` and `..` says nothing about where such a
/// path leads once the tool, or what it hands the path to, decodes it, so
/// `starts_with` does not tell.
///
/// ```
/// use toolgate_core::flow::disguised_in_path;
/// assert!(disguised_in_path("/srv/data/%2e%2e/etc").is_some());
/// assert!(disguised_in_path("/srv/data/\u{ff0e}\u{ff0e}/etc").is_some());
/// assert!(disguised_in_path("/srv/data/..\u{2215}etc").is_some());
/// assert_eq!(disguised_in_path("/srv/data/100%/café.txt"), None);
/// ```
pub fn disguised_in_path(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && hex.iter().all(u8::is_ascii_hexdigit)
        {
            return Some(format!(
                "`%{}`, a percent-escape",
                String::from_utf8_lossy(hex)
            ));
        }
    }
    path.chars().filter(|c| !c.is_ascii()).find_map(|c| {
        let code = u32::from(c);
        if SLASH_LOOKALIKES.contains(&c) {
            return Some(format!("U+{code:04X}, a lookalike of `/`"));
        }
        let read: String = std::iter::once(c).nfkc().collect();
        read.contains(['/', '.', '\\', '%'])
            .then(|| format!("U+{code:04X}, which reads as `{read}`"))
    })
}

/// A path with its `.` and `..` segments resolved and repeated `/` collapsed,
/// lexically (the file system is not asked): `/srv/data/../etc` is `/srv/etc`.
/// `None` when a `..` climbs above the path's start (`/..`, `a/../..`): such a
/// path is under no prefix. A NUL byte also makes it `None`.
///
/// ```
/// use toolgate_core::flow::normalize_path;
/// assert_eq!(normalize_path("/srv/data/./a//b/../c").as_deref(), Some("/srv/data/a/c"));
/// assert_eq!(normalize_path("/srv/data/../../etc"), Some("/etc".into()));
/// assert_eq!(normalize_path("/.."), None);
/// ```
pub fn normalize_path(path: &str) -> Option<String> {
    if path.contains('\0') {
        return None;
    }
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    Some(if absolute {
        format!("/{joined}")
    } else {
        joined
    })
}

/// Whether the guard holds; unknown counts as not.
pub(crate) fn holds(guard: &Guard, facts: &dyn Facts) -> bool {
    eval(guard, facts) == Some(true)
}

/// What must become true for `guard` to hold; empty when it holds.
pub(crate) fn unmet(guard: &Guard, facts: &dyn Facts) -> Vec<Cond> {
    if holds(guard, facts) {
        return Vec::new();
    }
    match guard {
        Guard::Always => Vec::new(),
        Guard::IsTrue(key) => vec![Cond::needs(format!("`{key}` is true"))],
        Guard::IsSet(key) => vec![Cond::needs(format!("`{key}` is set"))],
        Guard::Eq(pairs) => pairs
            .iter()
            .filter(|(key, want)| !values_equal(facts.state(key).unwrap_or(&Value::Null), want))
            .map(|(key, want)| Cond::needs(format!("`{key}` is {}", value_words(want))))
            .collect(),
        Guard::CalledOk(tool) => vec![Cond::needs(succeeded_words(
            tool,
            &|t| facts.may_name(t),
            false,
        ))],
        Guard::Done(step) => facts.unmet_done(step),
        Guard::All(parts) => parts.iter().flat_map(|p| unmet(p, facts)).collect(),
        Guard::Any(parts) => {
            let alternatives: Vec<Vec<Cond>> = parts.iter().map(|p| unmet(p, facts)).collect();
            either(alternatives)
        }
        Guard::Not(inner) => negated(inner, facts),
        Guard::Above(above) => vec![Cond::needs(above_words(above, false))],
        Guard::StartsWith(test) => vec![Cond::needs(starts_with_words(test, false))],
        Guard::Claim(pairs) => vec![Cond::needs(claim_words(pairs, false))],
        Guard::Seen(label) => vec![Cond::needs(seen_words(*label, false))],
        Guard::Tainted(arg) => vec![Cond::needs(tainted_words(arg, false))],
    }
}

/// What must become true for `guard` to stop holding (it holds now).
fn negated(guard: &Guard, facts: &dyn Facts) -> Vec<Cond> {
    if !holds(guard, facts) {
        return Vec::new();
    }
    match guard {
        Guard::Always => vec![Cond::fact("the flow's `not: always` never holds")],
        Guard::IsTrue(key) => vec![Cond::needs(format!("`{key}` is no longer true"))],
        Guard::IsSet(key) => vec![Cond::needs(format!("`{key}` is cleared"))],
        Guard::Eq(pairs) => either(
            pairs
                .iter()
                .map(|(key, want)| {
                    vec![Cond::needs(format!(
                        "`{key}` is no longer {}",
                        value_words(want)
                    ))]
                })
                .collect(),
        ),
        Guard::CalledOk(tool) => vec![Cond::fact(succeeded_words(
            tool,
            &|t| facts.may_name(t),
            true,
        ))],
        Guard::Done(step) => vec![Cond::fact(format!("step `{step}` is already done"))],
        Guard::All(parts) => either(parts.iter().map(|p| negated(p, facts)).collect()),
        Guard::Any(parts) => parts.iter().flat_map(|p| negated(p, facts)).collect(),
        Guard::Not(inner) => unmet(inner, facts),
        Guard::Above(above) => vec![Cond::needs(above_words(above, true))],
        Guard::StartsWith(test) => vec![Cond::needs(starts_with_words(test, true))],
        Guard::Claim(pairs) => vec![Cond::needs(claim_words(pairs, true))],
        Guard::Seen(label) => vec![Cond::fact(seen_words(*label, true))],
        Guard::Tainted(arg) => vec![Cond::needs(tainted_words(arg, true))],
    }
}

/// One condition saying "any of these": each alternative's conditions joined by
/// "and", the alternatives by "or". Permanent only if every alternative is.
fn either(alternatives: Vec<Vec<Cond>>) -> Vec<Cond> {
    let alternatives: Vec<Vec<Cond>> = alternatives.into_iter().filter(|a| !a.is_empty()).collect();
    match alternatives.len() {
        0 => Vec::new(),
        1 => alternatives.into_iter().next().unwrap_or_default(),
        _ => {
            let permanent = alternatives.iter().all(|a| a.iter().any(|c| c.permanent));
            let text = alternatives
                .iter()
                .map(|a| join_and(a.iter().map(|c| c.text.as_str())))
                .collect::<Vec<_>>()
                .join(" or ");
            vec![Cond {
                text: format!("either {text}"),
                permanent,
            }]
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn join_and<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.into_iter().collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What the guard says, in words.
pub(crate) fn describe(guard: &Guard) -> String {
    describe_for(guard, &|_| true)
}

/// [`describe`] for a reader who may know only of the tools `may_name` admits.
pub(crate) fn describe_for(guard: &Guard, may_name: &dyn Fn(&str) -> bool) -> String {
    let describe = |guard: &Guard| describe_for(guard, may_name);
    let describe_part = |guard: &Guard| describe_part(guard, may_name);
    match guard {
        Guard::Always => "always".into(),
        Guard::IsTrue(key) => format!("`{key}` is true"),
        Guard::IsSet(key) => format!("`{key}` is set"),
        Guard::Eq(pairs) => join_and(
            pairs
                .iter()
                .map(|(k, v)| format!("`{k}` is {}", value_words(v)))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        ),
        Guard::CalledOk(tool) => succeeded_words(tool, may_name, false),
        Guard::Done(step) => format!("step `{step}` is done"),
        Guard::All(parts) => {
            let words: Vec<String> = parts.iter().map(describe_part).collect();
            join_and(words.iter().map(String::as_str))
        }
        Guard::Any(parts) => {
            let words: Vec<String> = parts.iter().map(describe_part).collect();
            format!("either {}", words.join(" or "))
        }
        Guard::Not(inner) => match inner.as_ref() {
            Guard::Always => "never".into(),
            Guard::IsTrue(key) => format!("`{key}` is not true"),
            Guard::IsSet(key) => format!("`{key}` is not set"),
            Guard::CalledOk(tool) if may_name(tool) => format!("{tool} has not succeeded"),
            Guard::CalledOk(_) => format!("{HIDDEN_STEP} has not been done"),
            Guard::Done(step) => format!("step `{step}` is not done"),
            Guard::Above(above) => above_words(above, true),
            Guard::StartsWith(test) => starts_with_words(test, true),
            Guard::Claim(pairs) => claim_words(pairs, true),
            Guard::Seen(label) => seen_words(*label, true),
            Guard::Tainted(arg) => tainted_words(arg, true),
            other => format!("not ({})", describe(other)),
        },
        Guard::Above(above) => above_words(above, false),
        Guard::StartsWith(test) => starts_with_words(test, false),
        Guard::Claim(pairs) => claim_words(pairs, false),
        Guard::Seen(label) => seen_words(*label, false),
        Guard::Tainted(arg) => tainted_words(arg, false),
    }
}

/// `the conversation has read untrusted content`, or has not.
fn seen_words(label: crate::SeenLabel, negated: bool) -> String {
    let what = match label {
        crate::SeenLabel::Untrusted => "untrusted content",
        crate::SeenLabel::Private => "private data",
    };
    if negated {
        format!("the conversation has not read {what}")
    } else {
        format!("the conversation has read {what}")
    }
}

/// `` `recipient` carries text from an untrusted result ``, or does not.
fn tainted_words(arg: &str, negated: bool) -> String {
    let what = if arg == "*" {
        "an argument".to_owned()
    } else {
        format!("`{arg}`")
    };
    let verb = if negated { "carries no" } else { "carries" };
    format!("{what} {verb} text from an untrusted result")
}

fn starts_with_words(test: &StartsWith, negated: bool) -> String {
    let relation = if negated {
        "does not start with"
    } else {
        "starts with"
    };
    format!("`{}` {relation} `{}`", test.arg, test.value)
}

fn claim_words(pairs: &indexmap::IndexMap<String, String>, negated: bool) -> String {
    let words: Vec<String> = pairs
        .iter()
        .map(|(name, value)| format!("`{name}` is `{value}`"))
        .collect();
    let words = join_and(words.iter().map(String::as_str));
    if negated {
        format!("the caller's claims do not say {words}")
    } else {
        format!("the caller's claim {words}")
    }
}

/// A part of a compound guard, parenthesized when it is itself compound.
fn describe_part(guard: &Guard, may_name: &dyn Fn(&str) -> bool) -> String {
    match guard {
        Guard::All(parts) | Guard::Any(parts) if parts.len() > 1 => {
            format!("({})", describe_for(guard, may_name))
        }
        _ => describe_for(guard, may_name),
    }
}

fn above_words(above: &Above, negated: bool) -> String {
    let limit = match (&above.state, &above.value) {
        (_, Some(n)) => n.to_string(),
        (Some(key), None) => format!("`{key}`"),
        (None, None) => "its limit".into(),
    };
    let relation = if negated { "at most" } else { "above" };
    format!("`{}` is {relation} {limit}", above.arg)
}

/// The values an `above` compared, for a confirmation's reason: `amount_cents is 6499`.
pub(crate) fn compared_values(guard: &Guard, facts: &dyn Facts, out: &mut Vec<String>) {
    guard.for_each_leaf(&mut |leaf| match leaf {
        Guard::Above(above) => {
            if let Some(value) = facts.args().and_then(|a| a.get(&above.arg)) {
                out.push(format!("`{}` is {value}", above.arg));
            }
            if let (Some(key), None) = (&above.state, &above.value)
                && let Some(limit) = facts.state(key)
            {
                out.push(format!("`{key}` is {limit}"));
            }
        }
        Guard::StartsWith(test) => {
            if let Some(value) = facts.args().and_then(|a| a.get(&test.arg)) {
                let text = value.as_str();
                match (text.and_then(disguised_in_path), text.map(normalize_path)) {
                    (Some(why), _) => out.push(format!(
                        "`{}` is {value}, which holds {why}, so where it leads cannot be told",
                        test.arg
                    )),
                    (None, Some(Some(path))) if path != *value => {
                        out.push(format!("`{}` is {value}, read as `{path}`", test.arg))
                    }
                    (None, Some(None)) => out.push(format!(
                        "`{}` is {value}, which climbs above its start",
                        test.arg
                    )),
                    _ => out.push(format!("`{}` is {value}", test.arg)),
                }
            }
        }
        Guard::Claim(pairs) => {
            if let Some(claims) = facts.claims() {
                for name in pairs.keys() {
                    match claims.get(name) {
                        Some(value) => out.push(format!("the claim `{name}` is {value}")),
                        None => out.push(format!("the caller has no claim `{name}`")),
                    }
                }
            }
        }
        _ => {}
    });
}

/// A value in a sentence: `gold`, `5000`, `true`.
pub(crate) fn value_words(value: &Value) -> String {
    match value {
        Value::String(s) => format!("`{s}`"),
        other => format!("`{other}`"),
    }
}

/// JSON equality where numbers compare by value (`5000` equals `5000.0`).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| values_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A guard as it is written in YAML flow style: `called_ok: lookup_order`,
/// `all: [is_true: verified, not: {done: refund}]`.
impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Guard::Always => f.write_str("always"),
            Guard::IsTrue(key) => write!(f, "is_true: {key}"),
            Guard::IsSet(key) => write!(f, "is_set: {key}"),
            Guard::Eq(pairs) => {
                let pairs: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                write!(f, "eq: {{{}}}", pairs.join(", "))
            }
            Guard::CalledOk(tool) => write!(f, "called_ok: {tool}"),
            Guard::Done(step) => write!(f, "done: {step}"),
            Guard::All(parts) | Guard::Any(parts) => {
                let name = if matches!(self, Guard::All(_)) {
                    "all"
                } else {
                    "any"
                };
                let parts: Vec<String> = parts.iter().map(|p| format!("{{{p}}}")).collect();
                write!(f, "{name}: [{}]", parts.join(", "))
            }
            Guard::Not(inner) => write!(f, "not: {{{inner}}}"),
            Guard::Above(above) => {
                write!(f, "above: {{arg: {}", above.arg)?;
                if let Some(key) = &above.state {
                    write!(f, ", state: {key}")?;
                }
                if let Some(n) = &above.value {
                    write!(f, ", value: {n}")?;
                }
                f.write_str("}")
            }
            Guard::StartsWith(test) => write!(
                f,
                "starts_with: {{arg: {}, value: {}}}",
                test.arg,
                Value::String(test.value.clone())
            ),
            Guard::Claim(pairs) => {
                let pairs: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", Value::String(v.clone())))
                    .collect();
                write!(f, "claim: {{{}}}", pairs.join(", "))
            }
            Guard::Seen(label) => write!(f, "seen: {label}"),
            Guard::Tainted(arg) => write!(f, "tainted: {}", Value::String(arg.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use serde_json::{Map, json};

    use super::*;

    /// Facts from plain collections; steps are done when listed.
    #[derive(Default)]
    struct Plain {
        state: Map<String, Value>,
        ok: BTreeSet<String>,
        done: BTreeMap<String, bool>,
        args: Option<Value>,
    }

    impl Facts for Plain {
        fn state(&self, key: &str) -> Option<&Value> {
            self.state.get(key)
        }
        fn succeeded(&self, tool: &str) -> bool {
            self.ok.contains(tool)
        }
        fn is_done(&self, step: &str) -> bool {
            self.done.get(step).copied().unwrap_or(false)
        }
        fn unmet_done(&self, step: &str) -> Vec<Cond> {
            if self.is_done(step) {
                Vec::new()
            } else {
                vec![Cond::needs(format!("step `{step}` is done"))]
            }
        }
        fn args(&self) -> Option<&Value> {
            self.args.as_ref()
        }
    }

    fn g(value: Value) -> Guard {
        serde_json::from_value(value).unwrap()
    }

    fn facts(state: Value) -> Plain {
        Plain {
            state: state.as_object().cloned().unwrap_or_default(),
            ..Plain::default()
        }
    }

    fn texts(conds: Vec<Cond>) -> Vec<String> {
        conds.into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn always_holds() {
        assert_eq!(eval(&Guard::Always, &Plain::default()), Some(true));
        assert!(unmet(&Guard::Always, &Plain::default()).is_empty());
    }

    #[test]
    fn is_true_holds_only_for_the_boolean_true() {
        let guard = g(json!({"is_true": "verified"}));
        assert!(holds(&guard, &facts(json!({"verified": true}))));
        for other in [json!(false), json!("true"), json!(1), json!(null)] {
            assert!(
                !holds(&guard, &facts(json!({"verified": other}))),
                "{other}"
            );
        }
        assert!(
            !holds(&guard, &Plain::default()),
            "an unset key is not true"
        );
        assert_eq!(
            texts(unmet(&guard, &Plain::default())),
            ["`verified` is true"]
        );
    }

    #[test]
    fn is_set_holds_for_any_value_but_null() {
        let guard = g(json!({"is_set": "ticket"}));
        assert!(holds(&guard, &facts(json!({"ticket": "T-1"}))));
        assert!(holds(&guard, &facts(json!({"ticket": false}))));
        assert!(!holds(&guard, &facts(json!({"ticket": null}))));
        assert!(!holds(&guard, &Plain::default()));
        assert_eq!(texts(unmet(&guard, &Plain::default())), ["`ticket` is set"]);
    }

    #[test]
    fn eq_compares_every_pair_and_numbers_by_value() {
        let guard = g(json!({"eq": {"tier": "gold", "limit": 5000}}));
        assert!(holds(
            &guard,
            &facts(json!({"tier": "gold", "limit": 5000.0}))
        ));
        let half = facts(json!({"tier": "gold", "limit": 10}));
        assert!(!holds(&guard, &half));
        assert_eq!(texts(unmet(&guard, &half)), ["`limit` is `5000`"]);
        assert!(
            holds(&g(json!({"eq": {"gone": null}})), &Plain::default()),
            "unset reads as null"
        );
    }

    #[test]
    fn called_ok_reads_the_history() {
        let guard = g(json!({"called_ok": "lookup"}));
        let mut f = Plain::default();
        assert!(!holds(&guard, &f));
        assert_eq!(texts(unmet(&guard, &f)), ["lookup has succeeded"]);
        f.ok.insert("lookup".into());
        assert!(holds(&guard, &f));
    }

    #[test]
    fn done_reads_the_steps_and_explains_through_them() {
        let guard = g(json!({"done": "identify"}));
        let mut f = Plain::default();
        assert_eq!(texts(unmet(&guard, &f)), ["step `identify` is done"]);
        f.done.insert("identify".into(), true);
        assert!(holds(&guard, &f));
    }

    #[test]
    fn all_needs_every_part_and_names_only_the_missing_ones() {
        let guard = g(json!({"all": [{"called_ok": "a"}, {"called_ok": "b"}]}));
        let mut f = Plain::default();
        f.ok.insert("a".into());
        assert_eq!(texts(unmet(&guard, &f)), ["b has succeeded"]);
        f.ok.insert("b".into());
        assert!(holds(&guard, &f));
        assert!(holds(&g(json!({"all": []})), &f), "an empty all holds");
    }

    #[test]
    fn any_needs_one_part_and_offers_the_alternatives() {
        let guard =
            g(json!({"any": [{"called_ok": "a"}, {"all": [{"is_true": "x"}, {"is_set": "y"}]}]}));
        let f = Plain::default();
        assert_eq!(
            texts(unmet(&guard, &f)),
            ["either a has succeeded or `x` is true and `y` is set"]
        );
        assert!(holds(&guard, &facts(json!({"x": true, "y": 1}))));
        assert!(
            !holds(&g(json!({"any": []})), &f),
            "an empty any never holds"
        );
    }

    #[test]
    fn not_inverts_and_says_when_that_is_for_good() {
        let guard = g(json!({"not": {"called_ok": "refund"}}));
        let mut f = Plain::default();
        assert!(holds(&guard, &f));
        f.ok.insert("refund".into());
        let conds = unmet(&guard, &f);
        assert_eq!(conds, [Cond::fact("refund has already succeeded")]);
        let flag = g(json!({"not": {"is_true": "locked"}}));
        assert_eq!(
            texts(unmet(&flag, &facts(json!({"locked": true})))),
            ["`locked` is no longer true"]
        );
    }

    #[test]
    fn above_compares_an_argument_and_is_unknown_without_a_call() {
        let guard = g(json!({"above": {"arg": "amount", "state": "limit"}}));
        let mut f = facts(json!({"limit": 5000}));
        assert_eq!(eval(&guard, &f), None, "no call: unknown");
        assert_eq!(
            eval(
                &g(json!({"not": {"above": {"arg": "amount", "value": 1}}})),
                &f
            ),
            None
        );
        f.args = Some(json!({"amount": 6499}));
        assert_eq!(eval(&guard, &f), Some(true));
        f.args = Some(json!({"amount": 5000}));
        assert_eq!(eval(&guard, &f), Some(false), "equal is not above");
        f.args = Some(json!({"other": 1}));
        assert_eq!(
            eval(&guard, &f),
            Some(false),
            "an absent argument is above nothing"
        );
        let literal = g(json!({"above": {"arg": "amount", "value": 10}}));
        f.args = Some(json!({"amount": 11}));
        assert_eq!(eval(&literal, &f), Some(true));
        let mut values = Vec::new();
        f.args = Some(json!({"amount": 6499}));
        compared_values(&guard, &f, &mut values);
        assert_eq!(values, ["`amount` is 6499", "`limit` is 5000"]);
    }

    #[test]
    fn a_path_in_disguise_cannot_be_told_to_start_with_a_prefix() {
        let guard = g(json!({"starts_with": {"arg": "path", "value": "/srv/data/"}}));
        let mut f = facts(json!({}));
        for disguised in [
            "/srv/data/%2e%2e/%2e%2e/etc/passwd",
            "/srv/data/%2E%2E%2Fetc",
            "/srv/data/%252e%252e/etc",
            "/srv/data/..\u{2215}..\u{2215}etc",
            "/srv/data/..\u{2044}etc",
            "/srv/data/\u{ff0e}\u{ff0e}\u{ff0f}\u{ff0e}\u{ff0e}\u{ff0f}etc",
            "/srv/data/\u{2025}/etc",
            "/srv/data/\u{fe52}\u{fe52}/etc",
            "/srv/data/\u{ff05}2e\u{ff05}2e/etc",
            "/srv/data/..\u{ff3c}..\u{ff3c}etc",
        ] {
            f.args = Some(json!({"path": disguised}));
            assert_eq!(eval(&guard, &f), None, "{disguised}");
            let mut values = Vec::new();
            compared_values(&guard, &f, &mut values);
            assert!(
                values[0].contains("so where it leads cannot be told"),
                "{values:?}"
            );
        }
        for (plain, starts) in [
            ("/srv/data/reports/q1.txt", true),
            ("/srv/data/100%/caf\u{e9}.txt", true),
            ("/srv/data/%zz", true),
            ("/srv/data/\u{65e5}\u{672c}/a.txt", true),
            ("/srv/data/../../etc", false),
        ] {
            f.args = Some(json!({"path": plain}));
            assert_eq!(eval(&guard, &f), Some(starts), "{plain}");
        }
    }

    #[test]
    fn unknown_parts_keep_compounds_unknown_unless_decided() {
        let unknown = json!({"above": {"arg": "a", "value": 1}});
        let f = Plain::default();
        assert_eq!(
            eval(&g(json!({"all": [unknown.clone(), "always"]})), &f),
            None
        );
        assert_eq!(
            eval(&g(json!({"all": [unknown.clone(), {"is_true": "x"}]})), &f),
            Some(false)
        );
        assert_eq!(
            eval(&g(json!({"any": [unknown.clone(), "always"]})), &f),
            Some(true)
        );
        assert_eq!(
            eval(&g(json!({"any": [unknown, {"is_true": "x"}]})), &f),
            None
        );
    }

    #[test]
    fn guards_print_as_written_and_describe_in_words() {
        let guard =
            g(json!({"all": [{"is_true": "v"}, {"not": {"done": "s"}}, {"eq": {"k": "x"}}]}));
        assert_eq!(
            guard.to_string(),
            r#"all: [{is_true: v}, {not: {done: s}}, {eq: {k: "x"}}]"#
        );
        assert_eq!(
            describe(&guard),
            "`v` is true, step `s` is not done and `k` is `x`"
        );
        assert_eq!(
            describe(&g(json!({"any": ["always", {"called_ok": "t"}]}))),
            "either always or t has succeeded"
        );
    }
}
