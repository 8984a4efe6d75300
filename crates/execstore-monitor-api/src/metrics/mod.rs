//! The monitor's metrics: a [`Snapshot`] of figures read from the stores through their
//! contracts (`snapshot.rs`), a [`MetricsRing`] of samples kept in memory (`ring.rs`), and the
//! same figures in Prometheus' text format (`prometheus.rs`). docs/metrics.md documents every
//! figure.
//!
//! `GET /api/metrics` answers the ring's samples when the API has one
//! ([`MonitorApi::with_metrics`]: the native monitor, sampled by its own task through
//! [`MonitorApi::sample_metrics`]), or the current snapshot alone (the edge). `GET /metrics`
//! (served by the host, outside `/api/`) is [`MonitorApi::prometheus`].

mod prometheus;
mod ring;
mod snapshot;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};

pub use prometheus::CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE;
pub use ring::{MetricsConfig, MetricsRing};
pub use snapshot::{
    ExecutionFigures, Snapshot, WorkspaceFigures, MAX_DEFINITIONS, QUEUE_CAP, RATE_WINDOW, RUNS_CAP,
    WINDOW_CAP,
};

use crate::params::Params;
use crate::{ApiError, ApiResponse, ApiResult, Call, MonitorApi, Stores};

/// The ring, shared by the API's clones and the task that samples.
pub(crate) type SharedRing = Arc<Mutex<MetricsRing>>;

fn lock(ring: &SharedRing) -> MutexGuard<'_, MetricsRing> {
    // A panic while sampling leaves a ring that is still whole (a push is the last step).
    ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MonitorApi {
    /// This API keeping a ring of samples (`config`) for `GET /api/metrics`. Its host samples
    /// every `config.period_seconds` with [`MonitorApi::sample_metrics`]; a request that finds
    /// the ring empty, or its newest sample more than two periods old (no sampler running),
    /// takes one itself.
    pub fn with_metrics(mut self, config: MetricsConfig) -> Self {
        self.metrics = Some(Arc::new(Mutex::new(MetricsRing::new(config))));
        self
    }

    /// The ring's period and size, if the API keeps one.
    pub fn metrics_config(&self) -> Option<MetricsConfig> {
        self.metrics.as_ref().map(|ring| lock(ring).config())
    }

    /// Takes a sample at `now` and adds it to the ring (nothing without a ring). A sample
    /// less than half a period after the newest one is not added (two samplers, or a late
    /// timer, would make rates of noise). The error is the answer a request would get.
    pub fn sample_metrics(&self, stores: Stores<'_>, now: f64) -> Result<bool, ApiResponse> {
        let Some(ring) = &self.metrics else {
            return Ok(false);
        };
        let mut ring = lock(ring);
        sample_into(&mut ring, stores, now, 0.5).map_err(ApiError::into_response)
    }

    /// The current figures in Prometheus' text format (content type
    /// [`PROMETHEUS_CONTENT_TYPE`]), read now (the definitions the ring knows are counted too).
    pub fn prometheus(&self, stores: Stores<'_>, now: f64) -> Result<String, ApiResponse> {
        let known = self
            .metrics
            .as_ref()
            .map(|ring| lock(ring).known().clone())
            .unwrap_or_default();
        let snapshot = snapshot::take(stores, now, &known).map_err(ApiError::into_response)?;
        Ok(prometheus::render(&snapshot))
    }
}

/// Samples into `ring` unless its newest sample is less than `spacing` periods old.
fn sample_into(ring: &mut MetricsRing, stores: Stores<'_>, now: f64, spacing: f64) -> Result<bool, ApiError> {
    let period = ring.config().period_seconds;
    if let Some(last) = ring.samples().last() {
        if now >= last.at && now - last.at < period * spacing {
            return Ok(false);
        }
    }
    let sample = snapshot::take(stores, now, ring.known())?;
    ring.push(sample);
    Ok(true)
}

impl Call<'_> {
    /// `GET /api/metrics[?since=T]`: the ring's samples taken after `since` (all by default),
    /// oldest first, or the current snapshot alone when the API keeps no ring.
    pub(crate) fn metrics(&self) -> ApiResult {
        let params = Params::new(self.request.query, &["since"], self.now)?;
        let since = params.time("since")?;
        let Some(ring) = &self.api.metrics else {
            let sample = snapshot::take(self.stores, self.now, &Default::default())?;
            return Ok(json!({
                "live": false,
                "period": Value::Null,
                "keep": 1,
                "samples": [sample],
                "now": self.now,
            }));
        };
        let mut ring = lock(ring);
        // No sampler ran for two periods (or none yet): this request samples.
        sample_into(&mut ring, self.stores, self.now, 2.0)?;
        let config = ring.config();
        let samples: Vec<&Snapshot> = ring
            .samples()
            .filter(|s| since.is_none_or(|t| s.at > t))
            .collect();
        Ok(json!({
            "live": true,
            "period": config.period_seconds,
            "keep": config.keep,
            "samples": samples,
            "now": self.now,
        }))
    }
}
