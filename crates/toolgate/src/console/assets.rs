//! The console's static files, compiled into the binary so it works offline:
//! htmx and its server-sent-events extension (vendored from npm `htmx.org`
//! 2.0.11 and `htmx-ext-sse` 2.2.4), Mermaid for the flow graph (npm `mermaid`
//! 11.12.1), each under its licence beside it in `assets/`, and the console's
//! own stylesheet and script.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use super::App;

/// `(path, content type, bytes)` of every asset.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/assets/htmx.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/htmx.min.js"),
    ),
    (
        "/assets/htmx-ext-sse.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/htmx-ext-sse.min.js"),
    ),
    (
        "/assets/mermaid.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/mermaid.min.js"),
    ),
    (
        "/assets/console.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/console.css"),
    ),
    (
        "/assets/console.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/console.js"),
    ),
    (
        "/assets/licences.txt",
        "text/plain; charset=utf-8",
        concat!(
            "htmx (npm htmx.org 2.0.11)\n\n",
            include_str!("assets/htmx.LICENSE"),
            "\n\nhtmx-ext-sse (npm htmx-ext-sse 2.2.4)\n\n",
            include_str!("assets/htmx-ext-sse.LICENSE"),
            "\n\nmermaid (npm mermaid 11.12.1)\n\n",
            include_str!("assets/mermaid.LICENSE")
        )
        .as_bytes(),
    ),
];

/// The routes serving [`ASSETS`], open to anyone (nothing in them is secret).
pub(super) fn routes() -> Router<App> {
    ASSETS
        .iter()
        .fold(Router::new(), |router, &(path, kind, bytes)| {
            router.route(
                path,
                get(move || async move {
                    (
                        [
                            (header::CONTENT_TYPE, kind),
                            (header::CACHE_CONTROL, "max-age=3600"),
                        ],
                        bytes,
                    )
                        .into_response()
                }),
            )
        })
}
