//! Plans: which statechart, which status, and for fulfilment how far the fork got; the
//! clock's units and draws.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Def {
    Orders,
    Payments,
    Fulfilment,
}

impl Def {
    pub(super) fn id(self) -> &'static str {
        match self {
            Def::Orders => "orders",
            Def::Payments => "payments",
            Def::Fulfilment => "fulfilment",
        }
    }

    pub(super) fn root(self) -> &'static str {
        match self {
            Def::Orders => "order",
            Def::Payments => "payment",
            Def::Fulfilment => "fulfilment",
        }
    }
}

/// How far a fulfilment got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Stage {
    Received,
    Allocated,
    /// Forked, the relay has not created the children yet: the spawn intents are pending.
    PackingPending,
    /// Forked, children created, some still running or not yet joined.
    PackingPartial,
    /// Joined, waiting for the carrier.
    Dispatch,
    Shipped,
}

impl Stage {
    pub(super) fn children(self) -> u64 {
        if self >= Stage::PackingPartial && self != Stage::PackingPending {
            REGIONS.len() as u64
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) def: Def,
    pub(super) status: Status,
    pub(super) stage: Stage,
}

pub(super) const fn plan(def: Def, status: Status, stage: Stage) -> Plan {
    Plan { def, status, stage }
}

/// The first roots written, so that even the smallest demo has every status, both fork
/// stages and a finished parent (19 executions together).
pub(super) const FIRST_PLANS: [Plan; 10] = [
    plan(Def::Orders, Status::Running, Stage::Received),
    plan(Def::Payments, Status::Done, Stage::Received),
    plan(Def::Fulfilment, Status::Running, Stage::PackingPartial),
    plan(Def::Fulfilment, Status::Running, Stage::PackingPending),
    plan(Def::Orders, Status::Pending, Stage::Received),
    plan(Def::Orders, Status::Cancelled, Stage::Received),
    plan(Def::Payments, Status::Suspended, Stage::Received),
    plan(Def::Fulfilment, Status::Cancelling, Stage::PackingPartial),
    plan(Def::Orders, Status::Failed, Stage::Received),
    plan(Def::Fulfilment, Status::Done, Stage::Shipped),
];

pub(super) fn pick<T: Copy>(rng: &mut Rng, weighted: &[(T, u32)]) -> T {
    let total: u32 = weighted.iter().map(|(_, w)| w).sum();
    let mut x = rng.u32(0..total);
    for (item, w) in weighted {
        if x < *w {
            return *item;
        }
        x -= w;
    }
    weighted[weighted.len() - 1].0
}

impl Plan {
    pub(super) fn size(&self) -> u64 {
        1 + if self.def == Def::Fulfilment {
            self.stage.children()
        } else {
            0
        }
    }

    pub(super) fn draw(rng: &mut Rng, remaining: u64) -> Plan {
        let status = pick(
            rng,
            &[
                (Status::Running, 30),
                (Status::Done, 30),
                (Status::Pending, 6),
                (Status::Suspended, 6),
                (Status::Cancelling, 5),
                (Status::Cancelled, 11),
                (Status::Failed, 12),
            ],
        );
        let mut def = pick(
            rng,
            &[(Def::Orders, 50), (Def::Fulfilment, 20), (Def::Payments, 30)],
        );
        let stages: &[(Stage, u32)] = match status {
            Status::Running => &[
                (Stage::Received, 15),
                (Stage::Allocated, 15),
                (Stage::PackingPending, 10),
                (Stage::PackingPartial, 35),
                (Stage::Dispatch, 25),
            ],
            Status::Suspended => &[
                (Stage::Allocated, 1),
                (Stage::PackingPartial, 1),
                (Stage::Dispatch, 1),
            ],
            Status::Cancelled => &[(Stage::Received, 1), (Stage::Allocated, 2), (Stage::Dispatch, 1)],
            Status::Cancelling => &[
                (Stage::Allocated, 1),
                (Stage::PackingPartial, 2),
                (Stage::Dispatch, 1),
            ],
            Status::Failed => &[(Stage::Received, 2), (Stage::Dispatch, 1)],
            Status::Done => &[(Stage::Shipped, 1)],
            _ => &[(Stage::Received, 1)],
        };
        let stage = pick(rng, stages);
        if def == Def::Fulfilment && 1 + stage.children() > remaining {
            def = Def::Orders;
        }
        Plan { def, status, stage }
    }

    /// Seconds between the story's last step and now.
    pub(super) fn idle(&self, rng: &mut Rng) -> f64 {
        match (self.status, self.stage) {
            (Status::Running, Stage::PackingPending) => uniform(rng, 1.0, 45.0),
            (Status::Pending, _) => log_uniform(rng, 1.0, 7200.0),
            (Status::Done | Status::Cancelled, _) => log_uniform(rng, 120.0, 12.0 * DAY),
            _ => log_uniform(rng, 5.0, 4.0 * DAY),
        }
    }
}

pub(super) const MINUTE: f64 = 60.0;
pub(super) const HOUR: f64 = 3600.0;
pub(super) const DAY: f64 = 86_400.0;

pub(super) fn uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    lo + rng.f64() * (hi - lo)
}

pub(super) fn log_uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.f64() * (hi.ln() - lo.ln())).exp()
}

pub(super) fn hex_id(rng: &mut Rng) -> String {
    format!("{:016x}{:016x}", rng.u64(..), rng.u64(..))
}

/// How long a state waits before its `Timeout` fires (harel's `timeout:` states arm a durable
/// timer on enter and disarm it on exit).
pub(super) fn timeout_of(path: &str) -> Option<f64> {
    Some(match path {
        "order.checkout.awaiting_payment" => 30.0 * MINUTE,
        "order.shipping.in_transit" => 5.0 * DAY,
        "payment.authorizing" => 90.0,
        "payment.authorized" => 7.0 * DAY,
        "payment.capturing" => 2.0 * MINUTE,
        "fulfilment.packing" => 2.0 * HOUR,
        "fulfilment.dispatch" => 4.0 * HOUR,
        "fulfilment.packing.label.requesting" => 10.0 * MINUTE,
        _ => return None,
    })
}
