"""harel's engine end to end on execstore.harel.SqliteStore: a statechart in harel's DSL with
an orthogonal state (regions run as spawned children that report back through the outbox,
then join), durable timers and a cancel from the control plane, driven to the end by
`DurableRunner` and by `DistributedRunner` with harel's `SqliteTransport` and a worker, in
`execution="inline"` and `"background"`. After every step the store's tables hold the rows
harel's own `SqliteStore` holds for the same run (wall-clock fields and random ids masked)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from harel.dsl import definition_from_dsl
from harel.engine.distributed import DistributedRunner
from harel.engine.durable import DurableRunner
from harel.engine.execution import Status
from harel.engine.store import SqliteStore as HarelSqliteStore
from harel.engine.transport.sqlite import SqliteTransport
from harel.spec.states import Event

from execstore.harel import SqliteStore

CHART = """
machine order {
  initial waiting
  state waiting {
    timeout 5
  }
  from waiting to fork on Timeout
  from waiting to stopped on Stop
  orthogonal fork {
    state pay {
      initial charging
      state charging { timeout 3 }
      from charging to charged on Timeout
      final charged success
    }
    state ship {
      initial packing
      state packing { }
      from packing to shipped on Packed
      final shipped success
    }
  }
  from fork join all to done else to failed
  final done success
  final failed bad
  final stopped stopped
}
"""

TABLES = ["executions", "outbox", "processed_events", "timers", "spawns", "trace"]
_UUID = re.compile(r"[0-9a-f]{32}")
_DATETIME = re.compile(r'"(created_time|received_time)":"[^"]*"')


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return _DATETIME.sub(r'"\1":"<time>"', _UUID.sub("<uuid>", value))
    return value


_DUMP = """
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
# harel's own columns: execstore's migration 13 adds the listing's keys after them.
cols = {"executions": "id, definition_id, data, version"}
print(json.dumps({t: conn.execute(f"SELECT {cols.get(t, '*')} FROM harel_{t}").fetchall() for t in sys.argv[2:]}))
"""


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of harel's six tables, masked and sorted. Read in another process: two
    copies of SQLite in one process (Python's and execstore's) must not open the same file,
    or closing one drops the other's POSIX locks (SQLite's "multiple copies" hazard)."""
    out = subprocess.run(
        [sys.executable, "-c", _DUMP, str(path), *TABLES], check=True, capture_output=True, text=True
    ).stdout
    rows = json.loads(out)
    return {t: sorted((tuple(_mask(v) for v in r) for r in rows[t]), key=repr) for t in TABLES}


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


Snap = Callable[[str], None]


def durable_run(store: Any, mode: str, snap: Snap) -> None:
    clock = Clock()
    defs = {"order": definition_from_dsl(CHART)}
    r = DurableRunner(store, defs, clock=clock, trace=True, execution=mode)
    r.create("order", execution_id="ord-a")
    r.create("order", execution_id="ord-b")
    snap("created")
    r.cancel("ord-b")  # the control plane
    snap("cancelled")
    clock.now += 6
    fired = r.fire_due_timers()  # ord-a's waiting timeout: forks the regions
    assert fired >= 1
    snap(f"forked, {fired} fired")
    kids = sorted(store.ids_with_prefix("ord-a:"))
    assert len(kids) == 2
    ship = next(k for k in kids if "ship" in k)
    r.process(ship, Event(id="packed-1", kind="Packed"))
    snap("packed")
    clock.now += 4
    fired = r.fire_due_timers()  # the pay region's timer, then the join
    assert fired >= 1
    snap(f"joined, {fired} fired")
    a, b = store.load("ord-a"), store.load("ord-b")
    assert a.status == Status.DONE and a.active_path == "done"
    assert b.status == Status.CANCELLED
    assert all(store.load(k).status == Status.DONE for k in kids)
    assert store.pending_outbox() == [] and store.pending_spawns() == []
    assert store.due_timers(clock.now + 1e6) == []


def distributed_run(store: Any, transport_path: Path, mode: str, snap: Snap) -> None:
    clock = Clock()
    defs = {"order": definition_from_dsl(CHART)}
    transport = SqliteTransport(transport_path, clock=clock)
    r = DistributedRunner(store, transport, defs, clock=clock, trace=True, execution=mode)
    w = r.worker(clock=clock)

    def drain() -> None:
        for _ in range(1000):
            if not (w.step() or w.fire_due_timers()):
                return
        raise AssertionError("the worker did not go idle")

    r.create("order", execution_id="ord-a")
    r.create("order", execution_id="ord-b")
    drain()
    snap("created")
    r.cancel("ord-b")
    drain()
    snap("cancelled")
    clock.now += 6
    drain()
    snap("forked")
    kids = sorted(store.ids_with_prefix("ord-a:"))
    assert len(kids) == 2
    ship = next(k for k in kids if "ship" in k)
    r.send(ship, Event(id="packed-1", kind="Packed"))
    drain()
    snap("packed")
    clock.now += 4
    drain()
    snap("joined")
    a, b = store.load("ord-a"), store.load("ord-b")
    assert a.status == Status.DONE and a.active_path == "done"
    assert b.status == Status.CANCELLED
    assert all(store.load(k).status == Status.DONE for k in kids)
    assert store.pending_outbox() == [] and store.pending_spawns() == []
    assert store.due_timers(clock.now + 1e6) == []
    transport.close()


def _compare(tmp_path: Path, run: Callable[[Any, Path, Snap], None]) -> None:
    snaps: dict[str, list[Any]] = {"harel": [], "execstore": []}
    for name in ("harel", "execstore"):
        path = tmp_path / f"{name}.db"
        store: Any = HarelSqliteStore(path) if name == "harel" else SqliteStore(path)
        run(store, tmp_path / f"{name}-transport.db", lambda label, p=path, n=name: snaps[n].append((label, dump(p))))
        store.close()
    assert [s[0] for s in snaps["harel"]] == [s[0] for s in snaps["execstore"]]
    for (label, theirs), (_, ours) in zip(snaps["harel"], snaps["execstore"]):
        for t in TABLES:
            assert ours[t] == theirs[t], f"after {label}: harel_{t} differs"
    final = snaps["execstore"][-1][1]
    assert len(final["executions"]) == 4 and final["trace"]
    theirs = HarelSqliteStore(tmp_path / "execstore.db")  # harel reads the file execstore wrote
    root = theirs.load("ord-a")
    assert root is not None and root.status == Status.DONE
    theirs.close()


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_durable_runner_rows_match_harel(tmp_path: Path, mode: str) -> None:
    _compare(tmp_path, lambda store, _t, snap: durable_run(store, mode, snap))


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_distributed_runner_rows_match_harel(tmp_path: Path, mode: str) -> None:
    _compare(tmp_path, lambda store, transport, snap: distributed_run(store, transport, mode, snap))


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_durable_runner_on_memory(mode: str) -> None:
    store = SqliteStore(":memory:")
    durable_run(store, mode, lambda label: None)
    store.close()


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_durable_runner_on_postgres(mode: str, pg_prefix: str) -> None:
    from execstore.harel import PostgresStore

    store = PostgresStore(os.environ["EXECSTORE_PG_URL"], prefix=pg_prefix)  # set: pg_prefix skips otherwise
    durable_run(store, mode, lambda label: None)
    store.close()


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_distributed_runner_on_postgres(mode: str, pg_prefix: str, tmp_path: Path) -> None:
    from execstore.harel import PostgresStore

    store = PostgresStore(os.environ["EXECSTORE_PG_URL"], prefix=pg_prefix)  # set: pg_prefix skips otherwise
    distributed_run(store, tmp_path / "transport.db", mode, lambda label: None)
    store.close()


async def async_durable_run(store: Any) -> None:
    from harel.engine.aio.durable import AsyncDurableRunner

    clock = Clock()
    r = AsyncDurableRunner(store, {"order": definition_from_dsl(CHART)}, clock=clock, trace=True)
    await r.create("order", execution_id="ord-a")
    await r.create("order", execution_id="ord-b")
    await r.cancel("ord-b")
    clock.now += 6
    assert await r.fire_due_timers() >= 1
    kids = sorted(await store.ids_with_prefix("ord-a:"))
    assert len(kids) == 2
    await r.process(next(k for k in kids if "ship" in k), Event(id="packed-1", kind="Packed"))
    clock.now += 4
    assert await r.fire_due_timers() >= 1
    a, b = await store.load("ord-a"), await store.load("ord-b")
    assert a.status == Status.DONE and a.active_path == "done" and b.status == Status.CANCELLED
    assert await store.pending_outbox() == [] and await store.pending_spawns() == []


@pytest.mark.asyncio
async def test_async_durable_runner_rows_match_harel(tmp_path: Path) -> None:
    """harel's AsyncDurableRunner on AsyncSqliteStore (an async store, as harel tells them
    apart) leaves the rows harel's own AsyncSqliteStore leaves."""
    from harel.engine.aio_store import AsyncSqliteStore as HarelAsyncSqliteStore

    from execstore.harel import AsyncSqliteStore

    dumps = {}
    for name, create in (("harel", HarelAsyncSqliteStore.create), ("execstore", AsyncSqliteStore.create)):
        path = tmp_path / f"{name}.db"
        store: Any = await create(str(path))
        await async_durable_run(store)
        dumps[name] = dump(path)
        await store.close()
    assert dumps["execstore"] == dumps["harel"]
    assert len(dumps["execstore"]["executions"]) == 4 and dumps["execstore"]["trace"]
