//! The budgets beside the approvals: what each budget has spent in its window
//! now, by principal, from the counters every instance on the store shares
//! (what `toolgate budgets` prints). A viewer who sees one principal sees its
//! rows only.

use std::time::SystemTime;

use maud::{Markup, html};

use super::{App, Viewer};
use crate::budgets::budgets_in_use;

/// The Budgets section of the Approvals page; nothing when the spec has none.
pub(super) fn section(app: &App, viewer: &Viewer) -> Markup {
    let gate = app.gate();
    if gate.budgets().is_empty() {
        return html! {};
    }
    let rows = budgets_in_use(gate.budgets(), gate.store().as_ref(), SystemTime::now());
    html! {
        h2 { "Budgets" }
        p.muted { "What each budget has spent in its window now; a call past one is asked about here, or refused until the window ends." }
        @match rows {
            Err(e) => p.error { (e.to_string()) },
            Ok(rows) => table #budgets {
                thead { tr {
                    th { "Budget" } th { "Counts" } th { "Principal" } th { "Spent" }
                    th { "Past it" } th { "Window ends" }
                } }
                tbody {
                    @for used in rows.iter().filter(|u| u.principal.as_deref().map_or(viewer.only.is_none(), |p| viewer.sees(p))) {
                        tr {
                            td { code { (used.budget) } }
                            td { (used.describes) }
                            td { (used.principal.as_deref().unwrap_or("every caller")) }
                            td class=(if used.spent >= used.limit { "bad" } else { "" }) {
                                (used.spent) " of " (used.limit) " " (used.unit)
                            }
                            td { (used.over) }
                            td { (used.window_end) }
                        }
                    }
                }
            },
        }
    }
}
