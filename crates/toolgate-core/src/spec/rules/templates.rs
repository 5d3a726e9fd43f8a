//! The spec rules about state and templates: the keys a tool writes, the
//! `{args.*}` and `{state.*}` placeholders its response, `set_state` and HTTP
//! binding read, and the declared state defaults against their types.

use serde_json::Value;

use super::{Rules, violations};
use crate::spec::diagnostic::{Diagnostic, Span, did_you_mean};
use crate::spec::document::pointer_segment;
use crate::spec::model::ToolSpec;
use crate::spec::structure::{article, describe_typed};
use crate::spec::template::{Scope, placeholders, strings_in};

impl Rules<'_> {
    pub(super) fn state_writes(&mut self, at: &str, tool: &ToolSpec) {
        if !self.state_sound {
            return;
        }
        let declared: Vec<&str> = self.spec.state.keys().map(String::as_str).collect();
        // Where each written key stands: a `set_state` key, or `save_response_as`'s value.
        let mut written: Vec<(String, Option<Span>, &str)> = tool
            .set_state
            .keys()
            .map(|k| {
                let path = format!("{at}/set_state/{}", pointer_segment(k));
                (path.clone(), self.doc.key_span(&path), k.as_str())
            })
            .collect();
        if let Some(key) = &tool.save_response_as {
            let path = format!("{at}/save_response_as");
            written.push((path.clone(), self.doc.value_span(&path), key.as_str()));
        }
        for (path, span, key) in written {
            if self.spec.state.contains_key(key) {
                continue;
            }
            let mut d = Diagnostic::warning(
                &path,
                format!("state key `{key}` is not declared under `state:`"),
            );
            d.help = Some(match did_you_mean(key, declared.iter().copied()) {
                Some(hint) => hint,
                None => format!(
                    "declare it under `state:`, e.g. `{key}: {{type: string, description: ...}}`"
                ),
            });
            self.out.push(d.with_span(span));
        }
    }

    pub(super) fn placeholders(&mut self, at: &str, tool: &ToolSpec) {
        let args: Option<Vec<&str>> = tool.parameters.as_ref().map(|p| {
            p.get("properties")
                .and_then(Value::as_object)
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default()
        });
        // Every templated string, by the pointer of the string itself.
        let mut strings: Vec<(String, &str)> = Vec::new();
        if let Some(response) = &tool.response {
            strings_in(response, format!("{at}/response"), &mut strings);
        }
        for (key, value) in &tool.set_state {
            strings_in(
                value,
                format!("{at}/set_state/{}", pointer_segment(key)),
                &mut strings,
            );
        }
        if let Some(http) = &tool.http {
            strings.push((format!("{at}/http/url"), http.url.as_str()));
            for (section, map) in [("headers", &http.headers), ("cookies", &http.cookies)] {
                for (key, value) in map {
                    strings.push((
                        format!("{at}/http/{section}/{}", pointer_segment(key)),
                        value.as_str(),
                    ));
                }
            }
            for (key, value) in &http.query {
                let path = format!("{at}/http/query/{}", pointer_segment(key));
                strings.push(match value {
                    crate::spec::QueryValue::Template(t) => (path, t.as_str()),
                    crate::spec::QueryValue::Styled(s) => {
                        (format!("{path}/value"), s.value.as_str())
                    }
                });
            }
            if let Some(body) = &http.body {
                strings_in(body, format!("{at}/http/body"), &mut strings);
            }
        }
        for (path, text) in strings {
            for p in placeholders(text) {
                let span = self.placeholder_span(&path, &text[p.range.clone()]);
                let name = p.name();
                match p.scope {
                    Scope::Args => {
                        let known = args.clone().unwrap_or_default();
                        if !known.contains(&name) {
                            let help =
                                did_you_mean(name, known.iter().copied()).unwrap_or_else(|| {
                                    match &args {
                                        None => "this tool declares no `parameters`".into(),
                                        Some(k) if k.is_empty() => {
                                            "this tool's `parameters` declare no properties".into()
                                        }
                                        Some(k) => format!(
                                            "its arguments are {}",
                                            k.iter()
                                                .map(|a| format!("`{a}`"))
                                                .collect::<Vec<_>>()
                                                .join(", ")
                                        ),
                                    }
                                });
                            self.error_at(
                                &path,
                                span,
                                match tool.name.as_str() {
                                    // A name cut for a structural problem.
                                    "" => {
                                        format!("`{{args.{name}}}` names no argument of this tool")
                                    }
                                    tool => {
                                        format!("`{{args.{name}}}` names no argument of `{tool}`")
                                    }
                                },
                                Some(help),
                            );
                        }
                    }
                    Scope::State => {
                        if self.state_sound && !self.spec.state.contains_key(name) {
                            let help =
                                did_you_mean(name, self.spec.state.keys().map(String::as_str))
                                    .unwrap_or_else(|| format!("declare `{name}` under `state:`"));
                            self.error_at(
                                &path,
                                span,
                                format!("`{{state.{name}}}` names no declared state key"),
                                Some(help),
                            );
                        }
                    }
                }
            }
        }
    }

    /// The placeholder's own text inside the string at `path`, or the whole string.
    pub(super) fn placeholder_span(&self, path: &str, placeholder: &str) -> Option<Span> {
        let whole = self.doc.value_span(path)?;
        let offset = self
            .doc
            .text_of(whole)
            .and_then(|source| source.find(placeholder))
            .map(|at| whole.offset + at);
        Some(match offset {
            Some(offset) => Span {
                offset,
                len: placeholder.len(),
            },
            None => whole,
        })
    }

    pub(super) fn state_defaults(&mut self) {
        for (key, declared) in &self.spec.state {
            let (Some(kind), Some(default)) = (declared.kind, &declared.default) else {
                continue;
            };
            let schema = serde_json::json!({ "type": kind });
            if !violations(&schema, default).is_empty() {
                let kind_name = schema["type"].as_str().unwrap_or("value");
                self.error(
                    &format!("/state/{}/default", pointer_segment(key)),
                    format!(
                        "the default of `{key}` is {}, but its `type` is `{kind_name}`",
                        describe_typed(default)
                    ),
                    Some(format!(
                        "make the default {}, or change `type`",
                        article(kind_name)
                    )),
                );
            }
        }
    }
}
