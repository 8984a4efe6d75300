"""Python's `sqlite3` and execstore in one process, on one file, while another process writes
through execstore: bare `sqlite3.connect`/`close` between execstore calls, and harel's
`SqliteTransport` (Python's sqlite3) on the store's own file under `DistributedRunner`. Two
copies of SQLite live in the process (Python's, and the one inside `execstore._core`); every
execstore call must work, nothing committed may be lost, and the file must pass
`PRAGMA integrity_check`. (Before execstore took open-file-description locks, Python's copy
closing its connection deleted the store's WAL: "disk I/O error".)"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from harel.dsl import definition_from_dsl
from harel.engine.distributed import DistributedRunner
from harel.engine.execution import Execution, Status
from harel.engine.transport.sqlite import SqliteTransport
from harel.spec.states import Event

from execstore.harel import SqliteStore

# Another process: `rounds` times, opens the store, creates an execution and commits `steps`
# steps to it (each with an outbox event and a dedupe marker), closes the store (its last close
# may checkpoint and remove the WAL, as a closing SQLite does when it holds the only lock).
_WRITER = """
import sys
from harel.engine.execution import Execution
from harel.spec.states import Event
from execstore.harel import SqliteStore
path, tag, rounds, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for r in range(rounds):
    with SqliteStore(path) as s:
        exe = Execution(id=f"{tag}-{r}", definition_id="writer")
        s.save(exe)
        for i in range(steps):
            s.commit(exe, [(None, Event(id=f"{tag}-{r}-{i}", kind="Step"))], processed_event_id=f"{tag}-{r}-{i}")
print("committed", rounds * steps)
"""


def start_writer(path: Path, tag: str, rounds: int, steps: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), tag, str(rounds), str(steps)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_writer(proc: subprocess.Popen[str], rounds: int, steps: int) -> None:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert out.strip() == f"committed {rounds * steps}"


def check_writer_rows(store: SqliteStore, tag: str, rounds: int, steps: int, outbox: bool = True) -> None:
    """Every step the writer committed is there: the version, the last dedupe marker, and (unless
    a relay may have delivered them) its outbox events."""
    for r in range(rounds):
        exe = store.load(f"{tag}-{r}")
        assert exe is not None and exe.version == steps + 1, f"{tag}-{r}: {exe}"
        assert store.is_processed(f"{tag}-{r}", f"{tag}-{r}-{steps - 1}")
    if outbox:
        ours = [e for e in store.pending_outbox() if e.event.id.startswith(f"{tag}-")]
        assert len(ours) == rounds * steps


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def test_bare_sqlite3_connections_between_execstore_calls(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    rounds, steps = 20, 25
    writer = start_writer(path, "w", rounds, steps)
    loops = 0
    # Until the writer is done, and as many again after (its last close then finds the file
    # free of any other process: only this process's locks keep its WAL).
    while writer.poll() is None or loops < 400:
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM harel_executions").fetchone()[0] >= loops
        conn.close()
        exe = Execution(id=f"m-{loops}", definition_id="main", status=Status.RUNNING)
        store.save(exe)
        store.commit(exe, [(None, Event(id=f"m-{loops}", kind="Main"))], processed_event_id=f"m-{loops}")
        page = store.list_executions(definition_id="main", limit=1)
        assert page.items and page.items[0].definition_id == "main"
        loaded = store.load(f"m-{loops}")
        assert loaded is not None and loaded.version == 2
        loops += 1
    finish_writer(writer, rounds, steps)
    check_writer_rows(store, "w", rounds, steps)
    assert len(store.ids_with_prefix("m-")) == loops
    assert all(store.is_processed(f"m-{i}", f"m-{i}") for i in range(loops))
    store.close()
    assert integrity(path) == "ok"


CHART = """
machine job {
  initial queued
  state queued { }
  from queued to working on Go
  state working { timeout 2 }
  from working to done on Timeout
  final done success
}
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_harel_transport_on_the_stores_file(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    before = Execution(id="before", definition_id="main")
    store.save(before)  # the store's connections hold their locks on the file and its -shm
    clock = Clock()
    defs = {"job": definition_from_dsl(CHART)}
    rounds, steps = 10, 20
    writer = start_writer(path, "w", rounds, steps)
    jobs = 0
    for batch in range(3):
        # harel's transport (Python's sqlite3) opens and, after the batch, closes the file.
        transport = SqliteTransport(path, clock=clock)
        runner = DistributedRunner(store, transport, defs, clock=clock, trace=True, execution=mode)
        worker = runner.worker(clock=clock)

        def drain() -> None:
            for _ in range(2000):
                if not (worker.step() or worker.fire_due_timers()):
                    return
            raise AssertionError("the worker did not go idle")

        ids = [f"job-{batch}-{i}" for i in range(15)]
        for job_id in ids:
            runner.create("job", execution_id=job_id)
        drain()
        for job_id in ids:
            runner.send(job_id, Event(id=f"go-{job_id}", kind="Go"))
        drain()
        clock.now += 3
        drain()
        for job_id in ids:
            exe = store.load(job_id)
            assert exe is not None and exe.status == Status.DONE and exe.active_path == "done", exe
        assert store.list_executions(definition_id="job", limit=100).items
        jobs += len(ids)
        transport.close()
        # The store after harel's transport closed its connection: every call works.
        assert len(store.ids_with_prefix("job-")) == jobs
        assert store.list_executions(definition_id="job", limit=1).items
        assert store.load("before") is not None
    finish_writer(writer, rounds, steps)
    assert all(store.load(f"job-{b}-{i}").status == Status.DONE for b in range(3) for i in range(15))  # type: ignore[union-attr]
    # harel's relay delivers the store's outbox, the writer's events among them.
    check_writer_rows(store, "w", rounds, steps, outbox=False)
    store.close()
    assert integrity(path) == "ok"


_REFUSED = """
import sqlite3, sys
from execstore import BackendError
from execstore.harel import SqliteStore
try:
    SqliteStore(sys.argv[1])
except BackendError as e:
    print("refused:", e)
else:
    print("opened")
"""


def test_without_ofd_locks_the_store_refuses_a_process_with_sqlite3(tmp_path: Path) -> None:
    """Where the store's SQLite takes POSIX locks (not 64-bit Linux; here forced by
    EXECSTORE_SQLITE_POSIX_LOCKS=1), a process that loaded Python's sqlite3 is refused at open,
    with the cause and the fix; EXECSTORE_ALLOW_OTHER_SQLITE=1 is the caller's word that no
    sqlite3 connection opens the file."""
    env = dict(os.environ, EXECSTORE_SQLITE_POSIX_LOCKS="1")
    run = lambda extra: subprocess.run(  # noqa: E731
        [sys.executable, "-c", _REFUSED, str(tmp_path / "s.db")],
        env={**env, **extra},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out = run({})
    assert out.startswith("refused:"), out
    assert "sqlite3" in out and "open-file-description" in out and "EXECSTORE_ALLOW_OTHER_SQLITE" in out
    assert not (tmp_path / "s.db").exists()
    assert run({"EXECSTORE_ALLOW_OTHER_SQLITE": "1"}).strip() == "opened"


# Another process's try at the exclusive lock on the database (the write lock on SQLite's
# 510-byte shared range), what a closing SQLite takes before it checkpoints and deletes the WAL.
_PROBE = """
import fcntl, sys
with open(sys.argv[1], "r+b") as f:
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002)
    except OSError:
        print("refused")
    else:
        print("granted")
"""


def exclusive_lock_from_another_process(path: Path) -> str:
    return subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_and_its_parent_lock_each_other_out(tmp_path: Path) -> None:
    """A child forked while the store is open inherits its lock descriptors: its own store on
    the file must still exclude the parent's writes and, closing, must not release the parent's
    locks."""
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    store.save(Execution(id="parent", definition_id="main"))
    assert exclusive_lock_from_another_process(path) == "refused"
    steps = 300
    pid = os.fork()
    if pid == 0:  # the child: a store of its own on the same file, then out without cleanup
        code = 1
        try:
            with SqliteStore(path) as own:
                exe = Execution(id="child", definition_id="main")
                own.save(exe)
                for i in range(steps):
                    own.commit(exe, [(None, Event(id=f"c-{i}", kind="Step"))], processed_event_id=f"c-{i}")
            code = 0
        finally:
            os._exit(code)
    exe = Execution(id="parent-steps", definition_id="main")
    store.save(exe)
    for i in range(steps):
        store.commit(exe, [(None, Event(id=f"p-{i}", kind="Step"))], processed_event_id=f"p-{i}")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert exclusive_lock_from_another_process(path) == "refused", "the child released the parent's locks"
    child, parent = store.load("child"), store.load("parent-steps")
    assert child is not None and child.version == steps + 1
    assert parent is not None and parent.version == steps + 1
    assert len(store.pending_outbox()) == 2 * steps
    store.close()
    assert integrity(path) == "ok"
