//! What `toolgate check` says of a spec's information-flow labels: which tools
//! are which leg of the lethal trifecta, and which callers' conversations could
//! ever hold all three.
//!
//! A caller's conversation can hold all three when the tools it may call (in
//! its scopes, under its ceiling, not denied it outright) include one whose
//! result is untrusted, one whose result is private, and one that changes the
//! world or sends data out. Tools of `mcp_servers:` are not listed until the
//! servers are reached; their results count as untrusted unless `outputs:`
//! says otherwise.

use serde::Serialize;
use serde_json::json;

use super::SpecFile;
use crate::{Decision, Principal, RuleOfTwo, ToolDescriptor, ToolSource, acts_on_world};

/// The tools of each leg.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Legs {
    /// Tools whose results are untrusted.
    pub untrusted: Vec<String>,
    /// Tools whose results are private.
    pub private: Vec<String>,
    /// Tools that change the world or send data out.
    pub acts: Vec<String>,
}

impl Legs {
    fn complete(&self) -> bool {
        !self.untrusted.is_empty() && !self.private.is_empty() && !self.acts.is_empty()
    }
}

/// One caller, and the legs its conversations could hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallerLegs {
    /// The principal, as `principals:` names it (`operator` for the default caller).
    pub principal: String,
    /// The tools of each leg it may call.
    pub legs: Legs,
}

/// A spec's labels, explained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelReport {
    /// Every declared tool of each leg.
    pub legs: Legs,
    /// The upstream servers whose tools' results count as untrusted.
    pub untrusted_servers: Vec<String>,
    /// Each caller's reach.
    pub callers: Vec<CallerLegs>,
    /// The policy's rule of two.
    pub rule_of_two: RuleOfTwo,
    /// The file declares labels itself (`output:`, `sends:`, `outputs:`).
    pub declared: bool,
}

impl LabelReport {
    /// Whether it is worth saying: the file declares labels, or some caller
    /// could hold all three legs (an HTTP binding's untrusted default alone is
    /// not news).
    pub fn worth_saying(&self) -> bool {
        self.declared || self.callers.iter().any(|c| c.legs.complete())
    }

    /// The lines `toolgate check` prints.
    pub fn lines(&self) -> Vec<String> {
        let list = |names: &[String]| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        };
        let mut lines = vec![
            format!("labels: untrusted results: {}", list(&self.legs.untrusted)),
            format!("        private results: {}", list(&self.legs.private)),
            format!(
                "        act on the world or send: {}",
                list(&self.legs.acts)
            ),
        ];
        if !self.untrusted_servers.is_empty() {
            lines.push(format!(
                "        every tool of {} (untrusted until `outputs:` says otherwise)",
                self.untrusted_servers.join(", ")
            ));
        }
        let guard = match self.rule_of_two {
            RuleOfTwo::Ask => "the rule of two asks a person before the act",
            RuleOfTwo::Deny => "the rule of two refuses the act",
            RuleOfTwo::Off => "the rule of two is off: only your own rules stand before the act",
        };
        for caller in &self.callers {
            let legs = &caller.legs;
            let line = if legs.complete() {
                format!(
                    "  {} could hold all three (untrusted from {}, private from {}, acting with {}): {guard}",
                    caller.principal,
                    first(&legs.untrusted),
                    first(&legs.private),
                    first(&legs.acts)
                )
            } else {
                let missing: Vec<&str> = [
                    (legs.untrusted.is_empty(), "reads nothing untrusted"),
                    (legs.private.is_empty(), "reads nothing private"),
                    (legs.acts.is_empty(), "cannot act on the world"),
                ]
                .into_iter()
                .filter_map(|(gap, words)| gap.then_some(words))
                .collect();
                format!(
                    "  {} cannot hold all three: it {}",
                    caller.principal,
                    missing.join(" and ")
                )
            };
            lines.push(line);
        }
        lines
    }

    /// The report as `toolgate check --json` writes it.
    pub fn to_json(&self) -> serde_json::Value {
        json!(self)
    }
}

/// `a` or `a (and 2 more)`.
fn first(names: &[String]) -> String {
    match names {
        [one] => one.clone(),
        [one, rest @ ..] => format!("{one} (and {} more)", rest.len()),
        [] => String::new(),
    }
}

/// The labels of `spec`, explained.
pub fn label_report(spec: &SpecFile) -> LabelReport {
    let tools: Vec<ToolDescriptor> = spec
        .tools
        .iter()
        .map(|tool| {
            let mut d = ToolDescriptor::new(
                tool.name.clone(),
                String::new(),
                json!({}),
                tool.effect(),
                ToolSource::Builtin,
            );
            d.output = tool.output_labels();
            d.sends = tool.sends;
            d
        })
        .collect();
    let legs_of = |reach: &dyn Fn(&ToolDescriptor) -> bool| {
        let mut legs = Legs::default();
        for tool in tools.iter().filter(|t| reach(t)) {
            if tool.output.untrusted {
                legs.untrusted.push(tool.name.clone());
            }
            if tool.output.private {
                legs.private.push(tool.name.clone());
            }
            if acts_on_world(tool) {
                legs.acts.push(tool.name.clone());
            }
        }
        legs
    };
    let mut callers = vec![("operator".to_owned(), Principal::operator())];
    for (id, declared) in &spec.principals {
        callers.push((id.clone(), declared.to_principal(id)));
    }
    let untrusted_servers: Vec<String> = spec
        .mcp_servers
        .iter()
        .filter(|(_, server)| {
            server
                .outputs
                .get("*")
                .is_none_or(|output| output.brings().untrusted)
        })
        .map(|(name, _)| name.clone())
        .collect();
    LabelReport {
        legs: legs_of(&|_| true),
        untrusted_servers,
        callers: callers
            .into_iter()
            .map(|(id, principal)| CallerLegs {
                legs: legs_of(&|tool| {
                    principal.sees(tool)
                        && spec.policy.decide(tool, &principal).decision != Decision::Deny
                }),
                principal: id,
            })
            .collect(),
        rule_of_two: spec.policy.rule_of_two,
        declared: spec.tools.iter().any(|t| t.output.is_some() || t.sends)
            || spec.mcp_servers.values().any(|s| !s.outputs.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> SpecFile {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn check_names_the_legs_and_the_callers_that_could_hold_all_three() {
        let spec = spec(
            r#"
tools:
  - {name: fetch_page, description: d, effect: read, output: untrusted}
  - {name: read_customer, description: d, effect: read, output: private}
  - {name: send_email, description: d, effect: external}
principals:
  reader: {ceiling: read, scopes: ["*"]}
"#,
        );
        let report = label_report(&spec);
        insta::assert_snapshot!(report.lines().join("\n"), @r"
        labels: untrusted results: fetch_page
                private results: read_customer
                act on the world or send: send_email
          operator could hold all three (untrusted from fetch_page, private from read_customer, acting with send_email): the rule of two asks a person before the act
          reader cannot hold all three: it cannot act on the world
        ");
    }

    #[test]
    fn a_spec_without_labels_or_all_three_legs_has_nothing_to_say() {
        let lookup = spec("tools:\n  - {name: lookup, description: d, effect: read}\n");
        assert!(!label_report(&lookup).worth_saying());
        let fetch = "tools:\n  - {name: fetch, description: d, http: {method: GET, url: 'https://x.example/'}}\n";
        let report = label_report(&spec(fetch));
        assert_eq!(report.legs.untrusted, ["fetch"]);
        assert!(!report.worth_saying());
    }
}
