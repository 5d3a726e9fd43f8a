//! The Audit page: the log newest first, a page at a time, filtered by
//! session, principal, tool, outcome and time ([`AuditLog::query`]); one
//! record's details; **Verify** (the chain, and anchors pasted in); and the
//! calls a crash left pending or whose outcome is unknown, each with the resolve
//! action of `toolgate audit resolve`.

use axum::Extension;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use toolgate_core::{Anchor, AuditEntry, AuditRecord, ChainBreak, VerifyReport};

use super::layout::{self, Nav, csrf_field};
use super::login::csrf_refusal;
use super::{App, Viewer, error_page};
use crate::audit::{PendingOutcome, ResolveError, resolve_pending};
use crate::store::AuditFilter;

/// Records on one page.
const PAGE: usize = 50;

/// The filter and page of `GET /audit`, as the form sends them (empty: any).
#[derive(Debug, Default, Deserialize)]
pub(super) struct AuditQuery {
    #[serde(default)]
    session: String,
    #[serde(default)]
    principal: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    before: Option<u64>,
}

impl AuditQuery {
    fn filter(&self) -> AuditFilter {
        let set = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        AuditFilter {
            session: set(&self.session),
            principal: set(&self.principal),
            tool: set(&self.tool),
            outcome: set(&self.outcome),
            since: set(&self.since),
            until: set(&self.until),
        }
    }

    /// This query's URL for the page before record `before`.
    fn older(&self, before: u64) -> String {
        let pairs = [
            ("session", &self.session),
            ("principal", &self.principal),
            ("tool", &self.tool),
            ("outcome", &self.outcome),
            ("since", &self.since),
            ("until", &self.until),
        ];
        let mut url = url::Url::parse("http://console/audit").expect("a fixed URL parses");
        {
            let mut query = url.query_pairs_mut();
            for (name, value) in pairs.iter().filter(|(_, v)| !v.trim().is_empty()) {
                query.append_pair(name, value.trim());
            }
            query.append_pair("before", &before.to_string());
        }
        format!("/audit?{}", url.query().unwrap_or_default())
    }
}

/// The outcomes the filter offers.
const OUTCOMES: &[&str] = &[
    "ok",
    "error",
    "denied",
    "pending_approval",
    "invalid",
    "timeout",
    "cancelled",
];

/// `GET /audit`.
pub(super) async fn page(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Query(query): Query<AuditQuery>,
) -> Response {
    let gate = app.gate();
    let mut filter = query.filter();
    if let Some(only) = &viewer.only {
        filter.principal = Some(only.clone());
    }
    let store = gate.store().clone();
    let before = query.before;
    let found = off_the_runtime(move || store.query(&filter, before, PAGE)).await;
    let records = match found {
        Ok(found) => found,
        Err(message) => {
            return error_page(StatusCode::INTERNAL_SERVER_ERROR, Some(&viewer), &message);
        }
    };
    let body = html! {
        (verify_form(&viewer))
        p { a href="/audit/pending" { "Calls left pending by a crash →" } }
        h2 { "Records" }
        (filters(&query))
        (table(&records))
        div.pager {
            @if query.before.is_some() { a href="/audit" { "← newest" } }
            @if records.len() == PAGE {
                @if let Some(last) = records.last() { a href=(query.older(last.seq)) { "older →" } }
            }
        }
    };
    layout::page("Audit", Some(&viewer), Nav::Audit, body).into_response()
}

fn filters(query: &AuditQuery) -> Markup {
    let field = |name: &str, label: &str, value: &str, placeholder: &str| {
        html! {
            label { (label) input type="text" name=(name) value=(value) placeholder=(placeholder); }
        }
    };
    html! {
        form.filters method="get" action="/audit" {
            (field("session", "Session", &query.session, "any"))
            (field("principal", "Principal", &query.principal, "any"))
            (field("tool", "Tool", &query.tool, "any"))
            label { "Outcome"
                select name="outcome" {
                    option value="" { "any" }
                    @for outcome in OUTCOMES {
                        option value=(outcome) selected[query.outcome == *outcome] { (outcome) }
                    }
                }
            }
            (field("since", "Since", &query.since, "2026-01-01T00:00:00Z"))
            (field("until", "Until", &query.until, "RFC 3339"))
            button type="submit" { "Filter" }
            a href="/audit" { "clear" }
        }
    }
}

fn table(records: &[AuditRecord]) -> Markup {
    html! {
        table #audit {
            thead { tr {
                th { "#" } th { "Time" } th { "Kind" } th { "Tool" } th { "Principal" }
                th { "Session" } th { "Outcome" } th { "Reason" }
            } }
            tbody {
                @if records.is_empty() { tr { td colspan="8" .muted { "No records match." } } }
                @for record in records {
                    @let e = &record.entry;
                    tr {
                        td { a href={ "/audit/" (record.seq) } { (record.seq) } }
                        td { (e.time) }
                        td { (e.kind.as_str()) }
                        td { code { (e.tool) } }
                        td { (e.principal) }
                        td { code { (e.session) } }
                        td { (status(e)) }
                        td { (e.reason.as_deref().or(e.message.as_deref()).unwrap_or_default()) }
                    }
                }
            }
        }
    }
}

/// The outcome of a completion, or the decision of an intent.
fn status(entry: &AuditEntry) -> &str {
    entry
        .outcome
        .as_deref()
        .or(entry.decision.map(|d| d.as_str()))
        .unwrap_or("-")
}

/// `GET /audit/pending`: the calls a crash left pending, and those whose
/// outcome was lost (unknown) and is not yet resolved, each with resolve.
/// (Its own page: finding them reads the whole log.)
pub(super) async fn pending(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
) -> Response {
    let store = app.gate().store().clone();
    let found = off_the_runtime(move || {
        let mut pending = store.pending()?;
        pending.extend(crate::audit::unresolved_unknowns(store.as_ref())?);
        Ok(pending)
    });
    let pending = match found.await {
        Ok(mut pending) => {
            pending.retain(|r| viewer.sees(&r.entry.principal));
            pending
        }
        Err(message) => {
            return error_page(StatusCode::INTERNAL_SERVER_ERROR, Some(&viewer), &message);
        }
    };
    let body = html! {
        @if pending.is_empty() {
            p.muted { "No pending calls: every intent in the audit log has a completion." }
        } @else {
            (pending_calls(&viewer, &pending))
        }
        p { a href="/audit" { "← the log" } }
    };
    layout::page("Pending calls", Some(&viewer), Nav::Audit, body).into_response()
}

/// `GET /audit/{seq}`: one record, every field.
pub(super) async fn record(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Path(seq): Path<u64>,
) -> Response {
    let gate = app.gate();
    let found = gate
        .store()
        .query(&AuditFilter::default(), seq.checked_add(1), 1)
        .map(|r| r.into_iter().find(|r| r.seq == seq));
    let record = match found {
        Ok(Some(record)) if viewer.sees(&record.entry.principal) => record,
        Ok(_) => {
            let message = format!("the audit log has no record {seq}");
            return error_page(StatusCode::NOT_FOUND, Some(&viewer), &message);
        }
        Err(e) => {
            return error_page(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(&viewer),
                &e.to_string(),
            );
        }
    };
    let e = &record.entry;
    let row = |name: &str, value: Option<&str>| {
        html! { @if let Some(value) = value { dt { (name) } dd { (value) } } }
    };
    let body = html! {
        dl.fields {
            (row("time", Some(&e.time)))
            (row("kind", Some(e.kind.as_str())))
            (row("tool", Some(&e.tool)))
            (row("effect", e.effect.map(|x| x.as_str())))
            (row("principal", Some(&e.principal)))
            (row("session", Some(&e.session)))
            (row("run", Some(&e.run_id)))
            (row("call", Some(&e.call_id)))
            (row("decision", e.decision.map(|d| d.as_str())))
            (row("reason", e.reason.as_deref()))
            (row("outcome", e.outcome.as_deref()))
            (row("message", e.message.as_deref()))
            (row("authenticated", e.auth.as_deref()))
            (row("credential", e.credential.as_deref()))
            (row("call hash", e.call_hash.as_deref()))
            (row("idempotency key", e.idempotency_key.as_deref()))
            (row("hash", Some(&record.hash)))
            (row("previous hash", Some(&record.prev_hash)))
        }
        h2 { "Arguments" }
        (layout::json(&e.arguments))
        p { a href="/audit" { "← the log" } }
    };
    let title = format!("Audit record {seq}");
    layout::page(&title, Some(&viewer), Nav::Audit, body).into_response()
}

fn verify_form(viewer: &Viewer) -> Markup {
    html! {
        form.filters method="post" action="/audit/verify" {
            (csrf_field(viewer))
            label { "Anchors (SEQ:HASH lines, optional)"
                input type="text" name="anchors" placeholder="120:9f3a…";
            }
            button #verify type="submit" { "Verify" }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct VerifyForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    anchors: String,
}

/// `POST /audit/verify`: the chain check, against the anchors given.
pub(super) async fn verify(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Form(form): Form<VerifyForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&viewer, &form.csrf) {
        return refused;
    }
    let text = form.anchors.replace([',', ' '], "\n");
    let anchors = match Anchor::parse_file(&text) {
        Ok(anchors) => anchors,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, Some(&viewer), &e.to_string()),
    };
    let store = app.gate().store().clone();
    let held = anchors.len();
    let report = off_the_runtime(move || store.verify_anchored(&anchors)).await;
    let report = match report {
        Ok(report) => report,
        Err(message) => {
            return error_page(StatusCode::INTERNAL_SERVER_ERROR, Some(&viewer), &message);
        }
    };
    let body = html! {
        @match &report {
            VerifyReport::Ok { records, head } => {
                p.ok #verdict { "The audit log is intact: " (records) " records, head " code { (head) } "." }
                @if held > 0 { p { "It also holds to the " (held) " anchor(s) given." } }
            }
            VerifyReport::Broken { at, verified } => {
                p.bad #verdict { "The audit log is broken at record " (first_bad(*at)) ": " (at.to_string()) }
                p { (verified) " records before it check out. The log was altered outside toolgate: keep a copy of the state file for investigation." }
            }
        }
        (verify_form(&viewer))
        p { a href="/audit" { "← the log" } }
    };
    let status = if report.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::CONFLICT
    };
    (
        status,
        layout::page("Audit verification", Some(&viewer), Nav::Audit, body),
    )
        .into_response()
}

/// The first record not as written: for a deletion, the first one missing.
fn first_bad(at: ChainBreak) -> u64 {
    match at {
        ChainBreak::Deleted { after_seq } | ChainBreak::Truncated { after_seq, .. } => {
            after_seq + 1
        }
        other => other.seq(),
    }
}

fn pending_calls(viewer: &Viewer, pending: &[AuditRecord]) -> Markup {
    html! {
        h2 { "Calls left pending" }
        p.muted { "These started but never completed (the process stopped while they ran), or their answer was lost (outcome unknown: the same call is refused in its conversation until resolved). Check whether each took effect, then record what became of it." }
        table #pending-calls {
            thead { tr { th { "#" } th { "Time" } th { "Tool" } th { "Session" } th { "Run" } th { "Resolve" } } }
            tbody {
                @for record in pending {
                    @let e = &record.entry;
                    tr {
                        td { a href={ "/audit/" (record.seq) } { (record.seq) } }
                        td { (e.time) }
                        td { code { (e.tool) } @if !record.safe_to_rerun() { " " span.bad { "may have changed something" } } }
                        td { code { (e.session) } }
                        td { code { (e.run_id) } }
                        td.actions {
                            form method="post" action={ "/audit/resolve/" (e.run_id) } {
                                (csrf_field(viewer))
                                select name="outcome" aria-label="outcome" {
                                    option value="ok" { "it took effect (ok)" }
                                    option value="error" { "it failed (error)" }
                                    option value="cancelled" { "it never ran (cancelled)" }
                                }
                                input type="text" name="note" placeholder="note" aria-label="note";
                                button type="submit" { "Resolve" }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ResolveForm {
    #[serde(default)]
    csrf: String,
    outcome: String,
    note: Option<String>,
}

/// `POST /audit/resolve/{run_id}`: records what became of a pending call, as
/// `toolgate audit resolve` does.
pub(super) async fn resolve(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Path(run_id): Path<String>,
    Form(form): Form<ResolveForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&viewer, &form.csrf) {
        return refused;
    }
    let outcome: PendingOutcome = match form.outcome.parse() {
        Ok(outcome) => outcome,
        Err(message) => return error_page(StatusCode::BAD_REQUEST, Some(&viewer), &message),
    };
    let note = form
        .note
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let gate = app.gate();
    let by = format!("{} in the console", viewer.who);
    match resolve_pending(gate.store().as_ref(), &run_id, outcome, &by, note) {
        Ok(_) => Redirect::to("/audit").into_response(),
        Err(e @ ResolveError::NotPending { .. }) => {
            error_page(StatusCode::NOT_FOUND, Some(&viewer), &e.to_string())
        }
        Err(e) => error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            Some(&viewer),
            &e.to_string(),
        ),
    }
}

/// Runs a store read that may take a while (a whole log's walk) on a blocking
/// thread; its error, or the thread's, as the page should say it.
async fn off_the_runtime<T: Send + 'static>(
    read: impl FnOnce() -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}
