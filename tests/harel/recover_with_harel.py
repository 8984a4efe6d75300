"""harel 0.9's own runner around execstore's recovery commands, on one SQLite file.

    recover_with_harel.py DB OUT_JSON setup
    recover_with_harel.py DB OUT_JSON relay
    recover_with_harel.py DB OUT_JSON redrive ID TARGET AT
    recover_with_harel.py DB OUT_JSON process ID EVENT_ID KIND

`setup` creates, through harel's `DurableRunner` over harel's own `SqliteStore`, `o-1`
(RUNNING, waiting for `Approve`) and saves `o-2` dead-lettered (FAILED at `approved`, with an
error and a history). `relay` drains the outbox with harel's own relay (`recover`), which
delivers what execstore enqueued. `redrive` is harel's own `redrive` at the clock AT (for the
differential with execstore's). `process` feeds one event through harel's runner. Each
writes every execution as harel reads it back, and the outbox, to OUT_JSON.
"""

from __future__ import annotations

import json
import sys

from harel.dsl import definition_from_dsl
from harel.engine.durable import DurableRunner
from harel.engine.execution import Execution, Status
from harel.engine.store import SqliteStore
from harel.spec.states import Event

CHART = """
machine order {
  initial waiting
  state waiting { }
  from waiting to approved on Approve
  state approved { }
  from approved to done on Finish
  final done success
}
"""

T0 = 1700000000.0


def main() -> None:
    db, out, mode, *args = sys.argv[1:]
    store = SqliteStore(db)
    clock = [T0]
    runner = DurableRunner(
        store, {"order": definition_from_dsl(CHART)}, clock=lambda: clock[0], execution="inline", trace=True
    )
    if mode == "setup":
        runner.create("order", execution_id="o-1")
        store.save(
            Execution(
                id="o-2",
                definition_id="order",
                status=Status.FAILED,
                active_path="approved",
                history={"order": "approved"},
                error="ZeroDivisionError: division by zero",
                context={"customer": "c-17"},
                created_at=T0,
                updated_at=T0,
            )
        )
    elif mode == "relay":
        clock[0] = T0 + 10
        runner.recover("order")
    elif mode == "redrive":
        exe_id, target, at = args
        clock[0] = float(at)
        runner.redrive(exe_id, target)
    elif mode == "process":
        exe_id, event_id, kind = args
        clock[0] = T0 + 20
        runner.process(exe_id, Event(id=event_id, kind=kind))
    else:
        raise SystemExit(f"unknown mode {mode}")
    result = {
        "executions": {
            i: json.loads(store.load(i).model_dump_json()) for i in ("o-1", "o-2") if store.load(i) is not None
        },
        "outbox": [[e.seq, e.target_id, e.event.id, e.event.kind] for e in store.pending_outbox()],
        "processed": [list(r) for r in store._conn.execute("SELECT execution_id, event_id FROM harel_processed_events ORDER BY 1, 2")],
    }
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
