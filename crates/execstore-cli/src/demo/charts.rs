//! The linear statecharts' stories: `orders` and `payments`.

use super::*;

impl<'s> Story<'s> {
    pub(super) fn order(&mut self, status: Status) -> Result<()> {
        let rng = &mut self.rng;
        let customer = one(rng, &CUSTOMERS);
        let order_id = format!("ORD-{}", rng.u32(100_000..1_000_000));
        let context = json!({
            "order_id": order_id,
            "customer": { "id": format!("cus_{:08x}", rng.u32(..)), "email": format!("{customer}@example.com") },
            "currency": "EUR",
            "items": [],
            "total": 0.0,
        });
        let mut moves =
            vec![Move::start(uniform(rng, 0.05, 2.0), "order.cart").actions(&["orders.open_cart"])];
        let mut items = Vec::new();
        let mut total = 0.0;
        for _ in 0..rng.usize(1..=3) {
            let (sku, name, price) = CATALOG[rng.usize(..CATALOG.len())];
            let qty = rng.u32(1..=3);
            total = money(total + price * f64::from(qty));
            items.push(json!({ "sku": sku, "name": name, "qty": qty, "unit_price": price }));
            moves.push(
                Move::on(
                    "AddItem",
                    json!({ "sku": sku, "qty": qty }),
                    log_uniform(rng, 5.0, 10.0 * MINUTE),
                    "order.cart",
                )
                .actions(&["orders.add_item"])
                .set("items", json!(items))
                .set("total", json!(total)),
            );
        }
        let at_checkout = moves.len();
        moves.push(
            Move::on(
                "Checkout",
                json!({}),
                log_uniform(rng, 10.0, 20.0 * MINUTE),
                "order.checkout.address",
            )
            .guards(&["cart_not_empty"])
            .actions(&["orders.lock_prices"]),
        );
        let (country, postcode, city) = CITIES[rng.usize(..CITIES.len())];
        let fee = if total >= 50.0 { 0.0 } else { 4.95 };
        let grand = money(total + fee);
        let at_address = moves.len();
        moves.push(
            Move::on(
                "AddressEntered",
                json!({ "country": country, "postcode": postcode, "city": city }),
                log_uniform(rng, 20.0, 5.0 * MINUTE),
                "order.checkout.awaiting_payment",
            )
            .actions(&["orders.quote_shipping", "orders.request_payment"])
            .set(
                "ship_to",
                json!({ "country": country, "postcode": postcode, "city": city }),
            )
            .set("shipping_fee", json!(fee))
            .set("total", json!(grand))
            .emit(
                None,
                "AuthorizePayment",
                json!({ "order_id": order_id, "amount": grand, "currency": "EUR" }),
            ),
        );
        let payment_id = format!("pay_{:012x}", rng.u64(..) >> 16);
        let at_payment = moves.len();
        moves.push(
            Move::on(
                "PaymentAuthorized",
                json!({ "payment_id": payment_id, "amount": grand }),
                log_uniform(rng, 3.0, 10.0 * MINUTE),
                "order.fulfilment.awaiting_shipment",
            )
            .guards(&["amount_matches"])
            .actions(&["orders.confirm_order", "orders.request_fulfilment"])
            .set("payment_id", json!(payment_id))
            .emit(
                None,
                "FulfilmentRequested",
                json!({ "order_id": order_id, "items": items }),
            ),
        );
        let carrier = one(rng, &CARRIERS);
        let tracking = tracking_number(rng, carrier);
        moves.push(
            Move::on(
                "Shipped",
                json!({ "carrier": carrier, "tracking_number": tracking }),
                log_uniform(rng, HOUR, 2.0 * DAY),
                "order.shipping.in_transit",
            )
            .actions(&["orders.notify_customer"])
            .set("carrier", json!(carrier))
            .set("tracking_number", json!(tracking))
            .emit(
                None,
                "SendEmail",
                json!({ "template": "order_shipped", "to": format!("{customer}@example.com"), "order_id": order_id }),
            ),
        );
        moves.push(
            Move::on(
                "Delivered",
                json!({ "signed_by": customer }),
                log_uniform(rng, 12.0 * HOUR, 4.0 * DAY),
                "order.delivered",
            )
            .actions(&["orders.close_order"])
            .emit(None, "OrderCompleted", json!({ "order_id": order_id }))
            .end(Status::Done, "delivered"),
        );
        let expired = Move::new(Trigger::Timeout, uniform(rng, 0.2, 5.0), "order.payment_expired")
            .actions(&["orders.release_stock"])
            .emit(None, "OrderExpired", json!({ "order_id": order_id }))
            .end(Status::Done, "payment_expired");
        let sku = items[0]["sku"].as_str().unwrap_or("SKU-1042").to_owned();
        let failures = vec![
            (
                at_checkout,
                "orders.lock_prices",
                format!("OutOfStock: {sku} has 0 units left in {}", one(rng, &WAREHOUSES)),
            ),
            (
                at_address,
                "orders.request_payment",
                "PaymentServiceUnavailable: POST https://payments.internal/v1/authorizations returned 503"
                    .to_owned(),
            ),
        ];
        let mut live = self.root(Def::Orders, context)?;
        if status == Status::Pending {
            return Ok(());
        }
        let script = Script {
            moves,
            alt: (at_payment, expired),
            failures,
            cancel: (&["orders.release_stock", "orders.void_payment"], "OrderCancelled"),
            cancelling: ("orders.begin_cancel", Some("VoidPayment")),
        };
        self.linear(&mut live, Def::Orders, status, script)
    }

    pub(super) fn payment(&mut self, status: Status) -> Result<()> {
        let rng = &mut self.rng;
        let payment_id = format!("pay_{:012x}", rng.u64(..) >> 16);
        let amount = money(uniform(rng, 6.95, 420.0));
        let method = one(rng, &["card", "card", "sepa_debit", "paypal", "ideal"]);
        let context = json!({
            "payment_id": payment_id,
            "order_id": format!("ORD-{}", rng.u32(100_000..1_000_000)),
            "amount": amount,
            "currency": "EUR",
            "method": method,
        });
        let gateway = one(rng, &GATEWAYS);
        let auth_code = format!("{:06}", rng.u32(..1_000_000));
        let moves = vec![
            Move::start(uniform(rng, 0.05, 1.0), "payment.created").actions(&["payments.validate_request"]),
            Move::on(
                "Authorize",
                json!({}),
                uniform(rng, 0.2, 3.0),
                "payment.authorizing",
            )
            .actions(&["payments.authorize_with_gateway"])
            .set("gateway", json!(gateway))
            .set("attempt", json!(1)),
            Move::on(
                "Authorized",
                json!({ "auth_code": auth_code }),
                uniform(rng, 0.5, 25.0),
                "payment.authorized",
            )
            .actions(&["payments.record_authorization"])
            .set("auth_code", json!(auth_code))
            .emit(
                None,
                "PaymentAuthorized",
                json!({ "payment_id": payment_id, "amount": amount }),
            ),
            Move::on(
                "Capture",
                json!({}),
                log_uniform(rng, 10.0 * MINUTE, 3.0 * DAY),
                "payment.capturing",
            )
            .guards(&["authorization_valid"])
            .actions(&["payments.capture_with_gateway"]),
            Move::on(
                "Captured",
                json!({ "captured_amount": amount }),
                uniform(rng, 0.5, 40.0),
                "payment.settled",
            )
            .actions(&["payments.record_capture", "payments.send_receipt"])
            .set("captured_amount", json!(amount))
            .emit(
                None,
                "PaymentCaptured",
                json!({ "payment_id": payment_id, "amount": amount }),
            )
            .end(Status::Done, "captured"),
        ];
        let reason = one(
            rng,
            &[
                "insufficient_funds",
                "card_expired",
                "do_not_honor",
                "suspected_fraud",
            ],
        );
        let declined = Move::on(
            "Declined",
            json!({ "reason": reason }),
            uniform(rng, 0.5, 25.0),
            "payment.declined",
        )
        .actions(&["payments.record_decline"])
        .set("decline_reason", json!(reason))
        .emit(
            None,
            "PaymentDeclined",
            json!({ "payment_id": payment_id, "reason": reason }),
        )
        .end(Status::Done, "declined");
        let failures = vec![
            (
                2,
                "payments.record_authorization",
                "IntegrityError: UNIQUE constraint failed: ledger.auth_code".to_owned(),
            ),
            (
                3,
                "payments.capture_with_gateway",
                format!("GatewayTimeout: {gateway} did not answer within 30.0s"),
            ),
        ];
        let mut live = self.root(Def::Payments, context)?;
        if status == Status::Pending {
            return Ok(());
        }
        let script = Script {
            moves,
            alt: (2, declined),
            failures,
            cancel: (&["payments.void_authorization"], "PaymentVoided"),
            cancelling: ("payments.begin_void", Some("VoidAuthorization")),
        };
        self.linear(&mut live, Def::Payments, status, script)
    }
}
