//! The Approvals page: the calls waiting for a person, newest first, kept live
//! by server-sent events, each with approve (once, or with a grant) and deny;
//! and below them, what the budgets have spent (`budgets`).
//!
//! An answer goes through the same store calls as `toolgate approvals approve`
//! and `deny` ([`ApprovalStore::approve_by`], [`ApprovalStore::deny_by`]), after
//! the same check of who may answer ([`Approvers`](toolgate_core::Approvers)),
//! recorded `via: console`. The MCP call waiting on it sees the answer within
//! its next look at the store and runs again, taking the answer.

use std::convert::Infallible;
use std::time::{Duration, SystemTime};

use axum::Extension;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use futures::Stream;
use maud::{Markup, html};
use serde::Deserialize;
use toolgate_core::Answerer;

use super::layout::{self, Nav, csrf_field};
use super::login::csrf_refusal;
use super::{App, Viewer, error_page};
use crate::{
    store::Approval, store::ApprovalStore, store::Grant, store::GrantReach, store::GrantScope,
};

/// How often an open page's event stream looks for new or answered requests.
const POLL: Duration = Duration::from_millis(200);

/// How many of a conversation's calls a request shows.
const RECENT_CALLS: usize = 5;

/// The grant lengths offered.
const GRANT_TTLS: &[&str] = &["15m", "1h", "8h", "24h"];

/// `GET /approvals`.
pub(super) async fn page(State(app): State<App>, Extension(viewer): Extension<Viewer>) -> Response {
    let rows = match rows_markup(&app, &viewer) {
        Ok(rows) => rows,
        Err(e) => return error_page(StatusCode::INTERNAL_SERVER_ERROR, Some(&viewer), &e),
    };
    let body = html! {
        p.muted { "Calls waiting for a person, newest first. This list updates by itself." }
        div hx-ext="sse" sse-connect="/approvals/events" {
            table #approvals {
                thead { tr {
                    th { "Asked" } th { "Tool" } th { "Principal" } th { "Session" }
                    th { "Arguments" } th { "Reason" } th { "Recent calls" } th { "Answer" }
                } }
                tbody #pending sse-swap="approvals" { (rows) }
            }
        }
        (super::budgets::section(&app, &viewer))
    };
    layout::page("Approvals", Some(&viewer), Nav::Approvals, body).into_response()
}

/// `GET /approvals/rows`: the table's rows alone.
pub(super) async fn rows(State(app): State<App>, Extension(viewer): Extension<Viewer>) -> Response {
    match rows_markup(&app, &viewer) {
        Ok(rows) => rows.into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// `GET /approvals/events`: an `approvals` event with the rows whenever the
/// pending requests change (from this process or any other using the store).
pub(super) async fn events(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = futures::stream::unfold(
        (app, viewer, None::<Vec<String>>),
        |(app, viewer, mut shown)| async move {
            loop {
                let now = pending(&app, &viewer).map(|list| fingerprint(&list)).ok();
                if now.is_some() && now != shown {
                    shown = now;
                    let rows = rows_markup(&app, &viewer).unwrap_or_else(|e| {
                        html! {
                            tr { td colspan="8" .error { (e) } }
                        }
                    });
                    let event = Event::default().event("approvals").data(rows.into_string());
                    return Some((Ok(event), (app, viewer, shown)));
                }
                tokio::time::sleep(POLL).await;
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// What tells one list of pending requests from another.
fn fingerprint(list: &[Approval]) -> Vec<String> {
    list.iter().map(|a| a.id.clone()).collect()
}

/// The pending requests `viewer` may see, newest first.
fn pending(app: &App, viewer: &Viewer) -> Result<Vec<Approval>, String> {
    let gate = app.gate();
    let mut list = gate.store().list(false).map_err(|e| e.to_string())?;
    list.retain(|a| viewer.sees(&a.principal));
    list.reverse();
    Ok(list)
}

fn rows_markup(app: &App, viewer: &Viewer) -> Result<Markup, String> {
    let list = pending(app, viewer)?;
    let gate = app.gate();
    let spec = app.console.spec();
    let approvers = super::approvers(&spec);
    Ok(html! {
        @if list.is_empty() {
            tr { td colspan="8" .muted { "Nothing is waiting for approval." } }
        }
        @for approval in &list {
            @let recent = gate.store().calls(&approval.session).unwrap_or_default();
            @let may_approve = approvers.may_approve(&viewer.who, &approval.tool, &approval.principal, approval.answered_by);
            @let may_deny = approvers.may_deny(&viewer.who, &approval.tool);
            tr id=(approval.id) {
                td { (approval.created_at) br; code.muted { (approval.id) } }
                td { code { (approval.tool) } }
                td { (approval.principal) }
                td { code { (approval.session) } }
                td { (layout::json(&approval.arguments)) }
                td { (approval.reason) }
                td {
                    ul.recent {
                        @for call in recent.iter().rev().take(RECENT_CALLS) {
                            li { code { (call.tool) } " " @if call.ok { span.ok { "ok" } } @else { span.bad { "failed" } } }
                        }
                        @if recent.is_empty() { li.muted { "none yet" } }
                    }
                }
                td.actions {
                    @match &may_approve {
                        Ok(()) => {
                            form method="post" action={ "/approvals/" (approval.id) "/approve" } {
                                (csrf_field(viewer))
                                button.approve type="submit" { "Approve once" }
                            }
                            form method="post" action={ "/approvals/" (approval.id) "/approve" } {
                                (csrf_field(viewer))
                                select name="ttl" aria-label="grant length" {
                                    @for ttl in GRANT_TTLS { option value=(ttl) { (ttl) } }
                                }
                                select name="scope" aria-label="grant scope" {
                                    option value="tool" { "this tool" }
                                    option value="arguments" { "these arguments" }
                                }
                                select name="reach" aria-label="grant reach" {
                                    option value="conversation" { "for " (approval.principal) " in this conversation" }
                                    option value="principal" { "for " (approval.principal) " in every conversation" }
                                }
                                button.approve type="submit" { "Approve with grant" }
                            }
                        }
                        Err(why) => { p.muted { (why.to_string()) } }
                    }
                    @if may_deny.is_ok() {
                        form method="post" action={ "/approvals/" (approval.id) "/deny" } {
                            (csrf_field(viewer))
                            input type="text" name="reason" placeholder="reason for the model" aria-label="reason";
                            button.deny type="submit" { "Deny" }
                        }
                    }
                }
            }
        }
    })
}

#[derive(Deserialize)]
pub(super) struct ApproveForm {
    #[serde(default)]
    csrf: String,
    ttl: Option<String>,
    scope: Option<String>,
    reach: Option<String>,
}

/// `POST /approvals/{id}/approve`: once, or with a grant (`ttl`, `scope`,
/// `reach`): a grant covers only the caller whose call it answers.
pub(super) async fn approve(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Path(id): Path<String>,
    Form(form): Form<ApproveForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&viewer, &form.csrf) {
        return refused;
    }
    let grant = match form.ttl.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        None => None,
        Some(ttl) => match grant(ttl, form.scope.as_deref(), form.reach.as_deref()) {
            Ok(grant) => Some(grant),
            Err(e) => return error_page(StatusCode::BAD_REQUEST, Some(&viewer), &e),
        },
    };
    let gate = app.gate();
    let store = gate.store();
    let asked = match asked(store.as_ref(), &viewer, &id) {
        Ok(asked) => asked,
        Err(page) => return *page,
    };
    let spec = app.console.spec();
    if let Err(why) = super::approvers(&spec).may_approve(
        &viewer.who,
        &asked.tool,
        &asked.principal,
        asked.answered_by,
    ) {
        let message = format!("{} is not approved: {why}", asked.id);
        return error_page(StatusCode::FORBIDDEN, Some(&viewer), &message);
    }
    let by = Answerer::new(&viewer.who, "console");
    match store.approve_by(&asked.id, grant, &by, SystemTime::now()) {
        Ok(_) => Redirect::to("/approvals").into_response(),
        Err(e) => error_page(StatusCode::CONFLICT, Some(&viewer), &e.to_string()),
    }
}

#[derive(Deserialize)]
pub(super) struct DenyForm {
    #[serde(default)]
    csrf: String,
    reason: Option<String>,
}

/// `POST /approvals/{id}/deny`: the model is told `reason`.
pub(super) async fn deny(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Path(id): Path<String>,
    Form(form): Form<DenyForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&viewer, &form.csrf) {
        return refused;
    }
    let gate = app.gate();
    let store = gate.store();
    let asked = match asked(store.as_ref(), &viewer, &id) {
        Ok(asked) => asked,
        Err(page) => return *page,
    };
    let spec = app.console.spec();
    if let Err(why) = super::approvers(&spec).may_deny(&viewer.who, &asked.tool) {
        let message = format!("{} is not denied: {why}", asked.id);
        return error_page(StatusCode::FORBIDDEN, Some(&viewer), &message);
    }
    let reason = form
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    let by = Answerer::new(&viewer.who, "console");
    match store.deny_by(&asked.id, reason, &by, SystemTime::now()) {
        Ok(_) => Redirect::to("/approvals").into_response(),
        Err(e) => error_page(StatusCode::CONFLICT, Some(&viewer), &e.to_string()),
    }
}

/// The approval request `id`, or the page saying why it cannot be answered.
fn asked(store: &dyn ApprovalStore, viewer: &Viewer, id: &str) -> Result<Approval, Box<Response>> {
    match store.get(id) {
        Ok(Some(asked)) if viewer.sees(&asked.principal) => Ok(asked),
        Ok(_) => {
            let message = format!(
                "there is no approval request {id}; it may have been answered and used already"
            );
            Err(Box::new(error_page(
                StatusCode::NOT_FOUND,
                Some(viewer),
                &message,
            )))
        }
        Err(e) => Err(Box::new(error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            Some(viewer),
            &e.to_string(),
        ))),
    }
}

/// A grant of `ttl` (one of the offered lengths, or any human duration up to a
/// day) for the tool or, with `scope` `arguments`, these arguments only; to the
/// caller in this conversation or, with `reach` `principal`, in all of its own.
fn grant(ttl: &str, scope: Option<&str>, reach: Option<&str>) -> Result<Grant, String> {
    const LONGEST: Duration = Duration::from_secs(24 * 3600);
    let ttl = humantime::parse_duration(ttl)
        .map_err(|e| format!("the grant length `{ttl}` is not a duration ({e})"))?;
    if ttl.is_zero() || ttl > LONGEST {
        return Err("a grant from the console lasts more than nothing and at most 24h".into());
    }
    let scope = match scope {
        None | Some("tool") => GrantScope::Tool,
        Some("arguments") => GrantScope::SameArguments,
        Some(other) => {
            return Err(format!(
                "the grant scope `{other}` is neither `tool` nor `arguments`"
            ));
        }
    };
    let reach = match reach {
        None | Some("conversation") => GrantReach::Conversation,
        Some("principal") => GrantReach::EveryConversation,
        Some(other) => {
            return Err(format!(
                "the grant reach `{other}` is neither `conversation` nor `principal`"
            ));
        }
    };
    Ok(Grant { ttl, scope, reach })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_one_of_the_offered_lengths_for_the_tool_or_its_arguments() {
        assert_eq!(
            grant("1h", Some("arguments"), Some("principal")),
            Ok(Grant {
                ttl: Duration::from_secs(3600),
                scope: GrantScope::SameArguments,
                reach: GrantReach::EveryConversation,
            })
        );
        let default = grant("15m", None, None).unwrap();
        assert_eq!(
            (default.scope, default.reach),
            (GrantScope::Tool, GrantReach::Conversation),
            "a grant reaches this conversation unless widened"
        );
        assert!(grant("0s", None, None).is_err());
        assert!(grant("7days", None, None).is_err());
        assert!(
            grant("1h", Some("everything"), None)
                .unwrap_err()
                .contains("everything")
        );
        assert!(
            grant("1h", None, Some("everyone"))
                .unwrap_err()
                .contains("everyone")
        );
    }
}
