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
    ExecutionFigures, Snapshot, WorkspaceFigures, DEFINITION_COUNTS_EVERY, DEFINITION_COUNTS_MAX,
    MAX_DEFINITIONS, QUEUE_CAP, RATE_WINDOW, RUNS_CAP, WINDOW_CAP,
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
    /// timer, would make rates of noise). The ring is not locked while the stores are read.
    /// The error is the answer a request would get.
    pub fn sample_metrics(&self, stores: Stores<'_>, now: f64) -> Result<bool, ApiResponse> {
        let Some(ring) = &self.metrics else {
            return Ok(false);
        };
        sample_into(ring, stores, now, 0.5).map_err(ApiError::into_response)
    }

    /// The current figures in Prometheus' text format (content type
    /// [`PROMETHEUS_CONTENT_TYPE`]): the ring's newest sample when it is at most a period
    /// old (the figures a scrape reads cost nothing then), else read now.
    pub fn prometheus(&self, stores: Stores<'_>, now: f64) -> Result<String, ApiResponse> {
        if let Some(ring) = &self.metrics {
            let ring = lock(ring);
            let period = ring.config().period_seconds;
            if let Some(last) = ring.samples().last() {
                if now >= last.at && now - last.at <= period {
                    return Ok(prometheus::render(last));
                }
            }
        }
        let known = self
            .metrics
            .as_ref()
            .map(|ring| lock(ring).known().clone())
            .unwrap_or_default();
        let snapshot =
            snapshot::take(stores, now, &known, DEFINITION_COUNTS_MAX).map_err(ApiError::into_response)?;
        Ok(prometheus::render(&snapshot))
    }
}

/// Samples into `ring` unless its newest sample is less than `spacing` periods old, or
/// another sample is being taken. The stores are read with the ring unlocked (a slow read
/// never holds up an answer).
fn sample_into(ring: &SharedRing, stores: Stores<'_>, now: f64, spacing: f64) -> Result<bool, ApiError> {
    let (known, up_to) = {
        let mut ring = lock(ring);
        let spaced = match ring.samples().last() {
            Some(last) => now < last.at || now - last.at >= ring.config().period_seconds * spacing,
            None => true,
        };
        if ring.busy || !spaced {
            return Ok(false);
        }
        ring.busy = true;
        let up_to = if ring.definitions_due(now) {
            u64::MAX
        } else {
            ring.config().definition_counts_max
        };
        (ring.known().clone(), up_to)
    };
    // Cleared however the read ends (an error, or a panic in a store).
    struct Busy<'r>(&'r SharedRing);
    impl Drop for Busy<'_> {
        fn drop(&mut self) {
            lock(self.0).busy = false;
        }
    }
    let _busy = Busy(ring);
    let sample = snapshot::take(stores, now, &known, up_to)?;
    lock(ring).push(sample);
    Ok(true)
}

impl Call<'_> {
    /// `GET /api/metrics[?since=T]`: the ring's samples taken after `since` (all by default),
    /// oldest first, or the current snapshot alone when the API keeps no ring.
    pub(crate) fn metrics(&self) -> ApiResult {
        let params = Params::new(self.request.query, &["since"], self.now)?;
        let since = params.time("since")?;
        let Some(ring) = &self.api.metrics else {
            let sample = snapshot::take(self.stores, self.now, &Default::default(), DEFINITION_COUNTS_MAX)?;
            return Ok(json!({
                "live": false,
                "period": Value::Null,
                "keep": 1,
                "samples": [sample],
                "now": self.now,
            }));
        };
        // No sampler ran for two periods (or none yet): this request samples.
        sample_into(ring, self.stores, self.now, 2.0)?;
        let ring = lock(ring);
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
