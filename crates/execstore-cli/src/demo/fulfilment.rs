//! The `fulfilment` story: the fork of the orthogonal `fulfilment.packing` into region
//! children through spawn intents, their moves and the join.

use super::*;

impl<'s> Story<'s> {
    pub(super) fn fulfilment(&mut self, status: Status, stage: Stage) -> Result<()> {
        let rng = &mut self.rng;
        let order_id = format!("ORD-{}", rng.u32(100_000..1_000_000));
        let shipment_id = format!("shp_{:010x}", rng.u64(..) >> 24);
        let warehouse = one(rng, &WAREHOUSES);
        let (country, postcode, city) = CITIES[rng.usize(..CITIES.len())];
        let items: Vec<Value> = (0..rng.usize(1..=4))
            .map(|_| {
                let (sku, _, _) = CATALOG[rng.usize(..CATALOG.len())];
                json!({ "sku": sku, "qty": rng.u32(1..=3) })
            })
            .collect();
        let context = json!({
            "shipment_id": shipment_id,
            "order_id": order_id,
            "warehouse": warehouse,
            "items": items,
            "ship_to": { "country": country, "postcode": postcode, "city": city },
        });
        let bins: Vec<String> = items
            .iter()
            .map(|_| {
                format!(
                    "{}-{:02}-{}",
                    &warehouse[..3],
                    rng.u8(1..40),
                    char::from(b'A' + rng.u8(0..6))
                )
            })
            .collect();
        let start = Move::start(uniform(rng, 0.05, 1.0), "fulfilment.received")
            .actions(&["fulfilment.register_shipment"]);
        let allocate = Move::on(
            "Allocate",
            json!({}),
            log_uniform(rng, 5.0, 20.0 * MINUTE),
            "fulfilment.allocated",
        )
        .guards(&["stock_available"])
        .actions(&["fulfilment.allocate_stock"])
        .set("bins", json!(bins));
        let sku = items[0]["sku"].as_str().unwrap_or("SKU-1042").to_owned();
        let allocation_error = format!("AllocationError: no bin holds {sku} in {warehouse}");
        let pack_gap = log_uniform(rng, MINUTE, 2.0 * HOUR);

        let mut live = self.root(Def::Fulfilment, context)?;
        if status == Status::Pending {
            return Ok(());
        }
        self.apply(&mut live, start)?;
        if status == Status::Failed && stage == Stage::Received {
            return self.fail(&mut live, allocate, "fulfilment.allocate_stock", allocation_error);
        }
        if stage > Stage::Received {
            self.apply(&mut live, allocate)?;
        }
        if stage >= Stage::PackingPending {
            self.fork(&mut live, pack_gap, stage)?;
        }
        if stage >= Stage::Dispatch {
            let carrier = live.exe.context.get("carrier").cloned().unwrap_or(Value::Null);
            let tracking = live
                .exe
                .context
                .get("tracking_number")
                .cloned()
                .unwrap_or(Value::Null);
            let picked_up = Move::on(
                "PickedUp",
                json!({ "carrier": carrier, "tracking_number": tracking }),
                log_uniform(&mut self.rng, 20.0 * MINUTE, 3.5 * HOUR),
                "fulfilment.shipped",
            )
            .actions(&["fulfilment.confirm_dispatch"])
            .emit(
                None,
                "Shipped",
                json!({ "order_id": order_id, "shipment_id": shipment_id, "carrier": carrier, "tracking_number": tracking }),
            )
            .end(Status::Done, "shipped");
            if status == Status::Failed {
                let carrier = carrier.as_str().unwrap_or("DHL").to_owned();
                let error = format!("CarrierApiError: {carrier} rejected the pickup: booking window closed");
                return self.fail(&mut live, picked_up, "fulfilment.confirm_dispatch", error);
            }
            if stage == Stage::Shipped {
                self.apply(&mut live, picked_up)?;
            }
        }
        match status {
            Status::Suspended => self.suspend(&mut live),
            Status::Cancelled => self.cancel(
                &mut live,
                Def::Fulfilment,
                &["fulfilment.release_allocation"],
                "FulfilmentCancelled",
            ),
            Status::Cancelling => self.cancelling(&mut live, "fulfilment.begin_cancel", None),
            _ => Ok(()),
        }
    }

    /// Enters the orthogonal `fulfilment.packing`: the fork commit (spawn intents and the
    /// join counter), then, unless the relay has not run yet, the children and the parent's
    /// handling of each child's `Finished`; at `Dispatch` and beyond, the join.
    pub(super) fn fork(&mut self, parent: &mut Live, gap: f64, stage: Stage) -> Result<()> {
        let pid = parent.exe.id.clone();
        let ctx = parent.exe.context.clone();
        let pass = |keys: &[&str]| -> JsonObject {
            keys.iter()
                .filter_map(|k| ctx.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect()
        };
        let seq = parent
            .exe
            .invoke_seq
            .get("fulfilment.packing")
            .copied()
            .unwrap_or(0);
        let mut mv = Move::on("StartPacking", json!({}), gap, "fulfilment.packing")
            .actions(&["fulfilment.open_packing_job"]);
        parent.exe.children.clear();
        for region in REGIONS {
            let cid = format!("{pid}:{region}:{seq}");
            let context = match region {
                "fulfilment.packing.pick" => pass(&["shipment_id", "items", "bins"]),
                "fulfilment.packing.label" => pass(&["shipment_id", "warehouse", "ship_to"]),
                _ => pass(&["order_id", "items"]),
            };
            parent.exe.children.insert(
                cid.clone(),
                ChildState {
                    root_path: region.to_owned(),
                    finished: false,
                    outcome: None,
                    result: JsonObject::new(),
                    submachine: false,
                    key: region.to_owned(),
                    extra: JsonObject::new(),
                },
            );
            mv.spawns.push(Spawn {
                child_id: cid,
                root_path: region.to_owned(),
                context,
            });
        }
        self.apply(parent, mv)?;
        let fork_t = parent.t;
        let queued = self.store.pending_spawns(self.spawn_after, MAX_PAGE)?;
        self.spawn_after = queued.last().map(|s| s.seq).or(self.spawn_after);
        if stage == Stage::PackingPending {
            return Ok(());
        }
        // The relay creates each child (idempotently) and acks its intent.
        let mut finished: Vec<(f64, Event)> = Vec::new();
        let full = stage >= Stage::Dispatch;
        // At PackingPartial one region (at least) is still running, so there is no join yet.
        let laggard = self.rng.usize(..REGIONS.len());
        for intent in queued.iter().filter(|s| s.parent_id == pid) {
            let mut exe = Execution::new(intent.child_id.clone(), "fulfilment");
            exe.root_path = intent.root_path.clone();
            exe.parent_id = Some(pid.clone());
            exe.child_id = Some(intent.child_id.clone());
            exe.context = intent.context.clone();
            exe.priority = parent.exe.priority;
            let created = fork_t + uniform(&mut self.rng, 0.05, 2.0);
            let mut child = self.create(exe, created)?;
            self.store.ack_spawn(intent.seq)?;
            let moves = self.region_moves(&intent.root_path, &intent.child_id, &pid);
            let n = moves.len();
            let region_index = REGIONS.iter().position(|r| *r == intent.root_path).unwrap_or(0);
            let steps = if full {
                n
            } else if region_index == laggard {
                self.rng.usize(1..n)
            } else {
                self.rng.usize(1..=n)
            };
            for mv in moves.into_iter().take(steps) {
                for (seq, event) in self.apply(&mut child, mv)? {
                    // The relay delivers the region's `Finished` to the parent (below).
                    self.store.ack_outbox(seq)?;
                    finished.push((child.t, event));
                }
            }
        }
        // The parent takes each delivered `Finished`, in the order they came; the last one
        // completes the join and leaves the orthogonal state.
        finished.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total = parent.exe.children.len();
        for (done_t, event) in finished {
            let cid = event
                .data
                .get("child_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(state) = parent.exe.children.get_mut(&cid) {
                state.finished = true;
                state.outcome = event
                    .data
                    .get("outcome")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                state.result = event
                    .data
                    .iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "child_id" | "outcome" | "__deferred__"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
            }
            let gap = (done_t + uniform(&mut self.rng, 0.05, 2.0) - parent.t).max(0.01);
            let joined = parent.exe.children.values().filter(|c| c.finished).count() == total;
            if !joined {
                self.apply(
                    parent,
                    Move::new(Trigger::Delivered(event), gap, "fulfilment.packing"),
                )?;
                continue;
            }
            let results: Map<String, Value> = parent
                .exe
                .children
                .values()
                .map(|c| {
                    let mut r = Map::new();
                    r.insert("outcome".into(), json!(c.outcome));
                    r.extend(c.result.clone());
                    (c.key.clone(), Value::Object(r))
                })
                .collect();
            let label = results
                .get("fulfilment.packing.label")
                .cloned()
                .unwrap_or_default();
            *parent
                .exe
                .invoke_seq
                .entry("fulfilment.packing".into())
                .or_insert(0) += 1;
            let mv = Move::new(Trigger::Delivered(event), gap, "fulfilment.dispatch")
                .actions(&["fulfilment.book_carrier"])
                .set("region_results", Value::Object(results))
                .set("carrier", label.get("carrier").cloned().unwrap_or(Value::Null))
                .set(
                    "tracking_number",
                    label.get("tracking_number").cloned().unwrap_or(Value::Null),
                );
            self.apply(parent, mv)?;
        }
        Ok(())
    }

    /// A region child's moves, from its start to its terminal, the last reporting
    /// `Finished` to the parent with what it carries.
    pub(super) fn region_moves(&mut self, region: &str, cid: &str, pid: &str) -> Vec<Move> {
        let rng = &mut self.rng;
        let finished = |extra: Value| {
            let mut data = json!({ "child_id": cid, "outcome": "success" });
            if let (Some(d), Value::Object(e)) = (data.as_object_mut(), extra) {
                d.extend(e);
            }
            data
        };
        let parent = Some(pid.to_owned());
        let mut moves = match region {
            "fulfilment.packing.pick" => {
                let picked = rng.u32(1..=9);
                let picker = format!("picker-{:02}", rng.u8(1..30));
                vec![
                    Move::start(uniform(rng, 0.05, 1.0), "fulfilment.packing.pick.locating")
                        .actions(&["fulfilment.pick.print_pick_list"]),
                    Move::on(
                        "ItemsLocated",
                        json!({ "picker": picker }),
                        log_uniform(rng, 30.0, 8.0 * MINUTE),
                        "fulfilment.packing.pick.picking",
                    )
                    .actions(&["fulfilment.pick.assign_picker"])
                    .set("picker", json!(picker)),
                    Move::on(
                        "Picked",
                        json!({ "items": picked }),
                        log_uniform(rng, MINUTE, 20.0 * MINUTE),
                        "fulfilment.packing.pick.done",
                    )
                    .actions(&["fulfilment.pick.confirm_pick"])
                    .set("picked_items", json!(picked))
                    .emit(parent, "Finished", finished(json!({ "picked_items": picked })))
                    .end(Status::Done, "success"),
                ]
            }
            "fulfilment.packing.label" => {
                let carrier = one(rng, &CARRIERS);
                let tracking = tracking_number(rng, carrier);
                vec![
                    Move::start(uniform(rng, 0.05, 1.0), "fulfilment.packing.label.requesting")
                        .actions(&["fulfilment.label.request_label"]),
                    Move::on(
                        "LabelIssued",
                        json!({ "carrier": carrier, "tracking_number": tracking }),
                        log_uniform(rng, 2.0, 3.0 * MINUTE),
                        "fulfilment.packing.label.printed",
                    )
                    .actions(&["fulfilment.label.print_label"])
                    .set("carrier", json!(carrier))
                    .set("tracking_number", json!(tracking))
                    .emit(
                        parent,
                        "Finished",
                        finished(json!({ "carrier": carrier, "tracking_number": tracking })),
                    )
                    .end(Status::Done, "success"),
                ]
            }
            _ => {
                let invoice = format!("INV-{}-{:06}", 2024 + rng.u32(0..2), rng.u32(..1_000_000));
                vec![
                    Move::start(uniform(rng, 0.05, 1.0), "fulfilment.packing.invoice.drafting")
                        .actions(&["fulfilment.invoice.draft"]),
                    Move::on(
                        "InvoiceIssued",
                        json!({ "invoice_no": invoice }),
                        log_uniform(rng, 10.0, 5.0 * MINUTE),
                        "fulfilment.packing.invoice.issued",
                    )
                    .actions(&["fulfilment.invoice.issue"])
                    .set("invoice_no", json!(invoice))
                    .emit(parent, "Finished", finished(json!({ "invoice_no": invoice })))
                    .end(Status::Done, "success"),
                ]
            }
        };
        // The relay acks the `Finished` itself, when it delivers it to the parent.
        if let Some(last) = moves.last_mut() {
            last.hold = true;
        }
        moves
    }
}
