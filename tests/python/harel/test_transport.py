"""execstore.harel's transports: harel's own contract checks (`harel.testing.transport`) on
`SqliteTransport` and `AsyncSqliteTransport` (a file and `:memory:`); harel's own
`SqliteTransport` and ours on one file, each way round (the rows byte for byte, leases and parks
seen by the other); bad input refused with nothing changed."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from harel.engine.transport import Lease
from harel.spec.states import Event
from harel.testing.transport import assert_async_transport_contract, assert_transport_contract

from execstore import InvalidInputError
from execstore.harel import AsyncSqliteTransport, SqliteTransport


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _files(tmp_path: Path) -> Callable[[], str]:
    counter = itertools.count()
    return lambda: str(tmp_path / f"t{next(counter)}.db")


@pytest.mark.parametrize("where", ["file", "memory"])
def test_harel_transport_contract(tmp_path: Path, where: str) -> None:
    path = _files(tmp_path) if where == "file" else (lambda: ":memory:")
    assert_transport_contract(lambda clock: SqliteTransport(path(), clock))
    assert_transport_contract(lambda clock: SqliteTransport(path(), clock, prefix="other", synchronous="normal"))


@pytest.mark.asyncio
@pytest.mark.parametrize("where", ["file", "memory"])
async def test_harel_async_transport_contract(tmp_path: Path, where: str) -> None:
    path = _files(tmp_path) if where == "file" else (lambda: ":memory:")
    await assert_async_transport_contract(lambda clock: AsyncSqliteTransport.create(path(), clock))


def test_a_drop_in_for_harels_classes() -> None:
    from harel.engine.aio_transport import AsyncTransport
    from harel.engine.transport import Transport

    t = SqliteTransport()
    assert isinstance(t, Transport)
    t.close()
    with pytest.raises(ValueError, match="closed"):
        t.claim("w", 30)


@pytest.mark.asyncio
async def test_async_is_harels_async_transport() -> None:
    from harel.engine.aio.facade import _is_async
    from harel.engine.aio_transport import AsyncTransport

    t = await AsyncSqliteTransport.create(":memory:")
    assert isinstance(t, AsyncTransport) and _is_async(t)
    await t.publish("G", Event(kind="a"))
    lease = await t.claim("w", 30)
    assert lease is not None and lease.event.kind == "a"
    await t.ack(lease)
    assert await t.depth() == 0
    await t.close()


def test_bad_input_is_refused_and_changes_nothing() -> None:
    clock = Clock()
    t = SqliteTransport(":memory:", clock)
    t.publish("G", Event(kind="e1"))
    with pytest.raises(InvalidInputError):
        t.publish("", Event(kind="x"))
    with pytest.raises(InvalidInputError):
        t.publish("G", Event(kind="x"), priority=9)
    with pytest.raises(TypeError):
        t.publish("G", {"kind": "x"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        t.claim("w", float("nan"))
    with pytest.raises(InvalidInputError):
        t.claim("", 30)
    assert t.depth() == 1
    lease = t.claim("w", 30)
    assert lease is not None and lease.event.kind == "e1"
    with pytest.raises(InvalidInputError):
        t.nack(lease, delay=-1)
    assert t.claim("w", 30) is None, "the refused nack left the lease"
    with pytest.raises(ValueError, match="create_schema=False"):
        SqliteTransport(":memory:", create_schema=False)
    with pytest.raises(InvalidInputError):
        SqliteTransport(":memory:", prefix="no-dashes")
    with pytest.raises(InvalidInputError):
        SqliteTransport(":memory:", synchronous="sometimes")
    t.close()


# --- harel's own SqliteTransport on the same file, in another process --------------------------

_HAREL = """
import json, sys
from harel.engine.transport import SqliteTransport, Lease
from harel.spec.states import Event
path, now, ops = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
t = SqliteTransport(path, clock=lambda: now)
out = []
for op in ops:
    if op[0] == "publish":
        t.publish(op[1], Event.model_validate_json(op[2]), op[3])
        out.append(None)
    elif op[0] == "claim":
        lease = t.claim(op[1], op[2], op[3])
        out.append(None if lease is None else [lease.seq, lease.group_id, lease.event.model_dump_json()])
        if lease is not None and op[4] == "ack":
            t.ack(lease)
        elif lease is not None and op[4].startswith("park"):
            t.nack(lease, delay=float(op[4][4:]))
t.close()
print(json.dumps(out))
"""

_DUMP = """
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
print(json.dumps({
    "messages": conn.execute("SELECT * FROM harel_transport_messages ORDER BY seq").fetchall(),
    "groups": conn.execute("SELECT * FROM harel_transport_groups ORDER BY rowid").fetchall(),
    "schema": conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall(),
}))
"""


def harel(path: Path, now: float, *ops: list[Any]) -> list[Any]:
    """Runs `ops` on harel's own SqliteTransport over `path` in another process (two copies of
    SQLite in one process must not open one file) at the clock `now`."""
    out = subprocess.run(
        [sys.executable, "-c", _HAREL, str(path), repr(now), json.dumps(ops)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: list[Any] = json.loads(out)
    return result


def dump(path: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _DUMP, str(path)], check=True, capture_output=True, text=True).stdout
    rows: dict[str, Any] = json.loads(out)
    return rows


def _event(i: int) -> Event:
    return Event(id=f"evt-{i}", kind=f"K{i}", data={"n": i, "text": "é ✓", "f": 0.1 * i})


def test_the_same_rows_as_harels_transport(tmp_path: Path) -> None:
    """The same calls leave the same rows and schema, byte for byte, whichever transport makes
    them (a publish, a claim's lease and round-robin stamp, a park, an ack)."""
    clock = Clock(1_700_000_000.5)
    ops: list[list[Any]] = [["publish", g, _event(i).model_dump_json(), p] for i, (g, p) in enumerate(
        [("A", 0), ("B", 2), ("A", 3), ("C", 1)]
    )]
    harel(tmp_path / "harel.db", clock.now, *ops)
    ours = SqliteTransport(tmp_path / "ours.db", clock)
    for op in ops:
        ours.publish(op[1], Event.model_validate_json(op[2]), op[3])
    ours.close()
    assert dump(tmp_path / "ours.db") == dump(tmp_path / "harel.db")

    claims: list[list[Any]] = [["claim", "w1", 30.0, 0, "ack"], ["claim", "w1", 30.0, 2, "park7.5"], ["claim", "w2", 12.25, 0, "keep"]]
    theirs = harel(tmp_path / "harel.db", clock.now, *claims)
    ours = SqliteTransport(tmp_path / "ours.db", clock)
    mine: list[Any] = []
    for _, worker, visibility, min_priority, then in claims:
        lease = ours.claim(worker, visibility, min_priority)
        assert lease is not None
        mine.append([lease.seq, lease.group_id, lease.event.model_dump_json()])
        if then == "ack":
            ours.ack(lease)
        elif then.startswith("park"):
            ours.nack(lease, delay=float(then[4:]))
    ours.close()
    assert mine == theirs
    after = dump(tmp_path / "ours.db")
    assert after == dump(tmp_path / "harel.db")
    assert [m[3] for m in after["messages"]] == ["__parked__", None, "w2"]


def test_harel_publishes_and_we_claim(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    clock = Clock()
    ops = [["publish", "G", _event(i).model_dump_json(), 0] for i in range(3)]
    ops.append(["publish", "H", _event(9).model_dump_json(), 0])
    harel(path, clock.now, *ops)
    ours = SqliteTransport(path, clock, create_schema=False)
    first = ours.claim("w", 30)
    assert first is not None and first.group_id == "G" and first.event == _event(0)
    second = ours.claim("w", 30)
    assert second is not None and second.group_id == "H" and second.event == _event(9)
    assert ours.claim("w", 30) is None, "G is in flight"
    # harel sees our lease: G's next message is not claimable until the lease lapses
    assert harel(path, clock.now + 1, ["claim", "h", 30.0, 0, "keep"]) == [None]
    ours.ack(first)
    ours.ack(second)
    got = harel(path, clock.now + 2, ["claim", "h", 5.0, 0, "keep"])
    assert got[0][1] == "G" and Event.model_validate_json(got[0][2]) == _event(1)
    # harel's lease holds against us, then lapses
    assert ours.claim("w", 30) is None
    clock.now += 8
    again = ours.claim("w", 30)
    assert again is not None and again.event == _event(1)
    ours.ack(again)
    last = ours.claim("w", 30)
    assert last is not None and last.event == _event(2)
    ours.ack(last)
    assert ours.depth() == 0
    ours.close()
    assert dump(path)["groups"] == [], "drained groups are dropped"


def test_we_publish_and_harel_claims(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    clock = Clock()
    ours = SqliteTransport(path, clock)
    for i in range(3):
        ours.publish("G", _event(i), priority=1)
    ours.publish("lo", _event(7))
    lease = ours.claim("w", 30, min_priority=1)
    assert lease is not None and lease.event == _event(0)
    ours.nack(lease, delay=10)  # parked: harel must not claim G before it ends
    ours.close()
    got = harel(path, clock.now + 1, ["claim", "h", 30.0, 0, "ack"], ["claim", "h", 30.0, 0, "keep"])
    assert got[0][1] == "lo" and Event.model_validate_json(got[0][2]) == _event(7)
    assert got[1] is None, "our park holds G against harel"
    got = harel(path, clock.now + 11, *[["claim", "h", 30.0, 1, "ack"]] * 3, ["claim", "h", 30.0, 0, "ack"])
    assert [Event.model_validate_json(g[2]) for g in got[:3]] == [_event(0), _event(1), _event(2)]
    assert got[3] is None
    ours = SqliteTransport(path, clock)
    assert ours.depth() == 0
    ours.close()


def test_lease_is_harels() -> None:
    t = SqliteTransport()
    t.publish("G", Event(kind="a"))
    lease = t.claim("w", 30)
    assert type(lease) is Lease and lease.token == "" and lease.seq == 1
    t.close()


# --- PostgreSQL ---------------------------------------------------------------------------------


def _pg_prefixes(url: str) -> tuple[Callable[[], str], list[str]]:
    import uuid

    made: list[str] = []

    def fresh() -> str:
        prefix = "t" + uuid.uuid4().hex[:12]
        made.append(prefix)
        return prefix

    return fresh, made


def _drop(url: str, prefixes: list[str]) -> None:
    from execstore._core import HarelTransport

    for prefix in prefixes:
        HarelTransport.drop_postgres(url, prefix)


def test_harel_transport_contract_on_postgres() -> None:
    from conftest import pg_url

    from execstore.harel import PostgresTransport

    url = pg_url()
    fresh, made = _pg_prefixes(url)
    try:
        assert_transport_contract(lambda clock: PostgresTransport(url, clock, prefix=fresh(), max_connections=2))
    finally:
        _drop(url, made)


@pytest.mark.asyncio
async def test_harel_async_transport_contract_on_postgres() -> None:
    from conftest import pg_url

    from execstore.harel import AsyncPostgresTransport

    url = pg_url()
    fresh, made = _pg_prefixes(url)
    try:
        await assert_async_transport_contract(lambda clock: AsyncPostgresTransport.from_dsn(url, clock, 2, prefix=fresh()))
    finally:
        _drop(url, made)


def test_harels_postgres_transport_and_ours_on_one_database() -> None:
    """harel's own PostgresTransport (psycopg) and ours on the same tables, each way round:
    messages published by one are claimed by the other in order, a lease or a park held by one
    holds against the other, and the message rows are the same bytes."""
    from conftest import pg_url

    psycopg = pytest.importorskip("psycopg")
    from harel.engine.transport import PostgresTransport as HarelPg

    from execstore.harel import PostgresTransport

    url = pg_url()
    fresh, made = _pg_prefixes(url)
    prefix = fresh()
    clock = Clock()
    try:
        ours = PostgresTransport(url, clock, prefix=prefix)  # ours creates the tables
        theirs = HarelPg(psycopg.connect(url), clock, prefix=prefix)  # harel adds its functions
        for i in range(3):
            theirs.publish("G", _event(i), priority=1)
        ours.publish("H", _event(7), priority=0)
        ours.publish("G", _event(3), priority=4)  # G exists: its priority stays 1
        first = ours.claim("w", 30, min_priority=1)
        assert first is not None and first.group_id == "G" and first.event == _event(0) and first.token
        assert theirs.claim("h", 30, min_priority=1) is None, "our lease holds G against harel"
        h = theirs.claim("h", 30)
        assert h is not None and h.group_id == "H" and h.event == _event(7)
        assert ours.claim("w", 30) is None, "harel's lease holds H against us"
        theirs.ack(h)
        ours.nack(first, delay=10)
        assert theirs.claim("h", 30) is None, "our park holds G against harel"
        clock.now += 11
        again = theirs.claim("h", 30)
        assert again is not None and again.event == _event(0)
        theirs.ack(again)
        got = []
        for _ in range(3):
            lease = ours.claim("w", 30)
            assert lease is not None
            got.append(lease.event)
            ours.ack(lease)
        assert got == [_event(1), _event(2), _event(3)]
        assert ours.claim("w", 30) is None and ours.depth() == 0
        # the same rows: publish the same events through each, on two fresh prefixes
        rows = {}
        for name in ("harel", "ours"):
            p = fresh()
            t: Any = HarelPg(psycopg.connect(url), clock, prefix=p) if name == "harel" else PostgresTransport(url, clock, prefix=p)
            for i, g in enumerate(["A", "B", "A"]):
                t.publish(g, _event(i), priority=i)
            t.close()
            with psycopg.connect(url) as conn:
                rows[name] = (
                    conn.execute(f"SELECT seq, group_id, event FROM {p}_transport_messages ORDER BY seq").fetchall(),
                    conn.execute(f"SELECT * FROM {p}_transport_groups ORDER BY group_id").fetchall(),
                )
        assert rows["ours"] == rows["harel"]
        ours.close()
        theirs.close()
    finally:
        _drop(url, made)
