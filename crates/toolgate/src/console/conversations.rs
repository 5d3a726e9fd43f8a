//! The Conversations page: the conversations seen lately in the audit log, and
//! one conversation's state, call history and place in the flow, with the flow
//! drawn as a graph (the Mermaid text `toolgate flow graph` prints, rendered
//! in the page by the vendored Mermaid library).

use std::collections::BTreeMap;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Nav};
use super::{App, Viewer, error_page};
use crate::store::AuditFilter;

/// How many of the newest audit records the list of conversations is read from.
const RECENT_RECORDS: usize = 2000;

#[derive(Deserialize)]
pub(super) struct ConversationQuery {
    session: Option<String>,
}

/// `GET /conversations[?session=ID]`.
pub(super) async fn page(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Query(query): Query<ConversationQuery>,
) -> Response {
    let gate = app.gate();
    let store = gate.store();
    let mine = AuditFilter {
        principal: viewer.only.clone(),
        ..AuditFilter::default()
    };
    let recent = match store.query(&mine, None, RECENT_RECORDS) {
        Ok(records) => records,
        Err(e) => {
            return error_page(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(&viewer),
                &e.to_string(),
            );
        }
    };
    // Each conversation's newest record time and how many records it has lately.
    let mut sessions: BTreeMap<&str, (&str, usize)> = BTreeMap::new();
    for record in &recent {
        let seen = sessions
            .entry(&record.entry.session)
            .or_insert((&record.entry.time, 0));
        seen.1 += 1;
    }
    let mut listed: Vec<_> = sessions.into_iter().collect();
    listed.sort_by(|a, b| b.1.0.cmp(a.1.0));
    let session = query
        .session
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let detail = match session {
        None => html! {},
        Some(session) => match conversation(&app, &viewer, session) {
            Ok(markup) => markup,
            Err(e) => html! { p.error { (e) } },
        },
    };
    let body = html! {
        form.filters method="get" action="/conversations" {
            label { "Conversation" input type="text" name="session" value=[session] placeholder="mcp-..."; }
            button type="submit" { "Show" }
        }
        (detail)
        h2 { "Seen lately" }
        table #conversations {
            thead { tr { th { "Conversation" } th { "Last record" } th { "Records" } } }
            tbody {
                @if listed.is_empty() { tr { td colspan="3" .muted { "No conversation has made a call yet." } } }
                @for (id, (time, count)) in &listed {
                    tr {
                        td { a href={ "/conversations?session=" (urlencoded(id)) } { code { (id) } } }
                        td { (time) }
                        td { (count) }
                    }
                }
            }
        }
    };
    layout::page("Conversations", Some(&viewer), Nav::Conversations, body).into_response()
}

fn conversation(app: &App, viewer: &Viewer, session: &str) -> Result<Markup, String> {
    let gate = app.gate();
    let store = gate.store();
    if let Some(only) = &viewer.only {
        // Another principal's conversation is not told from one that never was.
        let theirs = AuditFilter {
            session: Some(session.to_owned()),
            principal: Some(only.clone()),
            ..AuditFilter::default()
        };
        if store
            .query(&theirs, None, 1)
            .map_err(|e| e.to_string())?
            .is_empty()
        {
            return Err(format!(
                "no conversation `{session}` of yours has made a call"
            ));
        }
    }
    let state = store.load(session).map_err(|e| e.to_string())?;
    let calls = store.calls(session).map_err(|e| e.to_string())?;
    let view = gate.flow_view(session).map_err(|e| e.to_string())?;
    let graph = gate.flow().map(toolgate_core::flow::mermaid);
    Ok(html! {
        h2 { "Conversation " code { (session) } }
        @if let Some(view) = &view {
            h2 { "Flow" }
            table #flow-steps {
                thead { tr { th { "Step" } th { "Status" } th { "Why / what to do" } } }
                tbody {
                    @for step in &view.steps {
                        tr {
                            td { code { (step.id) } }
                            td { (format!("{:?}", step.status).to_lowercase()) }
                            td {
                                @if let Some(instruction) = &step.instruction { (instruction) }
                                @for why in &step.why { br; span.muted { (why) } }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(graph) = &graph {
            // Mermaid reads the element's text; maud escapes it, and the
            // library parses the text, never HTML.
            pre.mermaid #flow-graph { (graph) }
        }
        h2 { "State" }
        (layout::json(&serde_json::Value::Object(state)))
        h2 { "Calls" }
        table #calls {
            thead { tr { th { "#" } th { "Tool" } th { "Result" } th { "Time" } } }
            tbody {
                @if calls.is_empty() { tr { td colspan="4" .muted { "No calls yet." } } }
                @for call in calls.iter().rev() {
                    tr {
                        td { (call.seq) }
                        td { code { (call.tool) } }
                        td { @if call.ok { span.ok { "ok" } } @else { span.bad { "failed" } } }
                        td { (call.time) }
                    }
                }
            }
        }
        p { a href={ "/audit?session=" (urlencoded(session)) } { "its audit records →" } }
    })
}

fn urlencoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
