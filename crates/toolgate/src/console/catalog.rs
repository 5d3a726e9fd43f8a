//! The Catalog page: every tool the gate serves — effect, tier, source,
//! binding, usage guidance and schemas — as the catalog holds it, and for each
//! model API the exact declaration it would receive with every change made to
//! fit it (what `toolgate render --explain` prints). A viewer who sees only
//! its own doings sees only the tools its principal may call, and no upstream
//! server. Everything here came from a spec file, a model or an upstream
//! server, so all of it is shown as text.

use axum::Extension;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::layout::{self, Nav};
use super::{App, Viewer};
use toolgate_core::wire::{self, RenderOptions, Target};
use toolgate_core::{ToolDescriptor, ToolSource};

/// `GET /catalog`.
pub(super) async fn page(State(app): State<App>, Extension(viewer): Extension<Viewer>) -> Response {
    let gate = app.gate();
    let spec = app.console.spec();
    // A viewer who sees only its own doings sees only the tools `tools/list`
    // shows it, and no upstream server.
    let restricted = viewer.only.as_deref().map(|id| {
        spec.principals
            .get(id)
            .map(|declared| declared.to_principal(id))
    });
    let shown = |name: &str| match &restricted {
        None => true,
        Some(principal) => principal.as_ref().is_some_and(|p| gate.knows(name, p)),
    };
    let body = html! {
        @if restricted.is_none() {
            @if let Some(status) = app.console.inner.status.get() { (spec_status(&status.get())) }
            (super::upstreams::sections(&app, &viewer))
        }
        h2 { "Tools" }
        table #catalog {
            thead { tr {
                th { "Tool" } th { "Effect" } th { "Tier" } th { "Source" } th { "Binding" }
                th { "Description and guidance" } th { "Schemas" }
            } }
            tbody {
                @for tool in gate.catalog().iter().filter(|t| shown(t.name())) {
                    @let d = tool.descriptor();
                    @let binding = spec.tools.iter().find(|t| t.name == d.name).map(|t| t.binding_kind().as_str());
                    tr id={ "tool-" (d.name) } {
                        td { code { (d.name) } @if let Some(title) = &d.title { br; span.muted { (title) } } }
                        td { (d.effect.as_str()) }
                        td { (d.effect.tier().as_str()) }
                        td { (source(&d.source)) }
                        td { (binding.unwrap_or(match d.source { ToolSource::Mcp { .. } => "mcp", ToolSource::Builtin => "builtin", _ => "native" })) }
                        td {
                            p.description { (d.description) }
                            @if let Some(when) = &d.usage.when_to_use { p { b { "When to use: " } (when) } }
                            @if let Some(not) = &d.usage.when_not_to { p { b { "When not to: " } (not) } }
                            @for pre in &d.usage.preconditions { p { b { "Before: " } (pre) } }
                        }
                        td {
                            details {
                                summary { "input" }
                                (layout::json(&d.input_schema))
                            }
                            @if let Some(output) = &d.output_schema {
                                details { summary { "output" } (layout::json(output)) }
                            }
                            (declarations(d))
                        }
                    }
                }
            }
        }
        @if let Some(skills) = gate.skills() {
            (skills_section(skills, restricted.as_ref()))
        }
    };
    layout::page("Catalog", Some(&viewer), Nav::Catalog, body).into_response()
}

/// The skills served: to a restricted viewer, those its principal is offered;
/// to others, every one, quarantined ones marked (their change is under
/// "Upstream servers", with **Accept**).
fn skills_section(
    skills: &crate::skills::Skills,
    restricted: Option<&Option<toolgate_core::Principal>>,
) -> Markup {
    let entries = skills.entries();
    let shown = entries.iter().filter(|e| match restricted {
        None => true,
        Some(principal) => principal
            .as_ref()
            .is_some_and(|p| e.quarantine.is_none() && p.has_scope_for(&e.skill.name)),
    });
    html! {
        h2 { "Skills" }
        table #skills {
            thead { tr { th { "Skill" } th { "From" } th { "Files" } th { "Description" } } }
            tbody {
                @for entry in shown {
                    @let skill = &entry.skill;
                    tr id={ "skill-" (skill.name) } {
                        td {
                            code { (skill.name) }
                            @if let Some(reason) = &entry.quarantine { br; span.bad { "quarantined" } ": " (reason) }
                        }
                        td { (match &skill.origin {
                            crate::skills::SkillOrigin::Local { dir } => format!("folder {dir}"),
                            crate::skills::SkillOrigin::Upstream { server, .. } => format!("MCP server {server}"),
                        }) }
                        td { @for file in &skill.files { code { (file.path) } " " span.muted { (file.size) " bytes" } br; } }
                        td {
                            p.description { (skill.description) }
                            details { summary { "instructions" } pre { (skill.body().trim()) } }
                        }
                    }
                }
            }
        }
    }
}

/// The tool as each model API would receive it, with the changes made to fit.
fn declarations(tool: &ToolDescriptor) -> Markup {
    html! {
        @for target in Target::ALL {
            @let rendered = wire::render(target, std::slice::from_ref(tool), &[], RenderOptions::default());
            details.declaration {
                summary {
                    (target.to_string())
                    @if !rendered.problems.is_empty() { " " span.bad { "refused" } }
                    @else if !rendered.changes.is_empty() { " " span.tag { (rendered.changes.len()) " changed" } }
                }
                @for (kind, note) in rendered.problems.iter().map(|n| ("problem", n)).chain(rendered.changes.iter().map(|n| ("changed", n))) {
                    p.muted {
                        b { (kind) } ": "
                        @if !note.path.is_empty() { "at " code { (note.path) } ": " }
                        (note.message)
                    }
                }
                @for declaration in &rendered.tools { (layout::json(declaration)) }
            }
        }
    }
}

/// The spec serving (its SHA-256) and what became of its last reload.
fn spec_status(status: &crate::serve::SpecState) -> Markup {
    html! {
        p #spec-status {
            "Spec " code { (status.sha256.get(..12).unwrap_or(&status.sha256)) }
            @if let Some(last) = &status.last_reload {
                @if last.ok { " — reloaded at " (last.at) }
                @else {
                    " — " span.bad { "the reload at " (last.at) " was refused" } ": "
                    (last.refused.as_deref().unwrap_or_default())
                    "; the previous spec still serves (the server's log has the diagnostics)"
                }
            }
        }
    }
}

fn source(source: &ToolSource) -> String {
    match source {
        ToolSource::Native { type_name } => match type_name {
            Some(t) => format!("native ({t})"),
            None => "native".to_owned(),
        },
        ToolSource::Spec { file } => format!("spec file {file}"),
        ToolSource::Mcp { server } => format!("MCP server {server}"),
        ToolSource::Builtin => "built in".to_owned(),
    }
}
