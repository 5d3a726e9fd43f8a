//! A binding's URL template filled with arguments and state.
//!
//! The scheme, host and port come from the spec file only. A placeholder fills at
//! most one path segment or one query value: everything but the unreserved
//! characters (`A-Z a-z 0-9 - . _ ~`) is percent-encoded, so `/`, `?`, `#`, `@`, `:`,
//! `%` and `&` in an argument stay inside it, and a segment that would read as `.` or
//! `..` is refused rather than sent (URL parsers remove dot segments, which would let
//! an argument climb the path).
//!
//! `${env.NAME}` written in the spec file's path or query is read from the
//! environment and encoded the same way; never in the scheme, host or port, and
//! never from text an argument supplies (arguments are filled between references).

use indexmap::IndexMap;
use serde_json::{Map, Value};
use toolgate_core::spec::template::{Placeholder, Scope, placeholders};
use toolgate_core::spec::{QueryStyle, QueryValue, StyledPath, env_references};
use url::Url;

use super::encode::{as_text, encode_allowing_reserved, encode_component};
use super::path_style::styled_path;

/// Why a URL could not be built. `Input` is the model's to fix; `Spec` and `Env`
/// the operator's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum UrlProblem {
    Input(String),
    Spec(String),
    /// An environment variable the URL reads is not set.
    Env(String),
}

/// Reads one environment variable for `${env.NAME}`: its value, or `None` when it
/// is not set. Every part of a request (URL, headers, body, basic auth) reads the
/// environment through it.
pub(super) type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// An [`EnvLookup`] borrowed for one fill.
type Env<'a> = &'a EnvLookup;

/// The value a placeholder reads; `Null` when it is absent.
pub(crate) fn lookup(p: &Placeholder, args: &Value, state: &Map<String, Value>) -> Value {
    let root = match p.scope {
        Scope::Args => args.get(p.name()),
        Scope::State => state.get(p.name()),
    };
    p.path[1..]
        .iter()
        .fold(root, |v, key| v.and_then(|v| v.get(key)))
        .cloned()
        .unwrap_or(Value::Null)
}

/// `s` with each placeholder replaced by `encode` of its text; a list is its items'
/// texts, each encoded, joined by `,`, and an object its keys and values the same
/// way (`k,v,k,v`: OpenAPI's `simple` style for paths and headers).
pub(crate) fn fill(
    s: &str,
    args: &Value,
    state: &Map<String, Value>,
    encode: impl Fn(&str) -> String,
) -> String {
    fill_each(s, args, state, &|_, value| simple(value, &encode))
}

/// A value in the `simple` style, unexploded, each part encoded.
fn simple(value: Value, encode: &impl Fn(&str) -> String) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| encode(&as_text(v))).collect();
            items.join(",")
        }
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .flat_map(|(k, v)| [encode(k), encode(&as_text(v))])
                .collect();
            members.join(",")
        }
        value => encode(&as_text(&value)),
    }
}

/// A value in the `simple` style, exploded: an object's members as `k=v`, each
/// part encoded; anything else as unexploded.
fn simple_exploded(value: Value, encode: &impl Fn(&str) -> String) -> String {
    match value {
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}={}", encode(k), encode(&as_text(v))))
                .collect();
            members.join(",")
        }
        value => simple(value, encode),
    }
}

/// How one placeholder's value is written into a template.
type Render<'r> = &'r dyn Fn(&Placeholder, Value) -> String;

/// `s` with each placeholder replaced by what `render` makes of its value.
fn fill_each(s: &str, args: &Value, state: &Map<String, Value>, render: Render<'_>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for p in placeholders(s) {
        out.push_str(&s[last..p.range.start]);
        out.push_str(&render(&p, lookup(&p, args, state)));
        last = p.range.end;
    }
    out.push_str(&s[last..]);
    out
}

/// As [`fill`], with each `${env.NAME}` of the template replaced by `encode` of the
/// variable's value; the values read are pushed onto `read`. The first variable not
/// set is the error.
pub(crate) fn fill_env(
    s: &str,
    args: &Value,
    state: &Map<String, Value>,
    encode: impl Fn(&str) -> String,
    env: Env<'_>,
    read: &mut Vec<String>,
) -> Result<String, String> {
    fill_env_each(
        s,
        args,
        state,
        &|_, v| simple(v, &encode),
        &encode,
        env,
        read,
    )
}

/// As [`fill_env`], with an object written exploded (`k=v,k2=v2`) when `explode`
/// is set: a header's value in OpenAPI's `simple` style.
pub(crate) fn fill_env_simple(
    s: &str,
    args: &Value,
    state: &Map<String, Value>,
    explode: bool,
    env: Env<'_>,
    read: &mut Vec<String>,
) -> Result<String, String> {
    let encode = str::to_owned;
    let render = |_: &Placeholder, v: Value| match explode {
        true => simple_exploded(v, &encode),
        false => simple(v, &encode),
    };
    fill_env_each(s, args, state, &render, &encode, env, read)
}

/// As [`fill_each`], with `${env.NAME}` read as [`fill_env`] reads it.
fn fill_env_each(
    s: &str,
    args: &Value,
    state: &Map<String, Value>,
    render: Render<'_>,
    encode: &dyn Fn(&str) -> String,
    env: Env<'_>,
    read: &mut Vec<String>,
) -> Result<String, String> {
    let references = env_references(s);
    if references.is_empty() {
        return Ok(fill_each(s, args, state, render));
    }
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for reference in references {
        out.push_str(&fill_each(
            &s[at..reference.range.start],
            args,
            state,
            render,
        ));
        let value = env(&reference.name).ok_or_else(|| reference.name.clone())?;
        out.push_str(&encode(&value));
        read.push(value);
        at = reference.range.end;
    }
    out.push_str(&fill_each(&s[at..], args, state, render));
    Ok(out)
}

/// The value of a string that is exactly one placeholder.
fn lone(s: &str, args: &Value, state: &Map<String, Value>) -> Option<Value> {
    match placeholders(s).as_slice() {
        [only] if only.range == (0..s.len()) => Some(lookup(only, args, state)),
        _ => None,
    }
}

/// Whether a path segment is one a URL parser removes or climbs with.
fn is_dot_segment(segment: &str) -> bool {
    let s = segment.to_ascii_lowercase().replace("%2e", ".");
    s == "." || s == ".."
}

/// Splits an absolute URL template into `scheme://authority` and the rest.
fn split_origin(template: &str) -> Result<(&str, &str), UrlProblem> {
    let Some(scheme_end) = template.find("://") else {
        return Err(UrlProblem::Spec(format!(
            "the URL `{template}` is not absolute; start it with https:// or http://"
        )));
    };
    let after = scheme_end + 3;
    let end = template[after..]
        .find(['/', '?', '#'])
        .map_or(template.len(), |i| after + i);
    let origin = &template[..end];
    if !placeholders(origin).is_empty() {
        return Err(UrlProblem::Spec(format!(
            "the URL `{template}` takes its host from a placeholder; write the host literally"
        )));
    }
    if let Some(reference) = env_references(origin).first() {
        return Err(UrlProblem::Spec(format!(
            "the URL `{template}` takes its scheme, host or port from `${{env.{}}}`; write them literally (the environment may fill the path and query)",
            reference.name
        )));
    }
    Ok((origin, &template[end..]))
}

/// Builds the request URL: the template's origin, its path and query with
/// placeholders and `${env.NAME}` filled and encoded, then the `query:` entries. A
/// query entry whose value is one placeholder reading `null` is left out; one
/// reading a list or an object is written in the entry's style ([`styled`]). A
/// path placeholder reading an argument `path` names is written in its style
/// ([`styled_path`]). Values read from the environment are pushed onto `read`, to
/// be masked as secrets.
pub(super) fn build_url<'q>(
    template: &str,
    path_styles: &IndexMap<String, StyledPath>,
    query: impl IntoIterator<Item = (&'q String, &'q QueryValue)>,
    args: &Value,
    state: &Map<String, Value>,
    env: Env<'_>,
    read: &mut Vec<String>,
) -> Result<Url, UrlProblem> {
    let missing = |name: String| {
        UrlProblem::Env(format!(
            "the URL needs the environment variable `{name}`, which is not set; set it where toolgate runs"
        ))
    };
    let (origin, rest) = split_origin(template)?;
    let base = Url::parse(origin)
        .map_err(|e| UrlProblem::Spec(format!("the URL `{template}` is not valid: {e}")))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(UrlProblem::Spec(format!(
            "the URL scheme `{}` is not supported; use https:// or http://",
            base.scheme()
        )));
    }
    // Fragments are never sent.
    let rest = rest.split('#').next().unwrap_or_default();
    let (path, inline_query) = match rest.split_once('?') {
        Some((path, q)) => (path, Some(q)),
        None => (rest, None),
    };
    let render_path = |p: &Placeholder, value: Value| match p.scope {
        Scope::Args => match path_styles.get(&p.path.join(".")) {
            Some(s) => styled_path(
                s.name.as_deref().unwrap_or(p.name()),
                &value,
                s.style,
                s.explode,
            ),
            None => simple(value, &encode_component),
        },
        Scope::State => simple(value, &encode_component),
    };
    let mut out = String::from(origin);
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let filled = fill_env_each(
            segment,
            args,
            state,
            &render_path,
            &encode_component,
            env,
            read,
        )
        .map_err(missing)?;
        if filled != segment && is_dot_segment(&filled) {
            return Err(UrlProblem::Input(format!(
                "the URL path segment `{segment}` would be `{filled}`, which a URL cannot carry as data; pass a name other than `.` or `..`"
            )));
        }
        out.push_str(&filled);
    }
    let mut pairs: Vec<String> = Vec::new();
    let mut add = |key: &str, value: &str| {
        let mut pair = String::new();
        pair.push_str(key);
        pair.push('=');
        pair.push_str(value);
        pairs.push(pair);
    };
    if let Some(q) = inline_query {
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = fill(key, args, state, encode_component);
            match lone(value, args, state) {
                Some(Value::Null) => {}
                Some(Value::Array(items)) => items
                    .iter()
                    .for_each(|v| add(&key, &encode_component(&as_text(v)))),
                _ => add(
                    &key,
                    &fill_env(value, args, state, encode_component, env, read).map_err(missing)?,
                ),
            }
        }
    }
    for (key, value) in query {
        let template = value.template();
        let encode: fn(&str) -> String = if value.allow_reserved() {
            encode_allowing_reserved
        } else {
            encode_component
        };
        match lone(template, args, state) {
            Some(Value::Null) => {}
            Some(found @ (Value::Array(_) | Value::Object(_))) => {
                let (style, explode) = value.style();
                for (k, v) in styled(key, &found, style, explode, encode) {
                    add(&k, &v);
                }
            }
            _ => add(
                &encode_component(key),
                &fill_env(template, args, state, encode, env, read).map_err(missing)?,
            ),
        }
    }
    if !pairs.is_empty() {
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    let url = Url::parse(&out).map_err(|e| {
        UrlProblem::Spec(format!(
            "the URL `{template}` is not valid once filled: {e}"
        ))
    })?;
    // Belt and braces: the filled URL has the template's origin.
    if url.scheme() != base.scheme()
        || url.host() != base.host()
        || url.port_or_known_default() != base.port_or_known_default()
        || url.fragment().is_some()
    {
        return Err(UrlProblem::Input(
            "the arguments would change the URL's host; pass plain values".into(),
        ));
    }
    Ok(url)
}

/// The encoded pairs a list or an object makes under `key` in a query style:
/// form exploded repeats the key for each item (an object's members become pairs
/// of their own), unexploded joins them with `,` (`k,v,...` for an object);
/// `spaceDelimited` and `pipeDelimited` join a list with a space or `|`;
/// `deepObject` writes `key[member]=value`. `null` items are left out.
pub(crate) fn styled(
    key: &str,
    value: &Value,
    style: QueryStyle,
    explode: bool,
    encode: fn(&str) -> String,
) -> Vec<(String, String)> {
    let enc = |v: &Value| encode(&as_text(v));
    let ekey = encode_component(key);
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().filter(|v| !v.is_null()).map(enc).collect();
            let delimiter = match style {
                QueryStyle::SpaceDelimited => "%20",
                QueryStyle::PipeDelimited => "%7C",
                _ => ",",
            };
            if explode && matches!(style, QueryStyle::Form | QueryStyle::DeepObject) {
                items.into_iter().map(|v| (ekey.clone(), v)).collect()
            } else {
                vec![(ekey, items.join(delimiter))]
            }
        }
        Value::Object(members) => {
            let members = members.iter().filter(|(_, v)| !v.is_null());
            match (style, explode) {
                (QueryStyle::DeepObject, _) => members
                    .map(|(k, v)| (encode_component(&format!("{key}[{k}]")), enc(v)))
                    .collect(),
                (QueryStyle::Form, true) => members
                    .map(|(k, v)| (encode_component(k), enc(v)))
                    .collect(),
                _ => {
                    let joined: Vec<String> = members
                        .flat_map(|(k, v)| [encode_component(k), enc(v)])
                        .collect();
                    vec![(ekey, joined.join(","))]
                }
            }
        }
        other => vec![(ekey, enc(other))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const NO_QUERY: [(String, QueryValue); 0] = [];

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, QueryValue)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), QueryValue::from(*v)))
            .collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn build_url<'q>(
        template: &str,
        query: impl IntoIterator<Item = (&'q String, &'q QueryValue)>,
        args: &Value,
        state: &Map<String, Value>,
    ) -> Result<Url, UrlProblem> {
        super::build_url(
            template,
            &IndexMap::new(),
            query,
            args,
            state,
            &no_env,
            &mut Vec::new(),
        )
    }

    fn build(template: &str, args: Value) -> Result<Url, UrlProblem> {
        build_url(
            template,
            NO_QUERY.iter().map(|(k, v)| (k, v)),
            &args,
            &Map::new(),
        )
    }

    #[test]
    fn env_values_fill_the_path_and_query_encoded_and_never_the_host() {
        let env = |name: &str| match name {
            "TENANT" => Some("acme/eu".to_owned()),
            "KEY" => Some("k&1=2".to_owned()),
            _ => None,
        };
        let query = pairs(&[("api_key", "${env.KEY}"), ("q", "{args.q}")]);
        let mut read = Vec::new();
        let url = super::build_url(
            "https://h.example/t/${env.TENANT}/x?sig=${env.KEY}",
            &IndexMap::new(),
            query.iter().map(|(k, v)| (k, v)),
            &json!({"q": "${env.KEY}"}),
            &Map::new(),
            &env,
            &mut read,
        )
        .unwrap();
        assert_eq!(url.path(), "/t/acme%2Feu/x");
        assert_eq!(
            url.query(),
            Some("sig=k%261%3D2&api_key=k%261%3D2&q=%24%7Benv.KEY%7D"),
            "an argument spelling a reference is sent as it is"
        );
        assert_eq!(read, ["acme/eu", "k&1=2", "k&1=2"]);
        for template in ["https://${env.TENANT}/x", "https://h.example:${env.KEY}/x"] {
            let err = super::build_url(
                template,
                &IndexMap::new(),
                NO_QUERY.iter().map(|(k, v)| (k, v)),
                &json!({}),
                &Map::new(),
                &env,
                &mut Vec::new(),
            )
            .unwrap_err();
            assert!(
                matches!(&err, UrlProblem::Spec(m) if m.contains("write them literally")),
                "{template}: {err:?}"
            );
        }
        let err = super::build_url(
            "https://h.example/${env.ABSENT}",
            &IndexMap::new(),
            NO_QUERY.iter().map(|(k, v)| (k, v)),
            &json!({}),
            &Map::new(),
            &env,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(
            matches!(&err, UrlProblem::Env(m) if m.contains("`ABSENT`")),
            "{err:?}"
        );
    }

    #[test]
    fn arguments_fill_path_segments_and_query_values() {
        let query = pairs(&[("q", "{args.q}"), ("limit", "{args.limit}")]);
        let url = build_url(
            "https://api.example.com/users/{args.id}/orders?sort=new",
            query.iter().map(|(k, v)| (k, v)),
            &json!({"id": "A 1", "q": "a&b=c", "limit": 5}),
            &Map::new(),
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://api.example.com/users/A%201/orders?sort=new&q=a%26b%3Dc&limit=5"
        );
    }

    #[test]
    fn an_argument_cannot_leave_its_segment_or_change_the_host() {
        let url = build(
            "https://api.example.com/users/{args.id}",
            json!({"id": "@evil.example/../../admin?x=1#f"}),
        )
        .unwrap();
        assert_eq!(url.host_str(), Some("api.example.com"));
        assert_eq!(
            url.path(),
            "/users/%40evil.example%2F..%2F..%2Fadmin%3Fx%3D1%23f"
        );
        assert_eq!(url.query(), None);
        let url = build(
            "http://h.example:8080/{args.p}",
            json!({"p": ":9090@evil.example"}),
        )
        .unwrap();
        assert_eq!(
            (url.host_str(), url.port()),
            (Some("h.example"), Some(8080))
        );
        assert_eq!(url.path(), "/%3A9090%40evil.example");
        // Right after the authority, a placeholder would extend the port or host.
        assert!(matches!(
            build("http://h.example:8080{args.p}", json!({"p": "1"})),
            Err(UrlProblem::Spec(_))
        ));
    }

    #[test]
    fn dot_segments_from_arguments_are_refused() {
        for id in [".", "..", ".%2e"] {
            let r = build("https://h.example/a/{args.id}/b", json!({"id": id}));
            if id == ".%2e" {
                // `%` is encoded, so this is the harmless `.%252e`.
                assert_eq!(r.unwrap().path(), "/a/.%252e/b");
            } else {
                assert!(matches!(r, Err(UrlProblem::Input(_))), "{id}");
            }
        }
        // A literal dot segment written in the spec file is the author's.
        assert_eq!(
            build("https://h.example/a/../b", json!({})).unwrap().path(),
            "/b"
        );
    }

    #[test]
    fn null_query_values_are_left_out_and_lists_repeat_the_key() {
        let query = pairs(&[("tag", "{args.tags}"), ("page", "{args.page}")]);
        let url = build_url(
            "https://h.example/s",
            query.iter().map(|(k, v)| (k, v)),
            &json!({"tags": ["a b", "c"]}),
            &Map::new(),
        )
        .unwrap();
        assert_eq!(url.query(), Some("tag=a%20b&tag=c"));
    }

    #[test]
    fn a_host_from_a_placeholder_is_refused() {
        assert!(matches!(
            build("https://{args.host}/x", json!({"host": "evil.example"})),
            Err(UrlProblem::Spec(_))
        ));
        assert!(matches!(
            build("ftp://h.example/x", json!({})),
            Err(UrlProblem::Spec(_))
        ));
    }

    #[test]
    fn lists_and_objects_take_the_query_style_and_paths_join_lists_with_commas() {
        let styled = |style: &str, explode: bool| {
            let q: QueryValue = serde_json::from_value(
                json!({"value": "{args.v}", "style": style, "explode": explode}),
            )
            .unwrap();
            vec![("tag".to_owned(), q)]
        };
        let url = |query: Vec<(String, QueryValue)>, v: Value| {
            build_url(
                "https://h.example/s",
                query.iter().map(|(k, v)| (k, v)),
                &json!({"v": v}),
                &Map::new(),
            )
            .unwrap()
            .query()
            .map(str::to_owned)
        };
        let list = json!(["a b", "c,d", null]);
        assert_eq!(
            url(styled("form", true), list.clone()).as_deref(),
            Some("tag=a%20b&tag=c%2Cd")
        );
        assert_eq!(
            url(styled("form", false), list.clone()).as_deref(),
            Some("tag=a%20b,c%2Cd")
        );
        assert_eq!(
            url(styled("spaceDelimited", false), list.clone()).as_deref(),
            Some("tag=a%20b%20c%2Cd")
        );
        assert_eq!(
            url(styled("pipeDelimited", false), list).as_deref(),
            Some("tag=a%20b%7Cc%2Cd")
        );
        let object = json!({"x": 1, "y": "z"});
        assert_eq!(
            url(styled("form", true), object.clone()).as_deref(),
            Some("x=1&y=z")
        );
        assert_eq!(
            url(styled("form", false), object.clone()).as_deref(),
            Some("tag=x,1,y,z")
        );
        assert_eq!(
            url(styled("deepObject", true), object).as_deref(),
            Some("tag%5Bx%5D=1&tag%5By%5D=z")
        );
        assert_eq!(
            url(styled("form", false), json!("plain")).as_deref(),
            Some("tag=plain")
        );
        let path = build(
            "https://h.example/items/{args.ids}",
            json!({"ids": ["a/b", 2]}),
        )
        .unwrap();
        assert_eq!(path.path(), "/items/a%2Fb,2");
    }

    fn path_styles(entries: Value) -> IndexMap<String, StyledPath> {
        serde_json::from_value(entries).unwrap()
    }

    fn styled_build(
        template: &str,
        styles: &IndexMap<String, StyledPath>,
        args: Value,
    ) -> Result<Url, UrlProblem> {
        super::build_url(
            template,
            styles,
            NO_QUERY.iter().map(|(k, v)| (k, v)),
            &args,
            &Map::new(),
            &no_env,
            &mut Vec::new(),
        )
    }

    #[test]
    fn path_placeholders_take_the_style_the_binding_names() {
        let styles = path_styles(json!({
            "id": {"style": "label"},
            "ids": {"style": "matrix", "explode": true},
            "point": {"style": "matrix", "name": "pt"},
            "filter": {"explode": true},
        }));
        let url = styled_build(
            "https://h.example/users/{args.id}/orders{args.ids}/at{args.point}/f/{args.filter}/{args.plain}",
            &styles,
            json!({
                "id": 5,
                "ids": [3, 4],
                "point": {"x": 1, "y": "a/b"},
                "filter": {"k": "v", "n": 2},
                "plain": ["p", "q"],
            }),
        )
        .unwrap();
        assert_eq!(
            url.path(),
            "/users/.5/orders;ids=3;ids=4/at;pt=x,1,y,a%2Fb/f/k=v,n=2/p,q"
        );
        // `label` with the empty string is `.`, which a URL cannot carry as data.
        let err = styled_build(
            "https://h.example/users/{args.id}",
            &styles,
            json!({"id": ""}),
        );
        assert!(matches!(err, Err(UrlProblem::Input(_))), "{err:?}");
    }

    #[test]
    fn allow_reserved_lets_reserved_characters_through_a_query_value_but_not_delimiters() {
        let query: Vec<(String, QueryValue)> = vec![
            (
                "path".into(),
                serde_json::from_value(json!({"value": "{args.p}", "allow_reserved": true}))
                    .unwrap(),
            ),
            ("plain".into(), QueryValue::from("{args.p}")),
        ];
        let url = build_url(
            "https://h.example/s",
            query.iter().map(|(k, v)| (k, v)),
            &json!({"p": "a/b:c?d,e;f@g%41 h&i=j+k#l[m]%zz"}),
            &Map::new(),
        )
        .unwrap();
        assert_eq!(
            url.query(),
            Some(
                "path=a/b:c?d,e;f@g%41%20h%26i%3Dj%2Bk%23l%5Bm%5D%25zz&plain=a%2Fb%3Ac%3Fd%2Ce%3Bf%40g%2541%20h%26i%3Dj%2Bk%23l%5Bm%5D%25zz"
            )
        );
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        assert_eq!(pairs.len(), 2, "{pairs:?}");
    }

    /// A path parameter's value in a strategy's shapes: a string, a list of
    /// strings or an object of strings.
    fn path_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            "\\PC{0,16}".prop_map(Value::from),
            prop::collection::vec("\\PC{0,8}", 0..4).prop_map(|v| json!(v)),
            prop::collection::btree_map("\\PC{0,6}", "\\PC{0,6}", 0..4).prop_map(|m| json!(m)),
        ]
    }

    proptest! {
        #[test]
        fn a_styled_value_never_leaves_its_path_segment(
            value in path_value(),
            style in prop_oneof![Just("simple"), Just("label"), Just("matrix")],
            explode in any::<bool>(),
            name in "\\PC{1,8}",
        ) {
            let styles = path_styles(json!({"v": {"style": style, "explode": explode, "name": name}}));
            match styled_build("https://api.example.com/a/{args.v}/b", &styles, json!({"v": value})) {
                Ok(url) => {
                    prop_assert_eq!(url.host_str(), Some("api.example.com"));
                    prop_assert_eq!(url.port_or_known_default(), Some(443));
                    let segments: Vec<&str> = url.path_segments().unwrap().collect();
                    prop_assert_eq!(segments.len(), 3, "{}", url);
                    prop_assert_eq!(segments[0], "a");
                    prop_assert_eq!(segments[2], "b");
                    prop_assert_eq!(url.query(), None);
                    prop_assert_eq!(url.fragment(), None);
                }
                // Only a segment that would read as `.` or `..` is refused.
                Err(e) => prop_assert!(matches!(e, UrlProblem::Input(_)), "{:?}", e),
            }
        }
    }

    proptest! {
        #[test]
        fn any_argument_stays_in_its_segment(id in "\\PC{0,24}") {
            match build("https://api.example.com/users/{args.id}/profile", json!({"id": id})) {
                Ok(url) => {
                    prop_assert_eq!(url.host_str(), Some("api.example.com"));
                    prop_assert_eq!(url.port_or_known_default(), Some(443));
                    let segments: Vec<&str> = url.path_segments().unwrap().collect();
                    prop_assert_eq!(segments.len(), 3);
                    prop_assert_eq!(segments[0], "users");
                    prop_assert_eq!(segments[2], "profile");
                    prop_assert_eq!(url.query(), None);
                }
                Err(e) => prop_assert!(matches!(e, UrlProblem::Input(_)) && (id == "." || id == "..")),
            }
        }

        #[test]
        fn any_query_value_round_trips(value in "\\PC{0,24}") {
            let query = pairs(&[("q", "{args.v}")]);
            let url = build_url("https://h.example/s?fixed=1", query.iter().map(|(k, v)| (k, v)), &json!({"v": value}), &Map::new()).unwrap();
            let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
            prop_assert_eq!(pairs, vec![("fixed".to_owned(), "1".to_owned()), ("q".to_owned(), value)]);
        }
    }
}
