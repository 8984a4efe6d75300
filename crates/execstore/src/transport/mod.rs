//! The transport: a queue of [`Event`]s per group (an execution id) with at most one message of
//! a group in flight, as harel 0.9's `Transport` protocol defines it (what its
//! `DistributedRunner` and workers move events on).
//!
//! * [`Transport::publish`] appends an event to its group's queue; the group's priority is
//!   fixed by the first publish into a group that has no messages.
//! * [`Transport::claim`] leases the oldest message of the group that waited longest (the
//!   least recently claimed, never-claimed groups first, ties by arrival) among those with at
//!   least `min_priority` and nothing in flight, for `visibility` seconds.
//! * [`Transport::ack`] removes the message and frees its group (a drained group is dropped,
//!   so its priority is set again by the next publish); [`Transport::nack`] makes it
//!   claimable again at once, or parks it (its group blocked) for `delay` seconds.
//!
//! Times are epoch seconds the caller passes in (the core keeps no clock), so a lease that
//! lapsed, or a park that ended, is judged by the caller's clock. Delivery is at least once:
//! a worker that dies leaves its message leased until `visibility` passes.
//!
//! [`MemoryTransport`] keeps the queues in memory; `execstore-sqlite` keeps them in harel's
//! own `<prefix>_transport_messages` and `<prefix>_transport_groups` tables. The behaviour
//! suite is `execstore::conformance::transport` (feature `conformance`).

mod memory;

pub use memory::MemoryTransport;

use crate::error::{Result, StoreError};
use crate::executions::Event;
use crate::kit::validate::{check_event, check_id, check_time, MAX_DOCUMENT_BYTES};

/// The `locked_by` of a message parked by [`Transport::nack`] with a delay (harel's
/// `PARKED`): not claimable, and its group blocked, until the delay passes.
pub const PARKED: &str = "__parked__";

/// The highest priority a group may have (priorities are 0..=4, as harel's executions').
pub const MAX_PRIORITY: i64 = 4;

/// A claimed message's handle: what [`Transport::ack`] and [`Transport::nack`] take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The message's sequence number (increasing in publish order).
    pub seq: i64,
    /// Its group.
    pub group_id: String,
    /// A fencing token where the backend uses one (empty on SQLite and in memory, as harel's).
    pub token: String,
}

/// What [`Transport::claim`] hands out: the lease and the message's event.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The handle to ack or nack it with.
    pub lease: Lease,
    /// The event as published.
    pub event: Event,
}

/// A queue per group with one message of a group in flight at a time (module docs). All
/// methods take `&self`, so one transport is shared between threads; backends on a database
/// may be opened by several processes at once.
pub trait Transport: Send + Sync {
    /// Appends `event` to `group_id`'s queue and returns its sequence number. `priority`
    /// (0..=4) is stored only when the group has no messages yet; later publishes keep the
    /// group's priority. Publish is one transaction: the message and its group together.
    fn publish(&self, group_id: &str, event: &Event, priority: i64) -> Result<i64>;

    /// Leases the head of the group that waited longest among those with `priority >=
    /// min_priority` and nothing in flight at `now` (a lease or park ending before `now` is
    /// no longer in flight), until `now + visibility`; `None` if nothing is claimable.
    fn claim(
        &self,
        worker_id: &str,
        now: f64,
        visibility: f64,
        min_priority: i64,
    ) -> Result<Option<Delivery>>;

    /// Removes the leased message and frees its group; a message already gone is no error.
    fn ack(&self, lease: &Lease, now: f64) -> Result<()>;

    /// Returns the leased message: claimable at once with `delay` 0, parked until `now +
    /// delay` otherwise. A message already gone is no error.
    fn nack(&self, lease: &Lease, now: f64, delay: f64) -> Result<()>;

    /// How many messages are queued (leased and parked ones included), for monitors and tests.
    fn depth(&self) -> Result<u64>;
}

/// Checks a publish and serializes its event as harel stores it (pydantic's
/// `model_dump_json`): the text a backend writes.
pub fn prepare_publish(group_id: &str, event: &Event, priority: i64) -> Result<String> {
    check_id("group_id", group_id)?;
    check_priority("priority", priority)?;
    check_event("event", event)?;
    let json = serde_json::to_string(event).map_err(|e| StoreError::invalid("event", e.to_string()))?;
    if json.len() > MAX_DOCUMENT_BYTES {
        return Err(StoreError::invalid(
            "event",
            format!(
                "{} bytes of JSON is more than the limit of {MAX_DOCUMENT_BYTES}",
                json.len()
            ),
        ));
    }
    Ok(json)
}

/// Checks a claim's arguments.
pub fn check_claim(worker_id: &str, now: f64, visibility: f64, min_priority: i64) -> Result<()> {
    check_id("worker_id", worker_id)?;
    check_time("now", now)?;
    check_time("visibility", visibility)?;
    check_time("now + visibility", now + visibility)?;
    check_priority("min_priority", min_priority)
}

/// Checks an ack's or nack's lease and times (`delay` 0 for an ack).
pub fn check_release(lease: &Lease, now: f64, delay: f64) -> Result<()> {
    crate::kit::validate::check_seq("lease.seq", lease.seq)?;
    check_id("lease.group_id", &lease.group_id)?;
    check_time("now", now)?;
    check_time("delay", delay)?;
    check_time("now + delay", now + delay)
}

fn check_priority(field: &str, priority: i64) -> Result<()> {
    if (0..=MAX_PRIORITY).contains(&priority) {
        Ok(())
    } else {
        Err(StoreError::invalid(
            field,
            format!("{priority} is not in 0..={MAX_PRIORITY}"),
        ))
    }
}

/// A shared transport is a transport (so one handle can serve several owners).
impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn publish(&self, group_id: &str, event: &Event, priority: i64) -> Result<i64> {
        (**self).publish(group_id, event, priority)
    }
    fn claim(
        &self,
        worker_id: &str,
        now: f64,
        visibility: f64,
        min_priority: i64,
    ) -> Result<Option<Delivery>> {
        (**self).claim(worker_id, now, visibility, min_priority)
    }
    fn ack(&self, lease: &Lease, now: f64) -> Result<()> {
        (**self).ack(lease, now)
    }
    fn nack(&self, lease: &Lease, now: f64, delay: f64) -> Result<()> {
        (**self).nack(lease, now, delay)
    }
    fn depth(&self) -> Result<u64> {
        (**self).depth()
    }
}
