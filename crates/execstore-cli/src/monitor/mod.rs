//! `execstore monitor` (and the end of `execstore demo`): a web dashboard of a store, served
//! by axum over any [`ExecutionStore`].
//!
//! The server is the JSON API of [`execstore_monitor_api`] (documented in docs/monitor.md,
//! "The JSON API"; the same code answers the edge handler and the in-browser monitor) plus the
//! static UI of `web/`, embedded in the binary. Store calls are blocking, so each runs on
//! tokio's blocking pool. Writes (acks, timer removal) need the token given at start;
//! without one every write answers 403.
//!
//! Live updates are polled, not pushed: the UI asks `/api/changes` for the store's change
//! token every couple of seconds and reads again only when it moved. A push channel would
//! still have to poll the store (another process, harel for one, writes the file and
//! announces nothing), and the same UI must run over the edge `fetch` handler and the
//! in-browser store, where a plain request and response is all there is.

mod api;
mod assets;
mod metrics;
mod server;
mod shared;
mod stream;
pub mod tokens;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::Context as _;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use execstore::workspace::WorkspaceStorage;
use execstore::ExecutionStore;
use execstore_monitor_api::metrics::MetricsConfig;
use execstore_monitor_api::{MonitorApi, Stores};

pub use server::Limits;

/// The port tried first when none is given (a free one is taken if it is busy).
pub const DEFAULT_PORT: u16 = 8421;

/// How the monitor is served.
#[derive(Clone, Debug)]
pub struct Config {
    /// The address to listen on.
    pub bind: IpAddr,
    /// The port; `None`: [`DEFAULT_PORT`], or any free port if that one is taken; `Some(0)`:
    /// any free port.
    pub port: Option<u16>,
    /// The tokens writes need (none: read-only): `--token`'s one admin, or `--tokens`'s.
    pub tokens: execstore_monitor_api::Tokens,
    /// What the store is, for the UI's header (a path, or a server without its password).
    pub store_label: String,
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The table-name prefix, if any.
    pub prefix: Option<String>,
    /// Timeouts and the connection cap.
    pub limits: Limits,
    /// What the operator should know about the store (`/api/info`'s `warnings`, shown by the
    /// UI), e.g. a workspace log at a schema version this build does not know.
    pub warnings: Vec<String>,
    /// How often the metrics are sampled and how many samples are kept (in memory).
    pub metrics: MetricsConfig,
}

/// What a monitor serves: the execution store, the workspace log, or both (whatever the
/// target holds).
#[derive(Clone, Default)]
pub struct Served {
    /// The execution store (harel's tables), if the target holds one.
    pub executions: Option<Arc<dyn ExecutionStore>>,
    /// The workspace log (reflexr's tables), if the target holds one.
    pub workspaces: Option<Arc<dyn WorkspaceStorage>>,
    /// Where the audit log and saved views are kept (the store's `execstore_audit` and
    /// `execstore_views`); `None`: in the server's memory.
    pub operator: Option<Arc<dyn execstore::operator::OperatorStore>>,
}

impl Served {
    /// The API's view of them.
    pub(crate) fn stores(&self) -> Stores<'_> {
        Stores {
            executions: self.executions.as_deref(),
            workspaces: self.workspaces.as_deref(),
        }
    }
}

/// What every request handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) served: Served,
    /// The API over the store: what `/api/info` says, and the write token.
    pub(crate) api: Arc<MonitorApi>,
    /// Answers being sent, shared by identical requests (see `shared.rs`).
    pub(crate) answers: Arc<shared::Answers>,
    /// How long a request body may take to arrive.
    pub(crate) body_timeout: std::time::Duration,
}

/// Serves the monitor over `store` until Ctrl-C. `announce` is called with the URL once the
/// socket listens (so a caller printing it never prints a URL that does not answer yet).
/// Ctrl-C ends it within 2 s, answers in flight or not (see `server.rs`).
pub fn serve(store: Served, config: &Config, announce: &mut dyn FnMut(&str)) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .enable_io()
        .enable_time()
        .build()
        .context("cannot start the server's runtime")?;
    let served = runtime.block_on(async {
        let listener = bind(config).await?;
        let addr = listener.local_addr().context("cannot read the bound address")?;
        let state = app_state(store, config);
        // Sampled while the server runs; the task ends with the runtime.
        tokio::spawn(metrics::sample(state.clone()));
        let app = router(state, addr);
        announce(&url_of(addr));
        server::serve(listener, app, config.limits, async {
            // No signal handler (rare): serve until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await;
        anyhow::Ok(())
    });
    // A store call still running on the blocking pool is not waited for.
    runtime.shutdown_timeout(server::RUNTIME_GRACE);
    served
}

async fn bind(config: &Config) -> anyhow::Result<tokio::net::TcpListener> {
    let at = |port| SocketAddr::new(config.bind, port);
    match config.port {
        Some(port) => tokio::net::TcpListener::bind(at(port))
            .await
            .with_context(|| format!("cannot listen on {}", at(port))),
        None => match tokio::net::TcpListener::bind(at(DEFAULT_PORT)).await {
            Ok(listener) => Ok(listener),
            Err(_) => tokio::net::TcpListener::bind(at(0))
                .await
                .with_context(|| format!("cannot listen on {}", at(0))),
        },
    }
}

/// The URL a browser opens for `addr`.
fn url_of(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    format!("http://{host}:{}/", addr.port())
}

fn app_state(served: Served, config: &Config) -> AppState {
    let mut info = serde_json::Map::new();
    info.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    info.insert("store".into(), config.store_label.clone().into());
    info.insert("backend".into(), config.backend.into());
    info.insert("prefix".into(), config.prefix.clone().into());
    info.insert("warnings".into(), config.warnings.clone().into());
    let mut api = MonitorApi::with_tokens(info, config.tokens.clone()).with_metrics(config.metrics);
    if let Some(store) = served.operator.clone() {
        api = api.with_operator(store);
    }
    AppState {
        served,
        api: Arc::new(api),
        answers: Arc::default(),
        body_timeout: config.limits.idle_timeout,
    }
}

fn router(state: AppState, addr: SocketAddr) -> Router {
    let hosts = Arc::new(allowed_hosts(addr));
    stream::routes()
        .merge(api::routes())
        .merge(metrics::routes())
        .merge(assets::routes())
        .with_state(state)
        .layer(middleware::from_fn(security_headers))
        .layer(middleware::from_fn_with_state(hosts, check_host))
}

/// The `Host` headers a loopback-bound monitor answers (`None`: any, when bound to another
/// address on purpose). A page on another site that rebinds its DNS name to 127.0.0.1
/// sends its own name and is refused, so it cannot read the store through the browser.
fn allowed_hosts(addr: SocketAddr) -> Option<Vec<String>> {
    if !addr.ip().is_loopback() {
        return None;
    }
    let port = addr.port();
    Some(vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        addr.to_string(),
    ])
}

async fn check_host(State(hosts): State<Arc<Option<Vec<String>>>>, request: Request, next: Next) -> Response {
    // Two `Host` headers name no one host (RFC 9112, 3.2: a 400), whatever this monitor
    // would answer for either.
    let mut given = request.headers().get_all(header::HOST).iter();
    let host = given.next();
    if given.next().is_some() {
        return api::error_response(
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
            "a request names one Host, not several",
        );
    }
    if let Some(allowed) = hosts.as_ref() {
        let host = host.and_then(|h| h.to_str().ok()).unwrap_or("");
        if !allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
            return api::error_response(
                StatusCode::MISDIRECTED_REQUEST,
                "BAD_HOST",
                format!("this monitor answers {} only", allowed.join(", ")),
            );
        }
    }
    next.run(request).await
}

/// Headers every answer carries: the UI loads only its own files and never runs inline
/// code (so even a rendering bug could not run a stored `onerror=`), nothing is framed,
/// and API answers are never cached.
async fn security_headers(request: Request, next: Next) -> Response {
    let is_api = request.uri().path().starts_with("/api/") || request.uri().path() == "/metrics";
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if is_api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// `url` without its password, for display.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            redact_url("postgres://me:secret@db:5432/x"),
            "postgres://me@db:5432/x"
        );
        assert_eq!(redact_url("postgres://db/x"), "postgres://db/x");
        assert_eq!(redact_url("/tmp/a@b.db"), "/tmp/a@b.db");
    }

    #[test]
    fn urls_name_a_reachable_host() {
        assert_eq!(url_of("0.0.0.0:80".parse().unwrap()), "http://127.0.0.1:80/");
        assert_eq!(url_of("[::1]:8".parse().unwrap()), "http://[::1]:8/");
    }
}
