//! [`MemoryTransport`]: the transport's queues in memory, with the semantics of harel's tables
//! (a message row per event, a group row per non-empty queue), for tests and single-process
//! use. Clones share the queues.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{check_claim, check_release, prepare_publish, Delivery, Lease, Transport, PARKED};
use crate::error::{Result, StoreError};
use crate::executions::Event;

/// A message row.
struct Message {
    group_id: String,
    event: String,
    locked_by: Option<String>,
    lock_expiry: Option<f64>,
}

/// A group row: its round-robin key and priority.
struct Group {
    last_claimed_at: f64,
    priority: i64,
    /// Arrival order among groups (SQLite's rowid).
    arrival: u64,
}

#[derive(Default)]
struct Inner {
    next_seq: i64,
    next_arrival: u64,
    messages: BTreeMap<i64, Message>,
    groups: HashMap<String, Group>,
}

impl Inner {
    fn in_flight(&self, group_id: &str, now: f64) -> bool {
        self.messages.values().any(|m| {
            m.group_id == group_id && m.locked_by.is_some() && m.lock_expiry.is_some_and(|e| e >= now)
        })
    }

    fn head(&self, group_id: &str) -> Option<i64> {
        self.messages
            .iter()
            .find(|(_, m)| m.group_id == group_id)
            .map(|(seq, _)| *seq)
    }
}

/// The transport in memory (see the module docs). `Clone` shares the queues.
#[derive(Clone, Default)]
pub struct MemoryTransport {
    inner: Arc<Mutex<Inner>>,
}

impl MemoryTransport {
    /// An empty transport.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Transport for MemoryTransport {
    fn publish(&self, group_id: &str, event: &Event, priority: i64) -> Result<i64> {
        let json = prepare_publish(group_id, event, priority)?;
        let mut inner = self.lock();
        inner.next_seq += 1;
        let seq = inner.next_seq;
        inner.messages.insert(
            seq,
            Message {
                group_id: group_id.to_owned(),
                event: json,
                locked_by: None,
                lock_expiry: None,
            },
        );
        if !inner.groups.contains_key(group_id) {
            inner.next_arrival += 1;
            let arrival = inner.next_arrival;
            inner.groups.insert(
                group_id.to_owned(),
                Group {
                    last_claimed_at: 0.0,
                    priority,
                    arrival,
                },
            );
        }
        Ok(seq)
    }

    fn claim(
        &self,
        worker_id: &str,
        now: f64,
        visibility: f64,
        min_priority: i64,
    ) -> Result<Option<Delivery>> {
        check_claim(worker_id, now, visibility, min_priority)?;
        let mut inner = self.lock();
        let mut order: Vec<(&String, &Group)> = inner
            .groups
            .iter()
            .filter(|(_, g)| g.priority >= min_priority)
            .collect();
        order.sort_by(|a, b| {
            a.1.last_claimed_at
                .total_cmp(&b.1.last_claimed_at)
                .then(a.1.arrival.cmp(&b.1.arrival))
        });
        let found = order.iter().find_map(|(id, _)| {
            let head = inner.head(id)?;
            (!inner.in_flight(id, now)).then(|| ((*id).clone(), head))
        });
        let Some((group_id, seq)) = found else {
            return Ok(None);
        };
        if let Some(g) = inner.groups.get_mut(&group_id) {
            g.last_claimed_at = now;
        }
        let message = inner.messages.get_mut(&seq).ok_or_else(|| StoreError::Corrupt {
            what: "transport message".into(),
            reason: format!("message {seq} vanished under the lock"),
        })?;
        message.locked_by = Some(worker_id.to_owned());
        message.lock_expiry = Some(now + visibility);
        let event = serde_json::from_str(&message.event).map_err(|e| StoreError::Corrupt {
            what: "transport message".into(),
            reason: e.to_string(),
        })?;
        Ok(Some(Delivery {
            lease: Lease {
                seq,
                group_id,
                token: String::new(),
            },
            event,
        }))
    }

    fn ack(&self, lease: &Lease, now: f64) -> Result<()> {
        check_release(lease, now, 0.0)?;
        let mut inner = self.lock();
        inner.messages.remove(&lease.seq);
        if inner.head(&lease.group_id).is_none() {
            inner.groups.remove(&lease.group_id);
        }
        Ok(())
    }

    fn nack(&self, lease: &Lease, now: f64, delay: f64) -> Result<()> {
        check_release(lease, now, delay)?;
        let mut inner = self.lock();
        if let Some(m) = inner.messages.get_mut(&lease.seq) {
            if delay > 0.0 {
                m.locked_by = Some(PARKED.to_owned());
                m.lock_expiry = Some(now + delay);
            } else {
                m.locked_by = None;
                m.lock_expiry = None;
            }
        }
        Ok(())
    }

    fn depth(&self) -> Result<u64> {
        Ok(self.lock().messages.len() as u64)
    }
}
