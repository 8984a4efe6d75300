//! Realistic values the structured targets pick from (W1's shapes: 32-hex ids, a child's
//! id extending its parent's, dotted state paths, epoch-second times), so that calls
//! collide on the same executions, events and timers often enough to reach conflicts,
//! duplicates and acks of what is there; the fuzzer's own strings are mixed in.

use arbitrary::{Result, Unstructured};

/// Execution ids: every one a valid id, in no particular order.
pub const IDS: &[&str] = &[
    "0fb6a1ea8b2b4c37a4e3f1c2d9e8b7a6",
    "0fb6a1ea8b2b4c37a4e3f1c2d9e8b7a6:pay",
    "0fb6a1ea8b2b4c37a4e3f1c2d9e8b7a6:pay:1",
    "order-1",
    "order-10",
    "order-2",
    "Order-1",
    "é-commande",
    "a b",
    "z",
];

/// Definitions.
pub const DEFINITIONS: &[&str] = &["orders", "fulfilment", "payments"];

/// State paths (timers, active paths, spawn roots).
pub const PATHS: &[&str] = &[
    "root.work.timeout",
    "root.work.s01",
    "order.checkout",
    "order.checkout.pay",
    "order.checkoutx",
    "root",
];

/// Event ids.
pub const EVENT_IDS: &[&str] = &["evt-1", "evt-2", "evt-3", "0000000100000000000000000000000001"];

/// Epoch-second times around W1's base, and a few edges.
pub const TIMES: &[f64] = &[
    1_700_000_000.0,
    1_700_000_000.5,
    1_700_000_001.0,
    1_700_000_600.0,
    0.0,
    2e12,
    execstore::kit::validate::ALL_TIMERS,
];

/// One of `pool`, or (one time in eight) the fuzzer's own string.
pub fn pick_str(u: &mut Unstructured<'_>, pool: &[&str]) -> Result<String> {
    if u.ratio(1, 8)? {
        return u.arbitrary::<String>();
    }
    Ok((*u.choose(pool)?).to_owned())
}

/// One of [`TIMES`], or (one time in eight) any double, NaN and infinities included.
pub fn pick_time(u: &mut Unstructured<'_>) -> Result<f64> {
    if u.ratio(1, 8)? {
        return u.arbitrary::<f64>();
    }
    Ok(*u.choose(TIMES)?)
}
