//! The Catalog's upstream part: each upstream MCP server's health and circuit
//! state, and the tools quarantined because their definition changed against
//! its pin, with the pinned/new diff and **Accept**.
//!
//! Accept does what `toolgate pins accept TOOL` does ([`PinStore::accept_pin`]:
//! the change recorded and shown becomes the pin, never whatever the server
//! says at that moment), after the check that lets a person answer approvals
//! for that tool. The running servers then release the tool, and `serve`
//! offers it again.

use std::time::{Instant, SystemTime};

use axum::Extension;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::csrf_field;
use super::login::csrf_refusal;
use super::{App, Viewer, error_page};
use crate::{store::Pin, store::join_fields, store::pin_diff};

/// What the console shows of the running upstream MCP servers, and how it
/// tells them that a quarantined tool's change was accepted. The front door
/// ([`crate::serve`]) gives a console the running servers.
pub trait UpstreamView: Send + Sync {
    /// One row per server, in the order the spec declares them.
    fn servers(&self) -> Vec<UpstreamRow>;
    /// A quarantined tool's change was accepted: the servers release it now,
    /// not at its next call.
    fn release_accepted(&self);
}

/// One upstream server, as the Catalog shows it.
#[derive(Debug, Clone)]
pub struct UpstreamRow {
    /// Its namespace in the catalog.
    pub namespace: String,
    /// Its name and version, from the handshake.
    pub server: Option<String>,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// `starting`, `ready`, `restarting`, `unavailable`, `misconfigured` or `stopped`.
    pub health: &'static str,
    /// Whether its tools can be called now.
    pub available: bool,
    /// Why it is not ready, if it is not.
    pub reason: Option<String>,
    /// Whether calls reach it.
    pub circuit: Circuit,
    /// Consecutive failures.
    pub failures: u32,
    /// How many of its tools are in the catalog.
    pub tools: usize,
    /// Those of its tools (by name) and skills (as `skill:NAME`) that are quarantined.
    pub quarantined: Vec<String>,
}

/// Whether calls reach an upstream server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Circuit {
    /// They do.
    Closed,
    /// It failed too often in a row; it is tried again at this instant.
    OpenUntil(Instant),
    /// Its settings cannot be used, or it was stopped: it is never tried.
    NeverTried,
}

/// The upstream servers and the quarantined tools, for the top of the Catalog.
pub(super) fn sections(app: &App, viewer: &Viewer) -> Markup {
    let servers = app.console.inner.upstreams.get().map(|u| u.servers());
    let pins = app.console.inner.pins.get().map(|p| p.pins());
    html! {
        @if let Some(servers) = &servers {
            h2 { "Upstream servers" }
            table #upstreams {
                thead { tr {
                    th { "Server" } th { "Transport" } th { "Health" } th { "Circuit" }
                    th { "Failures in a row" } th { "Tools" } th { "Quarantined" }
                } }
                tbody {
                    @if servers.is_empty() { tr { td colspan="7" .muted { "No upstream servers." } } }
                    @for server in servers { (server_row(server)) }
                }
            }
        }
        @match &pins {
            None => {}
            Some(Err(e)) => { p.error { "The pins cannot be read: " (e.to_string()) } }
            Some(Ok(pins)) => {
                @let changed: Vec<&Pin> = pins.iter().filter(|p| p.change.is_some()).collect();
                h2 #quarantine { "Quarantined tools" }
                @if changed.is_empty() {
                    p.muted #no-quarantine { "No upstream tool has changed since it was pinned." }
                }
                @for pin in changed { (quarantined(app, viewer, pin)) }
            }
        }
    }
}

fn server_row(server: &UpstreamRow) -> Markup {
    let (circuit, class) = match server.circuit {
        Circuit::OpenUntil(until) => (
            format!(
                "open, retried in {}s",
                until.saturating_duration_since(Instant::now()).as_secs()
            ),
            "bad",
        ),
        Circuit::NeverTried => ("never tried".into(), "bad"),
        Circuit::Closed => ("closed".into(), "ok"),
    };
    html! {
        tr id={ "upstream-" (server.namespace) } {
            td { code { (server.namespace) } @if let Some(info) = &server.server { br; span.muted { (info) } } }
            td { (server.transport) }
            td.health {
                span class=(if server.available { "ok" } else { "bad" }) { (server.health) }
                @if let Some(reason) = &server.reason { br; span.muted { (reason) } }
            }
            td.circuit { span class=(class) { (circuit) } }
            td { (server.failures) }
            td { (server.tools) }
            td { @for tool in &server.quarantined { code { (tool) } " " } }
        }
    }
}

fn quarantined(app: &App, viewer: &Viewer, pin: &Pin) -> Markup {
    let spec = app.console.spec();
    let may = super::approvers(&spec).may_deny(&viewer.who, &pin.tool);
    let seen = pin.change.as_ref().map_or("", |c| c.seen_at.as_str());
    html! {
        section.quarantined id={ "pin-" (pin.tool) } {
            h3 { code { (pin.tool) } " — its " (join_fields(&pin.changed_fields())) " changed" }
            p.muted { "Pinned at " (pin.pinned_at) "; the new definition was seen at " (seen) "." }
            pre.diff {
                @for line in pin_diff(pin).lines() {
                    @let class = if line.starts_with("  + ") { "added" } else if line.starts_with("  - ") { "removed" } else { "same" };
                    span class=(class) { (line) } "\n"
                }
            }
            details {
                summary { "pinned and new definitions" }
                (super::layout::json(&pin.definition))
                @if let Some(change) = &pin.change { (super::layout::json(&change.definition)) }
            }
            @match may {
                Ok(()) => {
                    form method="post" action={ "/catalog/pins/" (pin.tool) "/accept" } {
                        (csrf_field(viewer))
                        button.approve type="submit" { "Accept" }
                    }
                }
                Err(why) => { p.muted { (why.to_string()) } }
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct AcceptForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /catalog/pins/{tool}/accept`: the recorded change becomes the pin.
pub(super) async fn accept(
    State(app): State<App>,
    Extension(viewer): Extension<Viewer>,
    Path(tool): Path<String>,
    Form(form): Form<AcceptForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&viewer, &form.csrf) {
        return refused;
    }
    let Some(pins) = app.console.inner.pins.get() else {
        let message = "this console has no pin store; accept with `toolgate pins accept`";
        return error_page(StatusCode::NOT_FOUND, Some(&viewer), message);
    };
    let spec = app.console.spec();
    if let Err(why) = super::approvers(&spec).may_deny(&viewer.who, &tool) {
        let message = format!("the change of `{tool}` is not accepted: {why}");
        return error_page(StatusCode::FORBIDDEN, Some(&viewer), &message);
    }
    match pins.accept_pin(&tool, SystemTime::now()) {
        Ok(pin) => {
            tracing::info!(tool = %pin.tool, by = %viewer.who, "accepted a pinned tool's change in the console");
            // The running servers release the tool now, not at its next call.
            if let Some(upstreams) = app.console.inner.upstreams.get() {
                upstreams.release_accepted();
            }
            Redirect::to("/catalog#quarantine").into_response()
        }
        Err(e @ crate::store::PinError::Unknown { .. }) => {
            error_page(StatusCode::NOT_FOUND, Some(&viewer), &e.to_string())
        }
        Err(e @ crate::store::PinError::Unchanged { .. }) => {
            error_page(StatusCode::CONFLICT, Some(&viewer), &e.to_string())
        }
        Err(e) => error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            Some(&viewer),
            &e.to_string(),
        ),
    }
}
