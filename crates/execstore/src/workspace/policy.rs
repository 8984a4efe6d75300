//! reflexr's `RunPolicy`: what `due_runs` must know about the rules to find runs that can start.

use super::model::{Run, RunStatus};
use std::collections::BTreeSet;

/// Which rules are disabled, ordered by scope, and blocking (ordered ones whose dead-lettered
/// runs hold their scope). A rule named in no set has every due run returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunPolicy {
    /// Rules whose runs are left out altogether.
    pub disabled: BTreeSet<String>,
    /// Rules whose runs execute in firing order per scope (`ordering="scope"`).
    pub ordered: BTreeSet<String>,
    /// Ordered rules whose dead-lettered runs hold back their scope (`on_dead_letter="block"`).
    pub blocking: BTreeSet<String>,
}

impl RunPolicy {
    /// A policy naming no rule: every due run is returned.
    pub fn new() -> Self {
        RunPolicy::default()
    }

    /// Whether a run holds back the later runs of its scope: it is of an ordered rule and is
    /// pending, retrying or running, or dead-lettered under a blocking rule.
    pub fn holds(&self, run: &Run) -> bool {
        self.ordered.contains(run.rule())
            && (run.status().is_holding()
                || (run.status() == RunStatus::Dead && self.blocking.contains(run.rule())))
    }

    /// Whether a run's rule is ordered and blocking (effective only when also ordered).
    pub fn blocks(&self, rule: &str) -> bool {
        self.ordered.contains(rule) && self.blocking.contains(rule)
    }
}
