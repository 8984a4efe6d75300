//! The ring of samples a running monitor keeps in memory: one every period, the last `keep`
//! of them, and nothing else (no database).

use std::collections::{BTreeSet, VecDeque};

use super::snapshot::Snapshot;

/// How often the monitor samples and how many samples it keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricsConfig {
    /// Seconds between two samples (at least 1).
    pub period_seconds: f64,
    /// How many samples are kept (at least 2); the oldest goes when one more comes.
    pub keep: usize,
    /// Up to this many executions in the store every sample counts by definition; past it,
    /// every [`super::DEFINITION_COUNTS_EVERY`] seconds (default
    /// [`super::DEFINITION_COUNTS_MAX`]).
    pub definition_counts_max: u64,
}

impl Default for MetricsConfig {
    /// One sample every 10 s, 360 kept: the last hour.
    fn default() -> Self {
        MetricsConfig {
            period_seconds: 10.0,
            keep: 360,
            definition_counts_max: super::DEFINITION_COUNTS_MAX,
        }
    }
}

impl MetricsConfig {
    /// Checks the bounds; the error names the one out of them.
    pub fn check(&self) -> Result<(), String> {
        if !(self.period_seconds.is_finite() && (1.0..=86_400.0).contains(&self.period_seconds)) {
            return Err(format!(
                "the metrics period {} s is not between 1 s and 1 day",
                self.period_seconds
            ));
        }
        if !(2..=100_000).contains(&self.keep) {
            return Err(format!(
                "{} metrics samples kept is not between 2 and 100000",
                self.keep
            ));
        }
        Ok(())
    }
}

/// The samples, oldest first, with the definitions seen so far.
#[derive(Clone, Debug)]
pub struct MetricsRing {
    config: MetricsConfig,
    samples: VecDeque<Snapshot>,
    /// Every definition a sample saw, counted by status in the next ones.
    known: BTreeSet<String>,
    /// A sample is being taken (the stores are being read, the ring unlocked).
    pub(crate) busy: bool,
}

impl MetricsRing {
    /// An empty ring.
    pub fn new(config: MetricsConfig) -> Self {
        MetricsRing {
            config,
            samples: VecDeque::with_capacity(config.keep.min(4096)),
            known: BTreeSet::new(),
            busy: false,
        }
    }

    /// Its period and size.
    pub fn config(&self) -> MetricsConfig {
        self.config
    }

    /// The samples kept, oldest first.
    pub fn samples(&self) -> impl ExactSizeIterator<Item = &Snapshot> {
        self.samples.iter()
    }

    /// The definitions counted one by one.
    pub fn known(&self) -> &BTreeSet<String> {
        &self.known
    }

    /// Whether the next sample must count by definition: none counted yet, or the last count
    /// is [`super::DEFINITION_COUNTS_EVERY`] old.
    pub(crate) fn definitions_due(&self, now: f64) -> bool {
        let last = self
            .samples
            .iter()
            .rev()
            .find_map(|s| s.executions.as_ref().and_then(|e| e.by_definition_at));
        last.is_none_or(|at| now - at >= super::DEFINITION_COUNTS_EVERY || now < at)
    }

    /// Whether a sample is due at `now`: none yet, or the last is a period old (a clock that
    /// went back counts as due too, so a ring never stalls).
    pub fn due(&self, now: f64) -> bool {
        match self.samples.back() {
            None => true,
            Some(last) => now - last.at >= self.config.period_seconds || now < last.at,
        }
    }

    /// Adds `sample`, setting its per-minute rates from the previous sample (the log's head
    /// per workspace), and drops the oldest past `keep`.
    pub fn push(&mut self, mut sample: Snapshot) {
        if let Some(previous) = self.samples.back() {
            rates(previous, &mut sample);
            carry_definitions(previous, &mut sample);
        }
        if let Some(executions) = &sample.executions {
            self.known.extend(executions.seen.iter().cloned());
        }
        if self.samples.len() >= self.config.keep {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }
}

/// A sample that did not count by definition carries the previous sample's counts (with
/// the time they were counted).
fn carry_definitions(previous: &Snapshot, sample: &mut Snapshot) {
    let (Some(before), Some(now)) = (&previous.executions, &mut sample.executions) else {
        return;
    };
    if now.by_definition_at.is_none() {
        now.by_definition.clone_from(&before.by_definition);
        now.by_definition_at = before.by_definition_at;
    }
}

/// Per-minute rates of `sample` against the one before: `(head - head before) / seconds * 60`
/// for each workspace both hold (a head that went back, a log recreated, gives no rate).
fn rates(previous: &Snapshot, sample: &mut Snapshot) {
    let seconds = sample.at - previous.at;
    let (Some(before), Some(now)) = (&previous.workspaces, &mut sample.workspaces) else {
        return;
    };
    if seconds <= 0.0 {
        return;
    }
    for ws in now.iter_mut() {
        let prior = before
            .iter()
            .find(|b| b.tenant == ws.tenant && b.workspace == ws.workspace);
        if let Some(prior) = prior {
            if ws.head_seq >= prior.head_seq {
                ws.log_rate_per_minute = Some((ws.head_seq - prior.head_seq) as f64 / seconds * 60.0);
            }
        }
    }
}
