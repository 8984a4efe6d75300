//! The domain data the stories draw from.

use super::*;

pub(super) const CATALOG: [(&str, &str, f64); 8] = [
    ("SKU-1042", "Espresso beans 1kg", 24.90),
    ("SKU-2291", "Ceramic mug", 12.50),
    ("SKU-3310", "Pour-over kettle", 49.00),
    ("SKU-4187", "Paper filters x100", 6.95),
    ("SKU-5023", "Burr grinder", 139.00),
    ("SKU-6120", "Milk frother", 34.99),
    ("SKU-7008", "Cold brew jar", 27.50),
    ("SKU-8351", "Tamper 58mm", 19.00),
];
pub(super) const CUSTOMERS: [&str; 10] = [
    "ada", "grace", "linus", "barbara", "edsger", "margaret", "ken", "frances", "tony", "radia",
];
pub(super) const CITIES: [(&str, &str, &str); 6] = [
    ("NL", "1017 AB", "Amsterdam"),
    ("DE", "10115", "Berlin"),
    ("FR", "75011", "Paris"),
    ("BE", "1000", "Brussels"),
    ("AT", "1010", "Wien"),
    ("ES", "08001", "Barcelona"),
];
pub(super) const CARRIERS: [&str; 4] = ["DHL", "PostNL", "UPS", "DPD"];
pub(super) const WAREHOUSES: [&str; 3] = ["AMS-1", "BER-2", "LYS-1"];
pub(super) const GATEWAYS: [&str; 2] = ["adyen", "stripe"];
pub(super) const CANCEL_REASONS: [&str; 4] = [
    "customer_request",
    "fraud_suspected",
    "duplicate_order",
    "address_undeliverable",
];
/// The orthogonal regions of `fulfilment.packing`, each run by a child execution.
pub(super) const REGIONS: [&str; 3] = [
    "fulfilment.packing.pick",
    "fulfilment.packing.label",
    "fulfilment.packing.invoice",
];

pub(super) fn money(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub(super) fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

pub(super) fn one<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.usize(..items.len())]
}

pub(super) fn tracking_number(rng: &mut Rng, carrier: &str) -> String {
    let digits: String = (0..12).map(|_| char::from(b'0' + rng.u8(0..10))).collect();
    format!("{}{digits}", &carrier[..2].to_ascii_uppercase())
}
