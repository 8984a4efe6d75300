"""execstore.harel's stores beyond harel's contract checks: versions on the caller's object,
harel's StoreConflict, load_for_event, the settable trace_max, bad input and a closed store
(a clear exception, nothing changed), listing pages, and several threads at once."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest
from harel.engine.execution import Execution, ExecutionPage, ExecutionSummary, Status
from harel.engine.store import OutboxEntry, SpawnEntry, StoreConflict, TimerOp
from harel.engine.store import SqliteStore as HarelSqliteStore
from harel.spec.states import Event

import execstore
from execstore.harel import AsyncSqliteStore, SqliteStore


def test_versions_and_conflict(store: SqliteStore) -> None:
    exe = Execution(id="v-1", definition_id="d", context={"n": 1})
    store.save(exe)
    assert exe.version == 1
    stale = store.load("v-1")
    assert stale is not None and stale.version == 1 and stale.context == {"n": 1}
    exe.context["n"] = 2
    assert store.commit(exe, [("v-1", Event(id="e1", kind="K"))], processed_event_id="p1") != []
    assert exe.version == 2
    stale.context["n"] = 99
    with pytest.raises(StoreConflict) as info:
        store.commit(stale, [("v-1", Event(id="e2", kind="K"))], processed_event_id="p2")
    assert stale.version == 1  # left as it was
    assert info.value.execution_id == "v-1" and info.value.expected == 1 and info.value.found == 2
    loaded, seen = store.load_for_event("v-1", "p1")
    assert loaded is not None and loaded.context == {"n": 2} and seen is True
    assert store.load_for_event("v-1", "p2")[1] is False  # the lost commit left nothing
    assert store.load_for_event("nope", "p1") == (None, False)
    assert [e.event.id for e in store.pending_outbox() if e.target_id == "v-1"] == ["e1"]
    with pytest.raises(StoreConflict):
        store.save(Execution(id="v-1", definition_id="d"))  # version 0 over a stored row


def test_types_returned(store: SqliteStore) -> None:
    exe = Execution(id="t-1", definition_id="d", status=Status.RUNNING)
    store.commit(
        exe,
        [(None, Event(id="e", kind="K", data={"x": 1.5}))],
        timers=(TimerOp("schedule", "p", 5.0),),
        spawns=(("t-1:c", "r", {"a": [1, "b"]}),),
        trace={"event_kind": "K", "nested": {"f": 0.1}},
    )
    page = store.list_executions()
    assert isinstance(page, ExecutionPage) and isinstance(page.items[0], ExecutionSummary)
    out = store.pending_outbox()
    assert isinstance(out[0], OutboxEntry) and isinstance(out[0].event, Event) and out[0].event.data == {"x": 1.5}
    sp = store.pending_spawns()
    assert isinstance(sp[0], SpawnEntry) and sp[0].context == {"a": [1, "b"]} and sp[0].parent_id == "t-1"
    assert store.due_timers(5.0) == [("t-1", "p", 5.0)] and store.due_timers(4.9) == []
    assert store.read_trace("t-1") == [{"event_kind": "K", "nested": {"f": 0.1}, "index": 0}]
    store.delete_timer("t-1", "p", 4.0)  # stale fire_at: kept
    assert store.due_timers(5.0) != []
    store.delete_timer("t-1", "p", 5.0)
    assert store.due_timers(5.0) == []
    store.ack_outbox(out[0].seq)
    store.ack_outbox(out[0].seq)  # already acked: no error, as in harel
    store.ack_spawn(sp[0].seq)
    store.ack_spawn(sp[0].seq)
    assert store.pending_outbox() == [] and store.pending_spawns() == []


def test_trace_max_is_settable(store: SqliteStore) -> None:
    assert store.trace_max == 200
    exe = Execution(id="tr-1", definition_id="d")
    store.save(exe)
    store.trace_max = 3
    assert store.trace_max == 3
    for i in range(5):
        store.commit(exe, [], trace={"i": i})
    assert [s["index"] for s in store.read_trace("tr-1")] == [2, 3, 4]
    store.trace_max = 0  # keep every step
    for i in range(5, 10):
        store.commit(exe, [], trace={"i": i})
    assert [s["index"] for s in store.read_trace("tr-1")] == list(range(2, 10))
    assert store.load("tr-1") is not None  # the same database throughout (`:memory:` too)
    with pytest.raises(ValueError):
        store.trace_max = -1
    assert store.trace_max == 0


def test_listing_pages_and_limits(store: SqliteStore) -> None:
    for i in range(25):
        store.save(Execution(id=f"l-{i:03}", definition_id="ld", status=Status.RUNNING if i % 2 else Status.DONE))
    ids, cursor = [], None
    while True:
        page = store.list_executions(definition_id="ld", limit=7, cursor=cursor)
        ids += [s.id for s in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert ids == [f"l-{i:03}" for i in range(25)]
    assert len(store.list_executions(definition_id="ld", status=[Status.RUNNING], limit=100).items) == 12
    assert len(store.list_executions(definition_id="ld", status=iter([Status.DONE]), limit=20_000).items) == 13
    with pytest.raises(execstore.InvalidInputError):
        store.list_executions(cursor="not-a-cursor")
    with pytest.raises(ValueError):
        store.list_executions(limit=0)


def test_listing_filters_by_time_and_search(store: SqliteStore) -> None:
    for i in range(6):
        exe = Execution(id=f"f-{i}", definition_id="fd", status=Status.DONE if i >= 4 else Status.RUNNING)
        exe.created_at = 100.0 + i
        exe.updated_at = 200.0 + i
        exe.finished_at = 300.0 + i if i >= 4 else None
        exe.active_path = "root.busy" if i % 2 else "root.idle"
        store.save(exe)

    def ids(**filters: object) -> list[str]:
        return [s.id for s in store.list_executions(definition_id="fd", **filters).items]  # type: ignore[arg-type]

    assert ids(created_after=102.0, created_before=104.0) == ["f-2", "f-3"]
    assert ids(updated_after=204) == ["f-4", "f-5"]
    assert ids(updated_before=201.5) == ["f-0", "f-1"]
    assert ids(finished_after=0.0) == ["f-4", "f-5"]
    assert ids(finished_before=305.0) == ["f-4"]
    assert ids(search="f-3") == ["f-3"]
    assert ids(search="root.busy") == ["f-1", "f-3", "f-5"]
    assert ids(search="root.busy", created_before=103.0) == ["f-1"]
    for bad in [
        {"created_after": math.nan},
        {"updated_before": -1.0},
        {"finished_after": 5.0, "finished_before": 4.0},
        {"search": ""},
    ]:
        with pytest.raises(execstore.InvalidInputError):
            ids(**bad)
    with pytest.raises(TypeError):
        ids(created_after="yesterday")
    with pytest.raises(TypeError):
        ids(search=3)


def test_listing_most_recently_updated_first(store: SqliteStore) -> None:
    for i, (updated, created) in enumerate([(5.0, 2.0), (9.0, 8.0), (1.0, 4.0), (9.0, 6.0), (3.0, 0.0)]):
        exe = Execution(id=f"u-{i}", definition_id="ud")
        exe.updated_at = updated
        exe.created_at = created
        store.save(exe)

    def walk(**kw: object) -> list[str]:
        ids: list[str] = []
        cursor = None
        while True:
            page = store.list_executions(definition_id="ud", limit=2, cursor=cursor, **kw)  # type: ignore[arg-type]
            ids += [s.id for s in page.items]
            if page.next_cursor is None:
                return ids
            cursor = page.next_cursor

    assert walk(order="updated") == ["u-3", "u-1", "u-0", "u-4", "u-2"]
    assert walk() == ["u-0", "u-1", "u-2", "u-3", "u-4"]
    assert walk(order="id") == walk()
    cursor = store.list_executions(definition_id="ud", limit=2, order="updated").next_cursor
    with pytest.raises(execstore.InvalidInputError):
        store.list_executions(definition_id="ud", cursor=cursor)
    assert walk(order="created") == ["u-1", "u-3", "u-2", "u-0", "u-4"]
    with pytest.raises(execstore.InvalidInputError):
        store.list_executions(order="oldest")
    with pytest.raises(TypeError):
        store.list_executions(order=None)  # type: ignore[arg-type]


def test_bad_input_changes_nothing(store: SqliteStore) -> None:
    exe = Execution(id="b-1", definition_id="d")
    store.save(exe)
    bad_calls = [
        lambda: store.commit(None, []),  # type: ignore[arg-type]
        lambda: store.commit(exe, None),  # type: ignore[arg-type]
        lambda: store.commit(exe, [("b-1", "not an event")]),  # type: ignore[list-item]
        lambda: store.commit(exe, [], timers=(("schedule", "p", 1.0),)),  # type: ignore[arg-type]
        lambda: store.commit(exe, [], timers=(TimerOp("later", "p", 1.0),)),
        lambda: store.commit(exe, [], timers=(TimerOp("schedule", "p", math.nan),)),
        lambda: store.commit(exe, [], spawns=(("c", "r", None),)),  # type: ignore[arg-type]
        lambda: store.commit(exe, [], trace="step"),  # type: ignore[arg-type]
        lambda: store.commit(exe, [], processed_event_id=7),  # type: ignore[arg-type]
        lambda: store.commit(Execution(id="", definition_id="d"), []),
        lambda: store.commit(Execution(id="b-1", definition_id="d", version=1, context={"big": 2**70}), []),
        lambda: store.commit(exe, [], trace={"big": -(2**64)}),
        lambda: store.commit(exe, [(None, Event(kind="K", data={"n": 10**30}))]),
        lambda: store.commit(exe, [], spawns=(("c", "r", {"n": 2**65}),)),
        lambda: store.load(None),  # type: ignore[arg-type]
        lambda: store.purge("b-1", None),  # type: ignore[arg-type]
        lambda: store.ack_outbox("1"),  # type: ignore[arg-type]
        lambda: store.due_timers(None),  # type: ignore[arg-type]
        lambda: store.list_executions(status=Status.DONE),
        lambda: store.list_executions(status=["NOPE"]),  # type: ignore[list-item]
    ]
    for call in bad_calls:
        with pytest.raises((TypeError, ValueError, execstore.StoreError)):
            call()
    assert exe.version == 1
    loaded = store.load("b-1")
    assert loaded is not None and loaded.version == 1
    assert store.pending_outbox() == [] and store.pending_spawns() == [] and store.due_timers(1e12) == []
    assert store.read_trace("b-1") == []
    fits = Execution(id="b-2", definition_id="d", context={"i": -(2**63), "u": 2**64 - 1, "s": "12345678901234567890123"})
    store.save(fits)  # 64-bit integers, and long digit runs inside strings, are fine
    assert store.load("b-2") == fits


def test_closed_store_raises(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "c.db")
    store.save(Execution(id="c-1", definition_id="d"))
    store.close()
    assert store.closed
    with pytest.raises(ValueError, match="closed"):
        store.load("c-1")
    with pytest.raises(ValueError, match="closed"):
        store.save(Execution(id="c-2", definition_id="d"))
    store.close()  # twice: harmless
    again = SqliteStore(tmp_path / "c.db")
    assert again.load("c-1") is not None and again.load("c-2") is None
    again.close()


def test_memory_stores_are_private() -> None:
    a, b = SqliteStore(), SqliteStore(":memory:")
    a.save(Execution(id="m-1", definition_id="d"))
    assert a.load("m-1") is not None and b.load("m-1") is None
    a.close()
    b.close()


def test_harel_reads_what_execstore_wrote(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    ours = SqliteStore(path)
    exe = Execution(id="h-1", definition_id="d", context={"k": "välue", "f": 0.1})
    ours.commit(exe, [("h-1", Event(id="e", kind="K"))], processed_event_id="p", trace={"a": 1})
    ours.close()  # one SQLite library per file at a time in one process
    theirs = HarelSqliteStore(path)
    loaded = theirs.load("h-1")
    assert loaded is not None and loaded.model_dump_json() == exe.model_dump_json()
    assert theirs.is_processed("h-1", "p") and theirs.read_trace("h-1") == [{"a": 1, "index": 0}]
    assert [e.event.id for e in theirs.pending_outbox()] == ["e"]
    theirs.close()


def test_threads_share_one_store(store: SqliteStore) -> None:
    threads, per_thread = 8, 25
    errors: list[BaseException] = []
    conflicts = [0]
    lock = threading.Lock()
    store.save(Execution(id="shared", definition_id="d", context={"n": 0}))

    def work(t: int) -> None:
        try:
            for i in range(per_thread):
                exe = Execution(id=f"th-{t}-{i}", definition_id="d")
                store.commit(exe, [(exe.id, Event(kind="K"))], processed_event_id=f"p-{t}-{i}")
                assert exe.version == 1
                assert store.load_for_event(exe.id, f"p-{t}-{i}")[1]
                while True:  # a CAS race on one execution
                    shared = store.load("shared")
                    assert shared is not None
                    shared.context["n"] += 1
                    try:
                        store.save(shared)
                        break
                    except StoreConflict:
                        with lock:
                            conflicts[0] += 1
                store.list_executions(limit=5)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert errors == []
    shared = store.load("shared")
    assert shared is not None and shared.context["n"] == threads * per_thread
    assert shared.version == 1 + threads * per_thread
    assert len([e for e in store.pending_outbox() if e.target_id and e.target_id.startswith("th-")]) == threads * per_thread


@pytest.mark.asyncio
async def test_async_store_does_not_block_the_loop(tmp_path: Path) -> None:
    import asyncio

    store = await AsyncSqliteStore.create(tmp_path / "a.db")
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    exes = [Execution(id=f"a-{i}", definition_id="d") for i in range(50)]
    await asyncio.gather(*(store.save(e) for e in exes))
    stop.set()
    await task
    assert all(e.version == 1 for e in exes) and ticks > 0
    store.trace_max = 5
    assert store.trace_max == 5
    exe = exes[0]
    with pytest.raises(StoreConflict):
        await store.commit(Execution(id="a-0", definition_id="d", version=3), [])
    assert (await store.load_for_event(exe.id, "x")) == (await store.load(exe.id), False)
    await store.close()
    with pytest.raises(ValueError):
        await store.load("a-0")


# Lone surrogates alone and inside a name: a Python str holds them, no UTF-8 text does.
LONE = ["\ud800", "\udc00", "a\ud800", "a\udc00"]


def _everything(store: SqliteStore) -> object:
    ids = store.ids_with_prefix("")
    return (
        [store.load(i) for i in ids],
        [store.read_trace(i) for i in ids],
        store.list_executions(limit=1000),
        store.pending_outbox(),
        store.pending_spawns(),
        store.due_timers(1e12),
    )


def test_lone_surrogates_in_names_are_invalid_input_and_change_nothing(store: SqliteStore) -> None:
    # What a lossy conversion of "a\udc00" would name, with a timer, an outbox entry and a spawn.
    exe = Execution(id="a\ufffd", definition_id="d")
    store.save(exe)
    store.commit(
        exe, [("a\ufffd", Event(id="a\ufffd", kind="K"))], processed_event_id="a\ufffd",
        timers=(TimerOp("schedule", "a\ufffd", 5.0),), spawns=(("a\ufffd:c", "r", {}),),
    )
    before = _everything(store)
    for s in LONE:
        calls = [
            lambda: store.load(s),
            lambda: store.load_for_event(s, "e"),
            lambda: store.load_for_event("a\ufffd", s),
            lambda: store.is_processed(s, "a\ufffd"),
            lambda: store.is_processed("a\ufffd", s),
            lambda: store.list_executions(definition_id=s),
            lambda: store.list_executions(cursor=s),
            lambda: store.list_executions(search=s),
            lambda: store.read_trace(s),
            lambda: store.ids_with_prefix(s),
            lambda: store.delete_timer(s, "a\ufffd", 5.0),
            lambda: store.delete_timer("a\ufffd", s, 5.0),
            lambda: store.append_trace(s, {"k": 1}),
            lambda: store.purge(s, exe.version),
            lambda: store.save(Execution(id=s, definition_id="d")),
            lambda: store.save(Execution(id="n-1", definition_id=s)),
            lambda: store.save(Execution(id="n-1", definition_id="d", parent_id=s)),
            lambda: store.commit(exe, [], processed_event_id=s),
            lambda: store.commit(exe, [(s, Event(kind="K"))]),
            lambda: store.commit(exe, [(None, Event(id=s, kind="K"))]),
            lambda: store.commit(exe, [], timers=(TimerOp("schedule", s, 5.0),)),
            lambda: store.commit(exe, [], timers=(TimerOp("cancel", s, 0.0),)),
            lambda: store.commit(exe, [], spawns=((s, "r", {}),)),
            lambda: store.commit(exe, [], spawns=(("c", s, {}),)),
        ]
        for i, call in enumerate(calls):
            with pytest.raises(execstore.InvalidInputError) as info:
                call()
            assert info.value.code == "INVALID_INPUT", (s, i)
            assert "surrogate" in info.value.reason, (s, i, info.value)
        assert _everything(store) == before, s
    assert exe.version == 2
    # The example: purge("a\udc00") must not delete "a\ufffd" (checked above), whose
    # own name works.
    assert store.purge("a\ufffd", 2) is True


@pytest.mark.asyncio
async def test_async_store_refuses_lone_surrogates_too(tmp_path: Path) -> None:
    astore = await AsyncSqliteStore.create(tmp_path / "a.db")
    await astore.save(Execution(id="a\ufffd", definition_id="d"))
    for s in LONE:
        with pytest.raises(execstore.InvalidInputError):
            await astore.load(s)
        with pytest.raises(execstore.InvalidInputError):
            await astore.purge(s, 1)
    loaded = await astore.load("a\ufffd")
    assert loaded is not None and loaded.version == 1
    await astore.close()


@pytest.mark.parametrize("field", ["created_at", "updated_at", "finished_at", "expires_at"])
def test_nan_and_infinite_times_are_invalid_input_and_store_nothing(store: SqliteStore, field: str) -> None:
    stored = Execution(id="t-1", definition_id="d", created_at=1.0, updated_at=2.0)
    store.save(stored)
    before = _everything(store)
    for value in (math.nan, math.inf, -math.inf):
        new = Execution(id="t-2", definition_id="d")
        setattr(new, field, value)
        with pytest.raises(execstore.InvalidInputError) as info:
            store.save(new)
        assert info.value.field == f"execution.{field}"
        again = store.load("t-1")
        assert again is not None
        setattr(again, field, value)
        with pytest.raises(execstore.InvalidInputError):
            store.commit(again, [], processed_event_id="e")
        for call in [
            lambda: store.commit(stored, [], timers=(TimerOp("schedule", "p", value),)),
            lambda: store.due_timers(value),
            lambda: store.delete_timer("t-1", "p", value),
            lambda: store.list_executions(created_after=value),
            lambda: store.list_executions(finished_before=value),
        ]:
            with pytest.raises(execstore.InvalidInputError):
                call()
        assert _everything(store) == before, value
    assert stored.version == 1
