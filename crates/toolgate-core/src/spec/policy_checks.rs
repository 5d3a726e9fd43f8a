//! Checks of the `policy:` rules' `when:` conditions for `toolgate check`: every
//! argument a condition tests is one each matching tool takes (and of a type the
//! test can read), every state key is declared or written, and nothing reads
//! what a rule cannot see (a flow's steps). Every problem is located in the text.

use serde_json::Value;

use super::diagnostic::{Diagnostic, did_you_mean};
use super::document::{Document, pointer_segment};
use super::model::{SpecFile, ToolSpec};
use crate::flow::Guard;
use crate::scope_matches;

/// Every problem in the `when:` conditions of `spec.policy.rules`.
pub(super) fn check_policy(doc: &Document, spec: &SpecFile) -> Vec<Diagnostic> {
    let mut checks = Checks {
        doc,
        spec,
        out: Vec::new(),
    };
    for (i, rule) in spec.policy.rules.iter().enumerate() {
        if !spec.policy.mode.is_enforce() && !rule.mode.is_enforce() {
            let d = Diagnostic::warning(
                format!("/policy/rules/{i}/mode"),
                "this shadow rule is in a policy in shadow mode, which observes with its enforced rules only: it is never evaluated",
            )
            .with_help("remove `mode: shadow` from the rule; the whole policy observes already");
            checks.push(d);
        }
        let Some(when) = &rule.when else { continue };
        let tools: Vec<&ToolSpec> = spec
            .tools
            .iter()
            .filter(|t| scope_matches(&rule.tools, &t.name))
            .collect();
        let rule = Rule {
            pattern: &rule.tools,
            tools,
        };
        checks.guard(when, &format!("/policy/rules/{i}/when"), &rule);
    }
    checks.out
}

struct Checks<'a> {
    doc: &'a Document,
    spec: &'a SpecFile,
    out: Vec<Diagnostic>,
}

/// The rule whose condition is checked: its pattern and the declared tools it matches.
struct Rule<'a> {
    pattern: &'a str,
    tools: Vec<&'a ToolSpec>,
}

/// The kind of value a test reads from an argument.
#[derive(Clone, Copy)]
enum Reads {
    Number,
    Text,
    /// Any value (`tainted` reads every string in it).
    Any,
}

impl Checks<'_> {
    fn push(&mut self, diagnostic: Diagnostic) {
        let span = self.doc.value_span(&diagnostic.path);
        self.out.push(diagnostic.with_span(span));
    }

    fn error(&mut self, path: &str, message: String, help: String) {
        self.push(Diagnostic::error(path, message).with_help(help));
    }

    fn guard(&mut self, guard: &Guard, path: &str, rule: &Rule<'_>) {
        match guard {
            Guard::Always | Guard::Claim(_) | Guard::Seen(_) => {}
            Guard::Tainted(arg) if arg == "*" => {}
            Guard::Tainted(arg) => {
                self.argument(arg, &format!("{path}/tainted"), Reads::Any, rule)
            }
            Guard::IsTrue(key) => self.state_key(key, &format!("{path}/is_true")),
            Guard::IsSet(key) => self.state_key(key, &format!("{path}/is_set")),
            Guard::Eq(pairs) => {
                for key in pairs.keys() {
                    self.state_key(key, &format!("{path}/eq/{}", pointer_segment(key)));
                }
            }
            Guard::CalledOk(tool) => {
                if !self.spec.tools.iter().any(|t| t.name == *tool) {
                    let names = self.spec.tools.iter().map(|t| t.name.as_str());
                    let help = did_you_mean(tool, names)
                        .unwrap_or_else(|| "name a tool declared under `tools:`".into());
                    self.error(
                        &format!("{path}/called_ok"),
                        format!("`{tool}` is not a tool this file declares"),
                        help,
                    );
                }
            }
            Guard::Done(step) => self.error(
                &format!("{path}/done"),
                format!("a policy rule cannot read the flow's step `{step}`"),
                "test what the step's `done` tests (e.g. `called_ok: TOOL`), or put the condition in the flow".into(),
            ),
            Guard::All(parts) | Guard::Any(parts) => {
                let key = if matches!(guard, Guard::All(_)) {
                    "all"
                } else {
                    "any"
                };
                for (i, part) in parts.iter().enumerate() {
                    self.guard(part, &format!("{path}/{key}/{i}"), rule);
                }
            }
            Guard::Not(inner) => self.guard(inner, &format!("{path}/not"), rule),
            Guard::Above(above) => {
                let at = format!("{path}/above");
                match (&above.state, &above.value) {
                    (Some(key), None) => self.state_key(key, &format!("{at}/state")),
                    (None, Some(_)) => {}
                    _ => self.error(
                        &at,
                        "`above` needs exactly one limit: `state: KEY` or `value: NUMBER`".into(),
                        "e.g. `above: {arg: amount_cents, value: 10000}`".into(),
                    ),
                }
                self.argument(&above.arg, &format!("{at}/arg"), Reads::Number, rule);
            }
            Guard::StartsWith(test) => {
                let at = format!("{path}/starts_with");
                self.argument(&test.arg, &format!("{at}/arg"), Reads::Text, rule);
                if test.value.starts_with('/') && !test.value.ends_with('/') {
                    let d = Diagnostic::warning(
                        format!("{at}/value"),
                        format!(
                            "`{}` is also a prefix of `{}x/…`: without a closing `/` it is not a directory",
                            test.value, test.value
                        ),
                    )
                    .with_help(format!("write `{}/` to mean the directory", test.value));
                    self.push(d);
                }
            }
        }
    }

    /// An argument every declared tool the rule matches must take.
    fn argument(&mut self, arg: &str, path: &str, reads: Reads, rule: &Rule<'_>) {
        for tool in &rule.tools {
            let schema = tool.input_schema();
            let properties = schema.get("properties").and_then(Value::as_object);
            let names: Vec<&str> = properties
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let matched_by = if rule.pattern == tool.name {
                String::new()
            } else {
                format!(" (the rule's `tools: {}` matches it)", rule.pattern)
            };
            let Some(declared) = properties.and_then(|p| p.get(arg)) else {
                let help = did_you_mean(arg, names.iter().copied()).unwrap_or_else(|| {
                    if names.is_empty() {
                        format!("`{}` declares no arguments", tool.name)
                    } else {
                        let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                        format!("its arguments are {}", list.join(", "))
                    }
                });
                self.error(
                    path,
                    format!("`{arg}` is not an argument of `{}`{matched_by}", tool.name),
                    help,
                );
                continue;
            };
            if matches!(reads, Reads::Any) {
                continue;
            }
            let types: Vec<&str> = match declared.get("type") {
                Some(Value::String(t)) => vec![t.as_str()],
                Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            let (readable, test, kind): (&[&str], &str, &str) = match reads {
                Reads::Number => (&["number", "integer"], "above", "a number"),
                Reads::Text => (&["string"], "starts_with", "a string"),
                Reads::Any => continue,
            };
            if !types.iter().any(|t| readable.contains(t)) {
                self.error(
                    path,
                    format!(
                        "`{test}` reads {kind}, but `{arg}` of `{}` is {}{matched_by}",
                        tool.name,
                        types.join(" or ")
                    ),
                    format!("test an argument that is {kind}"),
                );
            } else if matches!(reads, Reads::Number)
                && let others = types
                    .iter()
                    .filter(|t| !readable.contains(t))
                    .copied()
                    .collect::<Vec<_>>()
                && !others.is_empty()
            {
                let d = Diagnostic::warning(
                    path,
                    format!(
                        "`{arg}` of `{}` may also be {}{matched_by}: `above` compares a numeric string as a number, and reads any other value as the rule's stricter side (an `ask` or `deny` applies, an `allow` does not)",
                        tool.name,
                        others.join(" or ")
                    ),
                )
                .with_help(format!(
                    "narrow `{arg}` to `type: integer` or `number` if the tool takes only numbers"
                ));
                self.push(d);
            }
        }
    }

    fn state_key(&mut self, key: &str, path: &str) {
        let written =
            self.spec.tools.iter().any(|t| {
                t.set_state.contains_key(key) || t.save_response_as.as_deref() == Some(key)
            });
        if self.spec.state.contains_key(key) || written {
            return;
        }
        let help = did_you_mean(key, self.spec.state.keys().map(String::as_str))
            .unwrap_or_else(|| format!("declare `{key}` under `state:`"));
        self.error(
            path,
            format!("this condition reads state key `{key}`, which is not declared under `state:` and no tool writes"),
            help,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::check;

    fn report(text: &str) -> String {
        check(text)
            .diagnostics
            .iter()
            .map(|d| {
                let line = d.span.map(|_| "at").unwrap_or("nowhere");
                format!(
                    "{:?} {} [{line}]: {}\n  help: {}",
                    d.severity,
                    d.path,
                    d.message,
                    d.help.as_deref().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    const SPEC: &str = r#"
tools:
  - name: billing.refund
    description: Refund an order.
    effect: write
    parameters:
      type: object
      properties:
        order_id: {type: string}
        amount_cents: {type: integer}
  - name: billing.charge
    description: Charge a card.
    effect: write
    parameters:
      type: object
      properties:
        amount: {type: integer}
  - name: fs.write_file
    description: Write a file.
    effect: write
    parameters:
      type: object
      properties:
        path: {type: string}
        content: {type: string}
"#;

    #[test]
    fn a_condition_on_an_argument_every_matching_tool_has_passes() {
        let text = format!(
            "{SPEC}policy:\n  rules:\n    - tools: billing.refund\n      when: {{above: {{arg: amount_cents, value: 10000}}}}\n      decision: ask\n    - tools: fs.write_file\n      when: {{not: {{starts_with: {{arg: path, value: /srv/data/}}}}}}\n      decision: deny\n"
        );
        assert_eq!(report(&text), "");
    }

    #[test]
    fn a_shadow_rule_in_a_policy_in_shadow_mode_is_a_warning() {
        let text = "policy:\n  mode: shadow\n  rules:\n    - {tools: a, decision: deny, mode: shadow}\n    - {tools: a, decision: allow}\n";
        let spec: SpecFile = serde_saphyr::from_str(text).unwrap();
        let doc = Document::parse(text).unwrap();
        let found: Vec<String> = check_policy(&doc, &spec)
            .iter()
            .map(|d| format!("{} {}", d.path, d.message))
            .collect();
        assert_eq!(
            found,
            [
                "/policy/rules/0/mode this shadow rule is in a policy in shadow mode, which observes with its enforced rules only: it is never evaluated"
            ]
        );
    }

    #[test]
    fn an_argument_a_matching_tool_does_not_have_is_an_error_where_it_is_written() {
        let text = format!(
            "{SPEC}policy:\n  rules:\n    - tools: billing.*\n      when: {{above: {{arg: amount_cents, value: 10000}}}}\n      decision: ask\n    - tools: fs.write_file\n      when: {{all: [{{starts_with: {{arg: content, value: /srv}}}}, {{above: {{arg: path, value: 1}}}}, {{done: verify}}]}}\n      decision: deny\n"
        );
        insta::assert_snapshot!(report(&text));
    }

    #[test]
    fn an_amount_whose_schema_admits_strings_is_a_warning_that_says_how_it_is_read() {
        let text = SPEC.replace(
            "amount_cents: {type: integer}",
            "amount_cents: {type: [integer, string]}",
        ) + "policy:\n  rules:\n    - tools: billing.refund\n      when: {above: {arg: amount_cents, value: 10000}}\n      decision: ask\n";
        assert_eq!(
            report(&text),
            "Warning /policy/rules/0/when/above/arg [at]: `amount_cents` of `billing.refund` may also be string: `above` compares a numeric string as a number, and reads any other value as the rule's stricter side (an `ask` or `deny` applies, an `allow` does not)\n  help: narrow `amount_cents` to `type: integer` or `number` if the tool takes only numbers"
        );
    }
}
