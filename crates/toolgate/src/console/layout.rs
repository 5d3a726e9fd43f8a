//! The frame every console page shares: head, navigation, who is logged in.

use maud::{DOCTYPE, Markup, html};

use super::Viewer;

/// Which page the navigation marks as the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    None,
    Approvals,
    Audit,
    Catalog,
    Conversations,
}

/// A whole page: `title`, the navigation (when someone is logged in) and `body`.
pub(crate) fn page(title: &str, viewer: Option<&Viewer>, nav: Nav, body: Markup) -> Markup {
    let link = |to: Nav, href: &str, text: &str| {
        html! { a href=(href) class=[(nav == to).then_some("here")] { (text) } }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="htmx-config" content=r#"{"allowEval":false,"includeIndicatorStyles":false}"#;
                @if let Some(viewer) = viewer { meta name="csrf-token" content=(viewer.csrf); }
                title { (title) " · toolgate" }
                link rel="stylesheet" href="/assets/console.css";
                script src="/assets/htmx.min.js" {}
                script src="/assets/htmx-ext-sse.min.js" {}
                script src="/assets/console.js" {}
                @if nav == Nav::Conversations { script src="/assets/mermaid.min.js" {} }
            }
            body {
                header.top {
                    span.brand { "toolgate" }
                    @if viewer.is_some() {
                        nav {
                            (link(Nav::Approvals, "/approvals", "Approvals"))
                            (link(Nav::Audit, "/audit", "Audit"))
                            (link(Nav::Catalog, "/catalog", "Catalog"))
                            (link(Nav::Conversations, "/conversations", "Conversations"))
                        }
                    }
                    @if let Some(viewer) = viewer {
                        span.who {
                            span { (viewer.who) } span.tag { (viewer.how) }
                            form method="post" action="/logout" {
                                (csrf_field(viewer))
                                button type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// The hidden field that carries the session's CSRF token in a form.
pub(crate) fn csrf_field(viewer: &Viewer) -> Markup {
    html! { input type="hidden" name="csrf" value=(viewer.csrf); }
}

/// JSON, pretty-printed, as text: a control or invisible character in it (a
/// bidi override a model chose, say) is shown as its `\uXXXX` escape, as the
/// CLI shows it, so the page shows exactly what the value holds.
pub(crate) fn json(value: &serde_json::Value) -> Markup {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    let text = toolgate_core::escape_json_for_terminal(&text);
    html! { pre { code { (text) } } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bidi_override_in_json_is_shown_as_its_escape() {
        let shown = json(&serde_json::json!({"to": "evil\u{202e}moc.elpmaxe"})).into_string();
        assert!(shown.contains(r"evil\u202emoc"), "{shown}");
        assert!(!shown.contains('\u{202e}'), "{shown}");
    }
}
