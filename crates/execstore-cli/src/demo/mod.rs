//! `execstore demo`: a realistic store, written only through [`ExecutionStore`] calls, the
//! way an engine, its relay and its timer sweep would write it.
//!
//! Three statecharts: `orders` (cart to delivery), `payments` (authorize, capture) and
//! `fulfilment`, whose `fulfilment.packing` state is orthogonal: entering it forks three
//! region children (pick, label, invoice) through spawn intents, and it joins when all of
//! them reported `Finished`. Every execution advances one commit per event (the CAS write,
//! its emits, the dedupe marker, its timer changes and a trace step in harel's shape), so
//! versions and timelines vary. The relay acks what it delivered and created; what it has
//! not reached yet stays in the outbox and the spawn queue.
//!
//! Timestamps are the wall clock minus offsets drawn from the seed, so the same seed writes
//! the same store apart from the clock. Each root execution's story is first played against
//! a scratch [`MemoryStore`] to learn how long it lasts, then replayed with the same random
//! draws so that its last step lands a drawn idle time before now.

mod charts;
mod data;
mod fulfilment;
mod plan;
mod story;
mod summary;
#[cfg(test)]
mod tests;
mod workspaces;

use std::collections::BTreeMap;

use execstore::executions::paging;
use execstore::kit::pyjson::python_float_repr;
use execstore::kit::validate::MAX_PAGE;
use execstore::{
    executions::{ChildState, Event, JsonObject, ListQuery, Spawn, Status, TraceStep},
    Effects, Execution, ExecutionStore, MemoryStore, Result,
};
use fastrand::Rng;
use serde_json::{json, Map, Value};

use crate::commands::ALL_TIMERS;
use crate::time;

use data::*;
use plan::*;
use story::*;
pub use summary::summarize;
pub use workspaces::{generate_workspaces, WorkspaceSummary};

/// What to write.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// How many executions, roots and children together.
    pub executions: u32,
    /// The generator's seed.
    pub seed: u64,
    /// The wall clock the stamps are relative to, epoch seconds.
    pub now: f64,
}

/// Writes the demo executions into `store`; `progress` is told how many executions are
/// written so far.
pub fn generate(store: &dyn ExecutionStore, options: &Options, progress: &mut dyn FnMut(u64)) -> Result<()> {
    let mut rng = Rng::with_seed(options.seed);
    let mut spawn_after = None;
    let mut written: u64 = 0;
    let total = u64::from(options.executions);
    let mut first = FIRST_PLANS.iter();
    while written < total {
        let remaining = total - written;
        let plan = match first.next() {
            Some(plan) if plan.size() <= remaining => *plan,
            _ => Plan::draw(&mut rng, remaining),
        };
        let idle = plan.idle(&mut rng);
        // Dry run: how long does this story last?
        let scratch = MemoryStore::new();
        let mut dry = Story::new(&scratch, rng.clone(), 0.0, options.now, None);
        dry.play(plan)?;
        // The real run, with the same draws, ending `idle` seconds before now.
        let base = options.now - idle - dry.latest;
        let mut story = Story::new(store, rng, base, options.now, spawn_after);
        story.play(plan)?;
        rng = story.rng;
        spawn_after = story.spawn_after;
        written += story.written;
        progress(written);
    }
    Ok(())
}
