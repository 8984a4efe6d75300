//! The monitor's metrics: the task that samples the stores into the API's ring every period
//! while the server runs (in memory only; `GET /api/metrics` answers the ring), and
//! `GET /metrics`, the current figures in Prometheus' text format. docs/metrics.md lists
//! them.

use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use execstore_monitor_api::metrics::PROMETHEUS_CONTENT_TYPE;

use super::AppState;
use crate::time;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/metrics", get(prometheus))
}

/// Samples every period until the runtime stops. A sample that fails (the store is away) is
/// skipped: the next tick tries again, and `/api/metrics` shows the gap.
pub(super) async fn sample(state: AppState) {
    let Some(config) = state.api.metrics_config() else {
        return;
    };
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(config.period_seconds));
    // A slow sample delays the next one rather than bunching samples up.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let state = state.clone();
        let _ =
            tokio::task::spawn_blocking(move || state.api.sample_metrics(state.served.stores(), time::now()))
                .await;
    }
}

/// `GET /metrics`: read now, like every read; no token needed.
async fn prometheus(State(state): State<AppState>) -> Response {
    let answer =
        tokio::task::spawn_blocking(move || state.api.prometheus(state.served.stores(), time::now())).await;
    match answer {
        Ok(Ok(text)) => {
            let mut response = text.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(PROMETHEUS_CONTENT_TYPE),
            );
            response
        }
        Ok(Err(error)) => {
            let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, Json(error.body)).into_response()
        }
        Err(e) => super::api::error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string()),
    }
}
