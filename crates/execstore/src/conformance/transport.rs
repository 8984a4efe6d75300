//! The transport's behaviour suite (feature `conformance`): every backend of [`Transport`]
//! passes it. Plain functions over a [`TransportHarness`]; each check gets a fresh, empty
//! transport. Times are passed in, so nothing here reads a clock.
//!
//! What it does not prove: behaviour across processes and under crashes, nor speed (the
//! Python tests run harel's own contract checks, its `DistributedRunner` with two worker
//! processes, and harel's transport on the same file).

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use serde_json::json;

use crate::error::StoreError;
use crate::executions::Event;
use crate::transport::{Delivery, Lease, Transport};

/// What the suite needs from a backend's test.
pub trait TransportHarness {
    /// The transport under test: empty when the harness is made.
    fn transport(&self) -> &dyn Transport;
    /// Another handle on the same queues (a second connection to the same database), as a
    /// second worker holds it.
    fn another(&self) -> Box<dyn Transport>;
    /// Closes the transport and opens it again on the same data; `false` for a backend that
    /// keeps nothing.
    fn reopen(&mut self) -> bool;
}

/// The time the checks start at.
pub const T0: f64 = 1_700_000_000.0;

fn ev(kind: &str) -> Event {
    Event::new(format!("id-{kind}"), kind)
}

fn kind(d: &Option<Delivery>) -> Option<&str> {
    d.as_ref().map(|d| d.event.kind.as_str())
}

fn take(t: &dyn Transport, worker: &str, now: f64) -> Delivery {
    t.claim(worker, now, 30.0, 0)
        .expect("claim")
        .unwrap_or_else(|| panic!("{worker}: a message should be claimable at {now}"))
}

/// A group's messages come out in the order they went in, each seq larger than the last.
pub fn fifo_within_a_group(h: &mut dyn TransportHarness) {
    let t = h.transport();
    let mut seqs = Vec::new();
    for k in ["e1", "e2", "e3"] {
        seqs.push(t.publish("G", &ev(k), 0).expect("publish"));
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seqs increase: {seqs:?}");
    for (k, seq) in ["e1", "e2", "e3"].iter().zip(&seqs) {
        let d = take(t, "w", T0);
        assert_eq!(d.event.kind, *k);
        assert_eq!(d.lease.seq, *seq);
        assert_eq!(d.lease.group_id, "G");
        t.ack(&d.lease, T0).expect("ack");
    }
    assert_eq!(t.claim("w", T0, 30.0, 0).expect("claim"), None);
    assert_eq!(t.depth().expect("depth"), 0);
}

/// At most one message of a group is in flight; other groups proceed; an ack frees the group.
pub fn one_in_flight_per_group(h: &mut dyn TransportHarness) {
    let t = h.transport();
    t.publish("G", &ev("g1"), 0).expect("publish");
    t.publish("G", &ev("g2"), 0).expect("publish");
    t.publish("H", &ev("h1"), 0).expect("publish");
    let a = t.claim("w1", T0, 30.0, 0).expect("claim");
    assert_eq!(kind(&a), Some("g1"));
    assert_eq!(
        kind(&t.claim("w2", T0, 30.0, 0).expect("claim")),
        Some("h1"),
        "another group proceeds"
    );
    assert_eq!(
        t.claim("w3", T0, 30.0, 0).expect("claim"),
        None,
        "every group is in flight"
    );
    t.ack(&a.expect("claimed").lease, T0).expect("ack");
    assert_eq!(
        kind(&t.claim("w3", T0, 30.0, 0).expect("claim")),
        Some("g2"),
        "the ack frees G"
    );
    assert_eq!(t.depth().expect("depth"), 2);
}

/// `nack` with no delay makes the message claimable at once; `ack` removes it; acking or
/// nacking a message already gone is no error and changes nothing.
pub fn nack_returns_and_ack_removes(h: &mut dyn TransportHarness) {
    let t = h.transport();
    t.publish("G", &ev("only"), 0).expect("publish");
    let d = take(t, "w", T0);
    t.nack(&d.lease, T0, 0.0).expect("nack");
    let again = take(t, "w", T0);
    assert_eq!(again.event.kind, "only");
    assert_eq!(
        (again.lease.seq, &again.lease.group_id),
        (d.lease.seq, &d.lease.group_id)
    );
    t.ack(&again.lease, T0).expect("ack");
    assert_eq!(
        t.claim("w", T0, 30.0, 0).expect("claim"),
        None,
        "ack removes the message"
    );
    t.ack(&again.lease, T0).expect("a second ack is no error");
    t.nack(&again.lease, T0, 5.0)
        .expect("a nack of a gone message is no error");
    assert_eq!(t.depth().expect("depth"), 0);
    t.publish("G", &ev("next"), 0).expect("publish");
    assert_eq!(kind(&t.claim("w", T0, 30.0, 0).expect("claim")), Some("next"));
}

/// `nack(delay)` parks the message (its group blocked, later messages too) until the delay
/// has passed.
pub fn nack_with_delay_parks(h: &mut dyn TransportHarness) {
    let t = h.transport();
    t.publish("G", &ev("e1"), 0).expect("publish");
    t.publish("G", &ev("e2"), 0).expect("publish");
    let d = take(t, "w", T0);
    t.nack(&d.lease, T0, 5.0).expect("nack");
    assert_eq!(t.claim("w", T0 + 1.0, 30.0, 0).expect("claim"), None, "parked");
    assert_eq!(
        t.claim("w", T0 + 5.0, 30.0, 0).expect("claim"),
        None,
        "parked up to its end"
    );
    assert_eq!(
        kind(&t.claim("w", T0 + 6.0, 30.0, 0).expect("claim")),
        Some("e1"),
        "back after the delay"
    );
}

/// A lease lapses after `visibility`: then another worker may claim the message.
pub fn an_expired_lease_is_claimable(h: &mut dyn TransportHarness) {
    let t = h.transport();
    t.publish("G", &ev("e1"), 0).expect("publish");
    assert_eq!(kind(&t.claim("w1", T0, 10.0, 0).expect("claim")), Some("e1"));
    assert_eq!(t.claim("w2", T0 + 5.0, 10.0, 0).expect("claim"), None, "leased");
    assert_eq!(
        t.claim("w2", T0 + 10.0, 10.0, 0).expect("claim"),
        None,
        "leased to its end"
    );
    let d = t.claim("w2", T0 + 11.0, 10.0, 0).expect("claim");
    assert_eq!(kind(&d), Some("e1"), "the lease lapsed");
}

/// Round-robin: never-claimed groups first, in arrival order, then the least recently
/// claimed; a group just served yields to the others.
pub fn round_robin(h: &mut dyn TransportHarness) {
    let t = h.transport();
    for i in 0..3 {
        t.publish("A", &ev(&format!("a{i}")), 0).expect("publish");
    }
    t.publish("B", &ev("b0"), 0).expect("publish");
    t.publish("C", &ev("c0"), 0).expect("publish");
    t.publish("C", &ev("c1"), 0).expect("publish");
    let mut served = Vec::new();
    for step in 0..6 {
        let d = take(t, "w", T0 + f64::from(step));
        served.push(d.event.kind.clone());
        t.ack(&d.lease, T0 + f64::from(step)).expect("ack");
    }
    assert_eq!(served, ["a0", "b0", "c0", "a1", "c1", "a2"]);
}

/// `claim(min_priority)` skips lower groups; a group's priority is the first publish's, until
/// the group drains.
pub fn priorities(h: &mut dyn TransportHarness) {
    let t = h.transport();
    t.publish("lo", &ev("l1"), 0).expect("publish");
    t.publish("hi", &ev("h1"), 2).expect("publish");
    t.publish("hi", &ev("h2"), 0).expect("publish (priority kept: 2)");
    t.publish("lo", &ev("l2"), 4).expect("publish (priority kept: 0)");
    let hi = t.claim("w", T0, 30.0, 2).expect("claim").expect("hi");
    assert_eq!(hi.lease.group_id, "hi");
    t.ack(&hi.lease, T0).expect("ack");
    let hi = t
        .claim("w", T0 + 1.0, 30.0, 2)
        .expect("claim")
        .expect("hi's second");
    assert_eq!(hi.event.kind, "h2");
    t.ack(&hi.lease, T0 + 1.0).expect("ack");
    assert_eq!(
        t.claim("w", T0 + 2.0, 30.0, 1).expect("claim"),
        None,
        "lo is below 1"
    );
    let lo = t.claim("w", T0 + 2.0, 30.0, 0).expect("claim").expect("lo");
    assert_eq!(lo.event.kind, "l1");
    t.ack(&lo.lease, T0 + 2.0).expect("ack");
    let lo = t.claim("w", T0 + 3.0, 30.0, 0).expect("claim").expect("lo");
    t.ack(&lo.lease, T0 + 3.0).expect("ack");
    // drained: the next publish sets the priority again
    t.publish("lo", &ev("l3"), 3).expect("publish");
    assert_eq!(kind(&t.claim("w", T0 + 4.0, 30.0, 3).expect("claim")), Some("l3"));
}

/// An event comes out as it went in: payload, times and fields of a newer engine.
pub fn events_round_trip(h: &mut dyn TransportHarness) {
    let t = h.transport();
    let mut e = Event::new("evt-1", "Charge");
    e.created_time = Some("2026-01-02T03:04:05.123456Z".into());
    e.data = json!({"amount": 12.5, "items": [1, 2, {"sku": "é\u{1F600}"}], "none": null})
        .as_object()
        .cloned()
        .unwrap_or_default();
    e.extra.insert("trace_id".into(), json!("t-9"));
    t.publish("G", &e, 1).expect("publish");
    assert_eq!(take(t, "w", T0).event, e);
}

/// Bad input is refused with `InvalidInput` and changes nothing.
pub fn bad_input_changes_nothing(h: &mut dyn TransportHarness) {
    let t = h.transport();
    t.publish("G", &ev("e1"), 0).expect("publish");
    let long = "x".repeat(crate::kit::validate::MAX_ID_BYTES + 1);
    let invalid = |r: crate::Result<_>, what: &str| match r {
        Err(StoreError::InvalidInput { .. }) => {}
        other => panic!("{what}: expected InvalidInput, got {:?}", other.map(|_| ())),
    };
    invalid(t.publish("", &ev("x"), 0).map(|_| ()), "empty group");
    invalid(t.publish(&long, &ev("x"), 0).map(|_| ()), "long group");
    invalid(t.publish("G", &ev("x"), 5).map(|_| ()), "priority 5");
    invalid(t.publish("G", &ev("x"), -1).map(|_| ()), "priority -1");
    invalid(
        t.publish("G", &Event::new("", "k"), 0).map(|_| ()),
        "an event without an id",
    );
    invalid(
        t.publish("G", &Event::new("i", ""), 0).map(|_| ()),
        "an event without a kind",
    );
    let mut bad_time = ev("x");
    bad_time.created_time = Some("yesterday".into());
    invalid(t.publish("G", &bad_time, 0).map(|_| ()), "a bad created_time");
    assert_eq!(t.depth().expect("depth"), 1, "no refused publish was queued");
    invalid(t.claim("", T0, 30.0, 0).map(|_| ()), "empty worker");
    invalid(t.claim("w", f64::NAN, 30.0, 0).map(|_| ()), "NaN now");
    invalid(t.claim("w", T0, -1.0, 0).map(|_| ()), "negative visibility");
    invalid(
        t.claim("w", T0, f64::INFINITY, 0).map(|_| ()),
        "infinite visibility",
    );
    invalid(t.claim("w", T0, 30.0, 7).map(|_| ()), "min_priority 7");
    let d = take(t, "w", T0);
    assert_eq!(d.event.kind, "e1", "no refused claim leased the message");
    let bad = Lease {
        seq: 0,
        ..d.lease.clone()
    };
    invalid(t.ack(&bad, T0), "seq 0");
    invalid(t.nack(&d.lease, T0, -1.0), "negative delay");
    invalid(t.nack(&d.lease, T0, f64::NAN), "NaN delay");
    assert_eq!(
        t.claim("w", T0 + 1.0, 30.0, 0).expect("claim"),
        None,
        "still leased"
    );
    t.ack(&d.lease, T0).expect("ack");
    assert_eq!(t.depth().expect("depth"), 0);
}

/// Two handles (two workers) claiming at once from many groups: every message is delivered
/// exactly once (each acked), a group's messages in order, and never two of a group in flight.
pub fn concurrent_claims_keep_groups_exclusive(h: &mut dyn TransportHarness) {
    const GROUPS: usize = 8;
    const PER_GROUP: usize = 12;
    let t = h.transport();
    for i in 0..PER_GROUP {
        for g in 0..GROUPS {
            t.publish(
                &format!("g{g}"),
                &Event::new(format!("g{g}-{i}"), format!("{i}")),
                0,
            )
            .expect("publish");
        }
    }
    let other = h.another();
    let in_flight = Mutex::new(HashSet::<String>::new());
    let seen = Mutex::new(BTreeMap::<String, Vec<usize>>::new());
    let work = |t: &dyn Transport, worker: &str| {
        let mut idle = 0;
        while idle < 50 {
            let Some(d) = t.claim(worker, T0, 300.0, 0).expect("claim") else {
                idle += 1;
                std::thread::yield_now();
                continue;
            };
            idle = 0;
            let fresh = in_flight.lock().expect("lock").insert(d.lease.group_id.clone());
            assert!(fresh, "{} was handed out twice at once", d.lease.group_id);
            let n: usize = d.event.kind.parse().expect("a number");
            seen.lock()
                .expect("lock")
                .entry(d.lease.group_id.clone())
                .or_default()
                .push(n);
            in_flight.lock().expect("lock").remove(&d.lease.group_id);
            t.ack(&d.lease, T0).expect("ack");
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| work(t, "w1"));
        s.spawn(|| work(other.as_ref(), "w2"));
    });
    let seen = seen.into_inner().expect("lock");
    assert_eq!(seen.len(), GROUPS);
    for (g, order) in seen {
        assert_eq!(
            order,
            (0..PER_GROUP).collect::<Vec<_>>(),
            "{g}: each message once, in order"
        );
    }
    assert_eq!(t.depth().expect("depth"), 0);
}

/// Durable backends: queued, leased and parked messages survive a reopen as they were.
pub fn reopen_keeps_queues_and_leases(h: &mut dyn TransportHarness) {
    {
        let t = h.transport();
        t.publish("A", &ev("a1"), 0).expect("publish");
        t.publish("A", &ev("a2"), 0).expect("publish");
        t.publish("B", &ev("b1"), 3).expect("publish");
        t.publish("C", &ev("c1"), 0).expect("publish");
        let a = take(t, "w", T0);
        assert_eq!(a.event.kind, "a1");
        let b = t.claim("w", T0, 30.0, 3).expect("claim").expect("b");
        t.nack(&b.lease, T0, 100.0).expect("park");
    }
    if !h.reopen() {
        return;
    }
    let t = h.transport();
    assert_eq!(t.depth().expect("depth"), 4);
    assert_eq!(
        kind(&t.claim("w", T0 + 1.0, 30.0, 0).expect("claim")),
        Some("c1"),
        "A leased, B parked"
    );
    assert_eq!(t.claim("w", T0 + 1.0, 30.0, 0).expect("claim"), None);
    assert_eq!(
        kind(&t.claim("w", T0 + 31.0, 30.0, 0).expect("claim")),
        Some("a1"),
        "A's lease lapsed"
    );
    assert_eq!(
        kind(&t.claim("w", T0 + 101.0, 30.0, 3).expect("claim")),
        Some("b1"),
        "B's park ended, priority kept"
    );
}

/// Generates one `#[test]` per check; `$harness` makes a fresh [`TransportHarness`] per test.
/// `durable:` adds the reopen check.
#[macro_export]
macro_rules! transport_conformance_tests {
    (ephemeral: $harness:expr) => {
        $crate::transport_conformance_tests!(@checks $harness;
            fifo_within_a_group,
            one_in_flight_per_group,
            nack_returns_and_ack_removes,
            nack_with_delay_parks,
            an_expired_lease_is_claimable,
            round_robin,
            priorities,
            events_round_trip,
            bad_input_changes_nothing,
            concurrent_claims_keep_groups_exclusive,
        );
    };
    (durable: $harness:expr) => {
        $crate::transport_conformance_tests!(ephemeral: $harness);
        $crate::transport_conformance_tests!(@checks $harness; reopen_keeps_queues_and_leases,);
    };
    (@checks $harness:expr; $($check:ident,)*) => {
        $(
            #[test]
            fn $check() {
                let mut h = $harness;
                $crate::conformance::transport::$check(&mut h);
            }
        )*
    };
}
