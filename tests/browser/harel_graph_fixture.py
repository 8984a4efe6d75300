"""Writes a store file with harel 0.9 itself, for the statechart pictures' browser tests.

  harel_graph_fixture.py DB [N]

Runs harel's own engine (`DurableRunner`, tracing on) over harel's own `SqliteStore` (tables
`harel_*`) with a nested chart: N orders (default 12) driven along different paths, so the
trace holds states inside states, self-transitions, guarded transitions and executions left
in every part of the chart. Then, through harel's store API too, one execution whose
definition and state names carry HTML/script payloads (they must show as text). Prints a
JSON summary: every execution's id, status and active path.
"""

import json
import os
import sys

from harel.dsl import definition_from_dsl
from harel.engine.durable import DurableRunner
from harel.engine.execution import Execution, Status
from harel.engine.store import SqliteStore
from harel.spec.states import Event

CHART = """
machine shop {
  initial cart
  state cart {}
  state checkout {
    initial address
    state address {}
    state payment {}
    from address to payment on Next
    from payment to address on Back
  }
  final shipped success
  final cancelled failed
  from cart to cart on AddItem set context.items = context.items + 1
  from cart to checkout on Checkout where amount > 0
  from checkout to shipped on Pay where paid == true
  from checkout to cancelled on Cancel
}
"""

# Each order's events, by the order's number modulo the plans' count.
PLANS = [
    [("AddItem", {}), ("Checkout", {"amount": 5}), ("Next", {}), ("Back", {}), ("Next", {}), ("Pay", {"paid": True})],
    [("Checkout", {"amount": 5}), ("Next", {})],
    [("AddItem", {}), ("AddItem", {})],
    [("Checkout", {"amount": 9}), ("Cancel", {})],
    [("Checkout", {"amount": 3})],
]

SCRIPT = "<script>alert(1)</script>"


def main() -> None:
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    store = SqliteStore(path)
    now = [1_700_000_000.0]
    runner = DurableRunner(
        store, {"shop": definition_from_dsl(CHART)}, clock=lambda: now[0], execution="inline", trace=True
    )
    for i in range(n):
        eid = runner.create("shop", {"items": 0}, execution_id=f"shop-{i:03}").id
        for k, (kind, data) in enumerate(PLANS[i % len(PLANS)]):
            now[0] += 1
            runner.process(eid, Event(id=f"{eid}-e{k}", kind=kind, data=data))
    # Hostile names, written through harel's store API.
    evil = Execution(
        id="evil-1",
        definition_id=SCRIPT,
        status=Status.RUNNING,
        active_path=f"{SCRIPT}.inner",
        version=0,
    )
    store.save(evil)
    store.append_trace("evil-1", {
        "event_kind": "Start", "event_data": {}, "from_path": None, "to_path": f"{SCRIPT}.inner",
        "actions": [], "context_out": {}, "timestamp": now[0],
    })
    store.append_trace("evil-1", {
        "event_kind": SCRIPT, "event_data": {}, "from_path": f"{SCRIPT}.inner", "to_path": f"{SCRIPT}.inner",
        "actions": [], "guards": [SCRIPT], "context_out": {}, "timestamp": now[0] + 1,
    })
    page = store.list_executions(limit=1000)
    out = [{"id": s.id, "status": s.status.value, "active_path": s.active_path} for s in page.items]
    store.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
