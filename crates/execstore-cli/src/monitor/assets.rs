//! The UI's static files (this crate's `web/`, inside its package so that `cargo install`
//! builds it), embedded in the binary so the monitor is one file to run: the shell's, listed
//! here, and every view (`web/views/*.js`), listed by build.rs.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::AppState;

/// Each file: its URL path, its media type and its bytes.
const FILES: &[(&str, &str, &str)] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("../../web/index.html"),
    ),
    (
        "/app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/app.js"),
    ),
    (
        "/api.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/api.js"),
    ),
    (
        "/dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/dom.js"),
    ),
    (
        "/format.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/format.js"),
    ),
    (
        "/records.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/records.js"),
    ),
    (
        "/route.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/route.js"),
    ),
    (
        "/shell.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/shell.js"),
    ),
    (
        "/filters.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/filters.js"),
    ),
    (
        "/where.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/where.js"),
    ),
    (
        "/actions.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/actions.js"),
    ),
    (
        "/recover.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/recover.js"),
    ),
    (
        "/graph.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/graph.js"),
    ),
    (
        "/reason.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/reason.js"),
    ),
    (
        "/audit.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/audit.js"),
    ),
    (
        "/saved-views.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/saved-views.js"),
    ),
    // @dagrejs/dagre 3.1.3 from the npm registry (MIT): see web/vendor/README.md.
    (
        "/vendor/dagre.esm.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/vendor/dagre.esm.js"),
    ),
    // uplot 1.6.32 from the npm registry (MIT): the Metrics view's charts.
    (
        "/vendor/uPlot.esm.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/vendor/uPlot.esm.js"),
    ),
    (
        "/vendor/uPlot.min.css",
        "text/css; charset=utf-8",
        include_str!("../../web/vendor/uPlot.min.css"),
    ),
    (
        "/style.css",
        "text/css; charset=utf-8",
        include_str!("../../web/style.css"),
    ),
    (
        "/favicon.svg",
        "image/svg+xml",
        include_str!("../../web/favicon.svg"),
    ),
];

/// Each view's module (`web/views/*.js`): its URL path and its text.
const VIEWS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/web_views.rs"));

pub(super) fn routes() -> Router<AppState> {
    let mut router = Router::new();
    for &(path, media_type, body) in FILES {
        router = router.route(path, get(move || async move { file(media_type, body) }));
    }
    for &(path, body) in VIEWS {
        router = router.route(
            path,
            get(move || async move { file("text/javascript; charset=utf-8", body) }),
        );
    }
    router
}

fn file(media_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(media_type)),
            // Embedded in this very binary: a browser may keep them only until it asks again.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}
