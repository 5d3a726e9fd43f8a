//! A flow as a Mermaid flowchart: one node per step (its tools, gate and done
//! guard), an edge per `after`, and the constraints and confirmations beside them.

use std::fmt::Write as _;

use super::guard::describe;
use super::model::{Ambient, Constraint, Flow, Guard};

/// The flow as Mermaid text (`flowchart TD`), ready for a Markdown ```` ```mermaid ```` block.
pub fn mermaid(flow: &Flow) -> String {
    let mut out = String::from("flowchart TD\n");
    let ids: Vec<String> = flow
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| node_id(&s.id, i))
        .collect();
    let id_of = |step: &str| {
        flow.steps
            .iter()
            .position(|s| s.id == step)
            .map(|i| ids[i].clone())
    };
    for (i, step) in flow.steps.iter().enumerate() {
        let mut lines = vec![format!("<b>{}</b>", text(&step.id))];
        if !step.allow.is_empty() {
            lines.push(format!("allow: {}", text(&step.allow.join(", "))));
        }
        if !step.deny.is_empty() {
            lines.push(format!("deny: {}", text(&step.deny.join(", "))));
        }
        if let Some(gate) = &step.gate {
            lines.push(format!("when {}", guard_text(gate)));
        }
        if let Some(done) = &step.done {
            lines.push(format!("done when {}", guard_text(done)));
        }
        let label = lines.join("<br/>");
        if step.terminal {
            let _ = writeln!(out, "    {}([\"{label}\"])", ids[i]);
        } else {
            let _ = writeln!(out, "    {}[\"{label}\"]", ids[i]);
        }
    }
    let starts: Vec<usize> = (0..flow.steps.len())
        .filter(|&i| flow.steps[i].after.is_empty())
        .collect();
    if !starts.is_empty() {
        out.push_str("    start((start))\n");
        for i in starts {
            let _ = writeln!(out, "    start --> {}", ids[i]);
        }
    }
    for (i, step) in flow.steps.iter().enumerate() {
        for after in &step.after {
            match id_of(after) {
                Some(from) => {
                    let _ = writeln!(out, "    {from} --> {}", ids[i]);
                }
                None => {
                    let _ = writeln!(
                        out,
                        "    missing_{i}[\"unknown step {}\"] -.-> {}",
                        text(after),
                        ids[i]
                    );
                }
            }
        }
    }
    let mut rules: Vec<String> = flow
        .constraints
        .iter()
        .map(|c| match c {
            Constraint::Once(tool) => format!("once: {tool}"),
            Constraint::Before(b) => format!("{} before {}", b.first, b.then),
            Constraint::NeverUntil(n) => {
                format!("{} never until {}", n.tool, describe(&n.until))
            }
            Constraint::Require(r) => {
                format!("{} required when {}", r.tool, describe(&r.when))
            }
        })
        .collect();
    for confirm in &flow.confirm {
        rules.push(match confirm.when() {
            None => format!("confirm: {}", confirm.tool()),
            Some(when) => format!("confirm: {} when {}", confirm.tool(), describe(when)),
        });
    }
    if flow.ambient == Ambient::Block {
        rules.push("tools no step allows are blocked".into());
    }
    if !rules.is_empty() {
        out.push_str("    subgraph rules [constraints]\n");
        for (i, rule) in rules.iter().enumerate() {
            let _ = writeln!(out, "        rule{i}[\"{}\"]", text(rule));
        }
        out.push_str("    end\n");
    }
    out
}

fn guard_text(guard: &Guard) -> String {
    text(&describe(guard))
}

/// A node id Mermaid accepts: the step id's letters, digits and `_`, made unique.
fn node_id(step: &str, index: usize) -> String {
    let clean: String = step
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // Words Mermaid reserves, and ids that start with a digit, get a prefix.
    if clean.is_empty()
        || clean.starts_with(|c: char| c.is_ascii_digit())
        || matches!(
            clean.as_str(),
            "end" | "graph" | "subgraph" | "start" | "style" | "class"
        )
    {
        format!("step{index}_{clean}")
    } else if clean != step {
        format!("{clean}_{index}")
    } else {
        clean
    }
}

/// Text inside a quoted Mermaid label: quotes and angle brackets as entities,
/// backticks dropped (they would switch Mermaid to Markdown).
fn text(s: &str) -> String {
    s.replace('`', "")
        .replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
        .replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn odd_step_ids_become_safe_node_ids() {
        assert_eq!(node_id("identify", 0), "identify");
        assert_eq!(node_id("end", 3), "step3_end");
        assert_eq!(node_id("check-in", 1), "check_in_1");
        assert_eq!(node_id("1st", 2), "step2_1st");
        assert_eq!(text(r#"say "hi" <b>"#), "say #quot;hi#quot; #lt;b#gt;");
    }

    #[test]
    fn steps_edges_and_rules_are_drawn() {
        let flow: Flow = serde_json::from_value(json!({
            "steps": [
                {"id": "identify", "allow": ["verify"], "done": {"called_ok": "verify"}},
                {"id": "end", "after": ["identify"], "terminal": true, "allow": ["close"]}
            ],
            "constraints": [{"once": "refund"}],
            "confirm": ["refund"]
        }))
        .unwrap();
        let chart = mermaid(&flow);
        assert!(chart.starts_with("flowchart TD\n"), "{chart}");
        assert!(
            chart.contains(
                "identify[\"<b>identify</b><br/>allow: verify<br/>done when verify has succeeded\"]"
            ),
            "{chart}"
        );
        assert!(
            chart.contains("step1_end([\"<b>end</b><br/>allow: close\"])"),
            "{chart}"
        );
        assert!(chart.contains("identify --> step1_end"), "{chart}");
        assert!(chart.contains("rule0[\"once: refund\"]"), "{chart}");
        assert!(chart.contains("rule1[\"confirm: refund\"]"), "{chart}");
    }
}
