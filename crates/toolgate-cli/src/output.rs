//! Human-readable renderings of tools.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use toolgate::spec::{McpBinding, ToolSpec, returns_shape, schema_shape};
use toolgate::{Retry, ToolDescriptor};

pub fn print_json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("error: cannot print JSON: {e}"),
    }
}

/// The first line of a text, cut to `max` characters.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// Everything about one tool, as a page a person reads.
pub fn describe_tool(tool: &ToolSpec, descriptor: &ToolDescriptor) -> String {
    let mut out = String::new();
    let safety = descriptor.safety();
    let _ = writeln!(out, "{}", tool.name);
    if let Some(title) = &tool.title {
        let _ = writeln!(out, "  {title}");
    }
    let _ = writeln!(out, "\n{}\n", tool.description.trim());
    let retry = match safety.retry {
        Retry::Freely => "retried freely",
        Retry::WithSameKey => "retried with the same idempotency key",
        Retry::Never => "never retried",
    };
    let _ = writeln!(
        out,
        "effect      {} (tier {}, {retry})",
        tool.effect(),
        safety.tier
    );
    let _ = writeln!(out, "binding     {}", binding_line(tool));
    if let Some(timeout) = &tool.timeout {
        let _ = writeln!(out, "timeout     {timeout}");
    }
    if tool.is_background() {
        let scheduling = tool
            .scheduling
            .map(|s| format!(", scheduling {}", s.as_str()))
            .unwrap_or_default();
        let _ = writeln!(out, "background  yes{scheduling}");
    }
    let _ = writeln!(out, "\nparameters");
    let schema = &descriptor.input_schema;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match schema.get("properties").and_then(Value::as_object) {
        Some(props) if !props.is_empty() => {
            for (name, sub) in props {
                let need = if required.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                let description = sub
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  {name}: {} ({need}) {description}",
                    schema_shape(sub, schema, 0)
                );
            }
        }
        _ => {
            let _ = writeln!(out, "  (none)");
        }
    }
    let _ = writeln!(out, "\nreturns     {}", returns_shape(tool));
    if !tool.usage.is_empty() {
        let _ = writeln!(out, "\nusage");
        let u = &tool.usage;
        for (label, text) in [
            ("when to use", &u.when_to_use),
            ("when not to", &u.when_not_to),
            ("cost", &u.cost),
            ("example", &u.example),
            ("tier", &u.tier),
        ] {
            if let Some(text) = text {
                let _ = writeln!(out, "  {label:12}{text}");
            }
        }
        for precondition in &u.preconditions {
            let _ = writeln!(out, "  {:12}{precondition}", "requires");
        }
    }
    if !tool.set_state.is_empty() || tool.save_response_as.is_some() {
        let _ = writeln!(out, "\nstate effects");
        for (key, value) in &tool.set_state {
            let _ = writeln!(out, "  sets {key} = {value}");
        }
        if let Some(key) = &tool.save_response_as {
            let _ = writeln!(out, "  saves the response as {key}");
        }
    }
    for example in &tool.examples {
        let _ = writeln!(out, "\nexample     {example}");
    }
    out
}

fn binding_line(tool: &ToolSpec) -> String {
    if let Some(http) = &tool.http {
        return format!("http {}", toolgate::binding_summary(http));
    }
    match &tool.mcp {
        Some(McpBinding::Short(server)) => format!("mcp {server}"),
        Some(McpBinding::Full(server)) => {
            let target = server
                .url
                .clone()
                .or_else(|| server.command.clone())
                .unwrap_or_default();
            format!("mcp {target}")
        }
        None => "mock (returns its canned response)".into(),
    }
}
