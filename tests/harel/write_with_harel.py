"""harel 0.9 writes a database; then dumps what it reads back.

    write_with_harel.py DB OUT_JSON [--prefix PREFIX]

DB is a SQLite file (which must not exist yet) or a PostgreSQL URL (whose tables under PREFIX,
default "harel", must not exist yet). Writes through harel's own `SqliteStore` (default prefix
"harel") or `PostgresStore` (tables under PREFIX) a fixed, deterministic variety: executions
saved and committed, every status, parents with `ChildState` children, targeted and
untargeted emits (events with data and datetimes), dedupe markers, timers scheduled,
re-scheduled and cancelled, spawn intents, trace steps (past the 200-step ring), non-ASCII text
and awkward floats, acks, a guarded timer delete, a purge and a lost CAS.

OUT_JSON holds:
  "ops"  -- every store call made, with its inputs as JSON (the execution as it was before the
            write) and harel's result, so the Rust side can replay the same calls;
  "view" -- `harel_dump.view`: what harel reads back, plus the raw column text.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys

import harel_dump

T0 = 1700000000.0
UTC = dt.timezone.utc

# Floats whose JSON spelling differs between writers (repr, ryu, pydantic) and text that
# needs escaping or is outside ASCII.
FLOATS = [0.1, 1e-7, 1e20, 1e16, 1e15, 123456789.125, -0.0, 2.5, 1.0, 5e-324, 1.7976931348623157e308]
TEXT = 'naïve — ✓ 😀 中文 "quoted" back\\slash /slash tab\t nl\n \x01 \x7f \u2028 é'


class Recorder:
    """Calls harel's store and logs each call with its JSON inputs and result."""

    def __init__(self, store):
        self.store = store
        self.ops: list[dict] = []

    def save(self, exe):
        op = {"op": "save", "exe": exe.model_dump(mode="json")}
        self.ops.append(op)
        try:
            self.store.save(exe)
            op["result"] = {"version": exe.version}
        except Exception as e:  # StoreConflict
            op["result"] = {"error": type(e).__name__, "expected": e.expected, "found": e.found}

    def commit(self, exe, emits=(), processed_event_id=None, timers=(), spawns=(), trace=None):
        from harel.engine.store import TimerOp

        op = {
            "op": "commit",
            "exe": exe.model_dump(mode="json"),
            "effects": {
                "emits": [{"target_id": t, "event": ev.model_dump(mode="json")} for t, ev in emits],
                "processed_event_id": processed_event_id,
                "timers": [
                    {"action": "schedule", "path": t.path, "fire_at": t.fire_at}
                    if t.action == "schedule"
                    else {"action": "cancel", "path": t.path}
                    for t in timers
                ],
                "spawns": [{"child_id": c, "root_path": r, "context": ctx} for c, r, ctx in spawns],
                "trace": trace,
            },
        }
        self.ops.append(op)
        assert all(isinstance(t, TimerOp) for t in timers)
        try:
            seqs = self.store.commit(
                exe,
                list(emits),
                processed_event_id=processed_event_id,
                timers=tuple(timers),
                spawns=tuple(spawns),
                trace=trace,
            )
            op["result"] = {"version": exe.version, "seqs": seqs}
        except Exception as e:  # StoreConflict
            op["result"] = {"error": type(e).__name__, "expected": e.expected, "found": e.found}

    def append_trace(self, execution_id, entry):
        self.ops.append({"op": "append_trace", "execution_id": execution_id, "entry": entry})
        self.store.append_trace(execution_id, entry)

    def ack_outbox(self, seq):
        self.ops.append({"op": "ack_outbox", "seq": seq})
        self.store.ack_outbox(seq)

    def ack_spawn(self, seq):
        self.ops.append({"op": "ack_spawn", "seq": seq})
        self.store.ack_spawn(seq)

    def delete_timer(self, execution_id, path, fire_at):
        self.ops.append({"op": "delete_timer", "execution_id": execution_id, "path": path, "fire_at": fire_at})
        self.store.delete_timer(execution_id, path, fire_at)

    def purge(self, execution_id, expected_version):
        op = {"op": "purge", "execution_id": execution_id, "expected_version": expected_version}
        self.ops.append(op)
        op["result"] = self.store.purge(execution_id, expected_version)


def step(kind, data, frm, to, actions, ctx, ts, **more):
    """A trace step in the shape harel's runtime records."""
    s = {
        "event_kind": kind,
        "event_data": data,
        "from_path": frm,
        "to_path": to,
        "actions": actions,
        "context_out": ctx,
        "timestamp": ts,
    }
    s.update(more)
    return s


def scenario(r: Recorder) -> None:
    from harel.engine.execution import ChildState, Execution, Status
    from harel.engine.store import TimerOp
    from harel.spec.states import Event

    # --- an order: saved, then committed twice with emits, timers and trace -------------------
    order = Execution(id="ord-001", definition_id="order", created_at=T0, updated_at=T0)
    r.save(order)
    order.status = Status.RUNNING
    order.active_path = "order.waiting"
    order.history = {"order": "order.waiting"}
    order.context = {"z_last_key_first": 1, "amount": 12.5, "floats": FLOATS, "note": TEXT, "nested": {"b": [1, {"c": None}], "a": True}}
    order.processed_events = 1
    order.updated_at = T0 + 1.25
    r.commit(
        order,
        emits=[
            (
                "pay-001",
                Event(
                    id="ev-pay-1",
                    kind="Charge",
                    created_time=dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
                    data={"amount": 12.5, "currency": "€", "tiny": 1e-7, "huge": 1e20},
                ),
            ),
            (None, Event(id="ev-broadcast-1", kind="OrderPlaced", received_time=dt.datetime(2024, 1, 2, 3, 4, 5))),
            (
                "ord-001",
                Event(
                    id="ev-self-1",
                    kind="Tick",
                    created_time=dt.datetime(2024, 6, 30, 23, 59, 59, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
                    received_time=dt.datetime(2024, 7, 1, 0, 0, 0, 1, tzinfo=UTC),
                    data={"text": TEXT},
                ),
            ),
        ],
        processed_event_id="ev-start-1",
        timers=[TimerOp("schedule", "order.waiting", T0 + 30.5), TimerOp("schedule", "order.reminder", T0 + 3600.0)],
        trace=step("Start", {}, None, "order.waiting", ["reserve", "notify"], dict(order.context), T0 + 1.25),
    )
    order.processed_events = 2
    order.updated_at = T0 + 2.0
    order.context["amount"] = 0.1
    r.commit(
        order,
        emits=[("pay-001", Event(id="ev-pay-2", kind="Capture", data={"ratio": 1 / 3}))],
        processed_event_id="ev-2",
        timers=[
            TimerOp("schedule", "order.waiting", T0 + 60.25),  # re-schedule: replaces the fire time
            TimerOp("cancel", "order.reminder"),
            TimerOp("schedule", "order.escalate", T0 + 7200.0),
        ],
        trace=step(
            "Paid",
            {"amount": 0.1, "ids": ["a", "b"], "tiny": 1e-7, "huge": 1e20, "text": TEXT},
            "order.waiting",
            "order.paid",
            [],
            {"amount": 0.1, "floats": FLOATS},
            T0 + 2.0,
            assigned={"amount": 0.1},
        ),
    )

    # --- a payment, new through commit, suspended -----------------------------------------------
    pay = Execution(
        id="pay-001", definition_id="payment", status=Status.SUSPENDED, active_path="payment.hold",
        context={"ünïcode key": "välue", "list": [1, 2.0, "3"]}, priority=3, created_at=T0, updated_at=T0 + 5,
    )
    r.commit(pay, emits=[], processed_event_id="ev-x", timers=[TimerOp("schedule", "payment.retry", T0 + 30.5)])
    r.commit(pay, emits=[], processed_event_id="ev-x")  # the same marker again: INSERT OR IGNORE  # the same marker again: INSERT OR IGNORE

    # --- an orthogonal parent, its spawns and its children --------------------------------------
    par = Execution(
        id="par-001", definition_id="order", status=Status.RUNNING, active_path="par.fork",
        children={
            "par-001:region/a:0": ChildState(root_path="par.region_a", key="a"),
            "par-001:region/b:0": ChildState(
                root_path="par.region_b", finished=True, outcome="ok", result={"total": 1e20, "ok": True}, key="b"
            ),
            "par-001:sub:0": ChildState(root_path="par.sub", submachine=True, key="sub"),
        },
        invoke_seq={"par.fork": 1, "par.sub": 2},
        created_at=T0, updated_at=T0 + 3,
    )
    r.commit(
        par,
        emits=[],
        spawns=[
            ("par-001:region/a:0", "par.region_a", {"seed": TEXT, "n": 1e-7}),
            ("par-001:region/b:0", "par.region_b", {}),
            ("par-001:sub:0", "par.sub", {"nested": {"x": [1e20, 0.1]}}),
        ],
        timers=[TimerOp("schedule", "par.deadline", T0 + 7200.5), TimerOp("cancel", "par.never-armed")],
        trace=step("Fork", {}, "par.start", "par.fork", ["spawn"], {}, T0 + 3),
    )
    child_a = Execution(
        id="par-001:region/a:0", definition_id="order", root_path="par.region_a", status=Status.DONE,
        outcome="ok", active_path="par.region_a.end", parent_id="par-001", child_id="par-001:region/a:0",
        created_at=T0 + 4, updated_at=T0 + 5, finished_at=T0 + 5,
    )
    r.commit(child_a, emits=[("par-001", Event(id="ev-fin-a", kind="Finished", data={"outcome": "ok"}))])
    child_b = Execution(
        id="par-001:region/b:0", definition_id="order", root_path="par.region_b", status=Status.FAILED,
        error="ValueError: boom ✗ — «bad»", active_path="par.region_b.work", parent_id="par-001",
        child_id="par-001:region/b:0", created_at=T0 + 4, updated_at=T0 + 6,
    )
    r.save(child_b)
    sub = Execution(
        id="par-001:sub:0", definition_id="subflow", definition_fqn="pkg.flows:SubFlow",
        root_path="", status=Status.CANCELLING, parent_id="par-001", child_id="par-001:sub:0",
        deferred=[
            Event(id="ev-def-1", kind="Later", data={"k": "v"}),
            Event(id="ev-def-2", kind="Later", created_time=dt.datetime(2023, 12, 31, 12, 0, tzinfo=UTC)),
        ],
        expires_at=T0 + 86400.5, priority=4,
    )
    r.save(sub)

    # --- every other status, with finished_at / outcome / error ----------------------------------
    r.save(Execution(id="pen-001", definition_id="order"))
    r.save(Execution(id="can-001", definition_id="order", status=Status.CANCELLED, finished_at=T0 + 9, outcome="cancelled"))
    r.save(Execution(id="dne-001", definition_id="payment", status=Status.DONE, outcome="approved", finished_at=1700000123.456789))
    r.save(Execution(id="ünï-001", definition_id="ünïcode-dèf", status=Status.RUNNING, active_path="状态.一", context={"emoji": "😀"}))

    # --- ids for the prefix lookups: LIKE metacharacters and a case variant ----------------------
    for eid in ["pfx_1", "pfx_2", "PFX_3", "pfxA1", "pfx%1"]:
        r.save(Execution(id=eid, definition_id="prefixes"))

    # --- the trace ring: 205 steps, harel keeps the last 200 -------------------------------------
    trc = Execution(id="trc-001", definition_id="order", status=Status.RUNNING)
    r.save(trc)
    for i in range(205):
        r.append_trace("trc-001", step("Tick", {"i": i}, f"s{i}", f"s{i + 1}", [], {"i": i, "x": i / 10}, T0 + i))

    # --- acks, a guarded timer delete, a purge, a lost CAS ---------------------------------------
    tmp = Execution(id="tmp-001", definition_id="order", status=Status.RUNNING)
    r.commit(
        tmp,
        emits=[("tmp-001", Event(id="ev-tmp", kind="Self"))],
        processed_event_id="ev-tmp-0",
        timers=[TimerOp("schedule", "tmp.t", T0 + 10)],
        trace=step("Start", {}, None, "tmp.a", [], {}, T0),
    )
    r.ack_outbox(2)  # the untargeted OrderPlaced
    r.ack_spawn(2)  # region b's intent
    r.delete_timer("ord-001", "order.waiting", T0 + 30.5)  # stale fire time: keeps the timer
    r.delete_timer("ord-001", "order.escalate", T0 + 7200.0)  # current fire time: removes it
    r.purge("tmp-001", 0)  # moved on: touches nothing
    r.purge("tmp-001", 1)  # removes it, its marker, trace, timer and the outbox entry addressed to it
    stale = Execution(id="pen-001", definition_id="order", status=Status.RUNNING)  # at version 0, stored at 1
    r.save(stale)
    r.save(Execution(id="ghost-001", definition_id="order", version=5))  # never stored: found None
    stale_commit = Execution.model_validate(order.model_dump())
    stale_commit.version = 1
    r.commit(stale_commit, emits=[(None, Event(id="ev-lost", kind="Lost"))], processed_event_id="ev-lost")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db")
    ap.add_argument("out")
    ap.add_argument("--prefix", default=harel_dump.DEFAULT_PREFIX)
    args = ap.parse_args()
    db, out = args.db, args.out
    harel_dump.check_version()

    if harel_dump.is_postgres(db):
        if harel_dump.pg_has_store(db, args.prefix):
            sys.exit(f"{args.prefix}_executions exists: write_with_harel.py makes a new store")
    elif os.path.exists(db):
        sys.exit(f"{db} exists: write_with_harel.py makes a new database")
    store = harel_dump.open_store(db, args.prefix)
    rec = Recorder(store)
    scenario(rec)
    doc = {"ops": rec.ops, "view": harel_dump.view(store, db, args.prefix)}
    store.close()
    harel_dump.write_json(out, doc)


if __name__ == "__main__":
    main()
