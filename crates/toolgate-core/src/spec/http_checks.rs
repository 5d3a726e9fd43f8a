//! What `check` says about an `http:` binding's path styles and basic
//! authentication: a `path:` entry must style a placeholder of the URL's path, and
//! `basic_auth` reads its values from the environment, not from arguments, and is
//! the request's only `Authorization`.

use super::diagnostic::Diagnostic;
use super::document::{Document, pointer_segment};
use super::mcp_servers::env_references;
use super::model::HttpBinding;
use super::template::{Scope, placeholders};

/// Every problem of this kind in the binding at `at` (`/tools/N/http`).
pub(super) fn check_http_binding(doc: &Document, at: &str, http: &HttpBinding) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut push = |d: Diagnostic, key: bool| {
        let span = if key {
            doc.key_span(&d.path)
        } else {
            doc.value_span(&d.path)
        };
        out.push(d.with_span(span));
    };
    let path_part = http
        .url
        .split_once("://")
        .map_or(http.url.as_str(), |(_, rest)| rest);
    let path_part = path_part.split(['?', '#']).next().unwrap_or_default();
    let in_path: Vec<String> = placeholders(path_part)
        .into_iter()
        .filter(|p| p.scope == Scope::Args)
        .map(|p| p.path.join("."))
        .collect();
    for key in http.path.keys() {
        if !in_path.contains(key) {
            let help = match in_path.as_slice() {
                [] => {
                    "the URL's path has no `{args.NAME}` placeholder; remove the entry".to_owned()
                }
                names => format!(
                    "its path reads {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            push(
                Diagnostic::error(
                    format!("{at}/path/{}", pointer_segment(key)),
                    format!(
                        "`path: {key}` styles `{{args.{key}}}`, which the URL's path does not hold"
                    ),
                )
                .with_help(help),
                true,
            );
        }
    }
    let Some(basic) = &http.basic_auth else {
        return out;
    };
    for (part, value) in [("user", &basic.user), ("password", &basic.password)] {
        let path = format!("{at}/basic_auth/{part}");
        if !placeholders(value).is_empty() {
            push(
                Diagnostic::error(
                    &path,
                    format!("the basic authentication {part} cannot read a placeholder"),
                )
                .with_help(format!(
                    "read it from the environment: `{part}: \"${{env.NAME}}\"`; arguments and state never fill credentials"
                )),
                false,
            );
        } else if part == "password" && !value.is_empty() && env_references(value).is_empty() {
            push(
                Diagnostic::warning(&path, "the basic authentication password is written into the spec file")
                    .with_help("keep it in an environment variable: `password: \"${env.NAME}\"` (it is then masked wherever the request shows)"),
                false,
            );
        }
    }
    if let Some(name) = http
        .headers
        .keys()
        .find(|name| name.eq_ignore_ascii_case("authorization"))
    {
        push(
            Diagnostic::error(
                format!("{at}/headers/{}", pointer_segment(name)),
                "an `Authorization` header and `basic_auth` both set the request's credentials",
            )
            .with_help("remove one of them; `basic_auth` sends `Authorization: Basic …`"),
            true,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::spec::check;

    fn messages(http: &str) -> Vec<String> {
        let text = format!(
            "tools:\n  - name: t\n    description: T.\n    effect: read\n    parameters: {{type: object, properties: {{id: {{type: string}}, q: {{type: string}}}}}}\n    http:\n{http}"
        );
        check(&text)
            .diagnostics
            .iter()
            .map(|d| format!("{} {}", d.path, d.message))
            .collect()
    }

    #[test]
    fn a_path_style_must_name_a_placeholder_of_the_path() {
        assert_eq!(
            messages(
                "      url: https://h.example/u/{args.id}?q={args.q}\n      path: {id: {style: label}}\n"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(
                "      url: https://h.example/u/{args.id}?q={args.q}\n      path: {q: {style: matrix}}\n"
            ),
            [
                "/tools/0/http/path/q `path: q` styles `{args.q}`, which the URL's path does not hold"
            ]
        );
    }

    #[test]
    fn basic_credentials_come_from_the_environment_and_alone() {
        assert_eq!(
            messages(
                "      url: https://h.example/u\n      basic_auth: {user: api, password: \"${env.P}\"}\n"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(
                "      url: https://h.example/u\n      headers: {Authorization: \"Bearer ${env.T}\"}\n      basic_auth: {user: \"{args.id}\", password: hunter22}\n"
            ),
            [
                "/tools/0/http/headers/Authorization an `Authorization` header and `basic_auth` both set the request's credentials",
                "/tools/0/http/basic_auth/user the basic authentication user cannot read a placeholder",
                "/tools/0/http/basic_auth/password the basic authentication password is written into the spec file",
            ]
        );
    }
}
