"""harel's `DistributedRunner` end to end on execstore alone: `execstore.harel.SqliteStore` and
`execstore.harel.SqliteTransport` (and `PostgresStore` with `PostgresTransport`), with two worker processes (each with its own store and
transport on the same two files) and the sender in this one. A statechart with a durable timer
(fired by the workers, through the transport) and a domain event runs every execution to the
end; both workers take part, every message is handled and acked, nothing is left behind."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from harel.dsl import definition_from_dsl
from harel.engine.distributed import DistributedRunner
from harel.engine.execution import Status
from harel.spec.states import Event

from execstore.harel import PostgresStore, PostgresTransport, SqliteStore, SqliteTransport

CHART = """
machine job {
  initial queued
  state queued { timeout 1 }
  from queued to working on Timeout
  state working { }
  from working to done on Finish
  from working to dropped on Drop
  final done success
  final dropped stopped
}
"""

_WORKER = """
import json, sys, threading, time
from pathlib import Path
from harel.dsl import definition_from_dsl
from harel.engine.distributed import DistributedRunner
from execstore.harel import PostgresStore, PostgresTransport, SqliteStore, SqliteTransport
store_path, transport_path, chart, worker_id, stop_file, prefix = sys.argv[1:7]
if store_path.startswith("postgres"):
    store = PostgresStore(store_path, prefix=prefix)
    transport = PostgresTransport(transport_path, prefix=prefix)
else:
    store = SqliteStore(store_path)
    transport = SqliteTransport(transport_path)
runner = DistributedRunner(store, transport, {"job": definition_from_dsl(chart)}, execution="inline")
worker = runner.worker(worker_id=worker_id)
print("ready", flush=True)
handled = fired = 0
while not Path(stop_file).exists():
    if worker.step():
        handled += 1
        continue
    n = worker.fire_due_timers()
    fired += n
    if n == 0:
        time.sleep(0.005)
transport.close()
store.close()
print(json.dumps({"handled": handled, "fired": fired}), flush=True)
"""

N = 12


def _wait(what: str, cond: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_distributed_runner_with_two_worker_processes(tmp_path: Path, backend: str, request: Any) -> None:
    stop = tmp_path / "stop"
    store: Any
    transport: Any
    if backend == "sqlite":
        prefix = "harel"
        store_path, transport_path = str(tmp_path / "store.db"), str(tmp_path / "transport.db")
        store, transport = SqliteStore(store_path), SqliteTransport(transport_path)
    else:
        from conftest import pg_url

        from execstore._core import HarelTransport

        store_path = transport_path = pg_url()
        prefix = request.getfixturevalue("pg_prefix")
        request.addfinalizer(lambda: HarelTransport.drop_postgres(store_path, prefix))
        store = PostgresStore(store_path, prefix=prefix)
        transport = PostgresTransport(transport_path, prefix=prefix)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, store_path, transport_path, CHART, f"w{i}", str(stop), prefix],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        for w in workers:
            assert w.stdout is not None and w.stdout.readline().strip() == "ready"
        runner = DistributedRunner(store, transport, {"job": definition_from_dsl(CHART)}, execution="inline")
        ids = [f"job-{i:02d}" for i in range(N)]
        for i, eid in enumerate(ids):
            runner.create("job", execution_id=eid, priority=i % 3)

        def status(eid: str) -> object:
            exe = store.load(eid)
            return exe.active_path if exe is not None else None

        # the workers run the Starts, then fire each one's timer (a Timeout through the transport)
        _wait("every job working", lambda: all(status(e) == "working" for e in ids))
        for i, eid in enumerate(ids):
            runner.send(eid, Event(id=f"{eid}-end", kind="Drop" if i == 0 else "Finish"))
        _wait("every job finished", lambda: all(status(e) in ("done", "dropped") for e in ids))
        _wait("the transport drained", lambda: transport.depth() == 0)
    finally:
        stop.touch()
        outs = [w.communicate(timeout=60) for w in workers]
    for w, (out, err) in zip(workers, outs):
        assert w.returncode == 0, err
    counts = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    # per job: its Start, its Timeout and its last event, each claimed, handled and acked (a
    # timer both workers found due is published twice, and its copy acked as processed)
    assert sum(c["handled"] for c in counts) >= 3 * N, counts
    assert sum(c["fired"] for c in counts) >= N, counts
    assert all(c["handled"] > 0 for c in counts), f"both workers took part: {counts}"
    exes = [store.load(e) for e in ids]
    assert exes[0] is not None and exes[0].active_path == "dropped" and exes[0].status != Status.RUNNING
    assert all(e is not None and e.status == Status.DONE and e.active_path == "done" for e in exes[1:])
    # every event changed its execution once: the same number of versions for each
    assert len({e.version for e in exes if e is not None}) == 1, [e.version for e in exes if e is not None]
    assert store.pending_outbox() == [] and store.due_timers(time.time() + 1e6) == []
    transport.close()
    store.close()
