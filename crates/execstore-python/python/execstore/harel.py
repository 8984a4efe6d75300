"""A drop-in store for harel 0.9, in Rust: harel's whole store protocol, sync and async.

```python
from execstore.harel import SqliteStore, PostgresStore, AsyncSqliteStore, AsyncPostgresStore

store = SqliteStore("runs.db")                 # or ":memory:"; prefix="harel" (harel's tables)
store = PostgresStore("postgresql://user@host/db")
astore = await AsyncSqliteStore.create("runs.db")
transport = SqliteTransport("runs.db")         # harel's SqliteTransport, on execstore
```

They take and return harel's own types (`Execution`, `ExecutionPage`, `OutboxEntry`,
`SpawnEntry`, `Event`), update `exe.version` on the caller's object (left as it was on a
conflict), raise harel's own `StoreConflict`, and keep harel's rows byte for byte (a harel
`SqliteStore` can open the same file). Every storage call releases the GIL, so one store may be
shared by several threads; the async classes run each call in a worker thread, so the event
loop is never blocked.

Differences from harel's own stores, by design: `list_executions` cursors are keyset cursors
(an invalid one raises `execstore.InvalidInputError` rather than restarting); `ids_with_prefix`
matches exactly (harel's may over-match); the stores refuse bad input (ids that are empty or
too long, NaN times, ...) with an `execstore.StoreError` and change nothing; `close()` makes
later calls raise `ValueError`.

`SqliteTransport`, `PostgresTransport` and their async twins are harel's transports of the
same names (what `DistributedRunner` and its workers move events on), on harel's transport
tables: no Python `sqlite3` (or psycopg) is used, and harel's own transport may serve the same
file or database.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from os import PathLike
from typing import Any, Callable, Iterable, Optional, TypeVar, Union

from execstore._engines import require as _require

_require("harel")

from harel.engine.execution import Execution, ExecutionPage, ExecutionSummary, Status
from harel.engine.store import OutboxEntry, SpawnEntry, Step, StoreConflict, TimerOp
from harel.engine.transport import Lease
from harel.spec.states import Event

from execstore._checks import finite as _finite
from execstore._checks import integer as _int
from execstore._checks import number as _float
from execstore._checks import string as _str
from execstore._checks import text as _text
from execstore._checks import time as _time
from execstore._core import BackendError, ConflictError, HarelStore
from execstore._harel_transport import (
    DEFAULT_PREFIX,
    AsyncPostgresTransport,
    AsyncSqliteTransport,
    PostgresTransport,
    SqliteTransport,
)

# harel's own types, re-exported so a typed caller can name them from here (harel ships no
# `py.typed`).
__all__ = [
    "AsyncPostgresStore",
    "AsyncPostgresTransport",
    "AsyncSqliteStore",
    "AsyncSqliteTransport",
    "Event",
    "Execution",
    "ExecutionPage",
    "ExecutionSummary",
    "MissingTableError",
    "Lease",
    "OutboxEntry",
    "PostgresStore",
    "PostgresTransport",
    "SpawnEntry",
    "SqliteStore",
    "SqliteTransport",
    "Status",
    "Step",
    "StoreConflict",
    "TimerOp",
]

DEFAULT_TRACE_MAX = 200

_T = TypeVar("_T")
_S = TypeVar("_S", bound="_Store")
_A = TypeVar("_A", bound="_AsyncStore")


def _execution(exe: object) -> Execution:
    if not isinstance(exe, Execution):
        raise TypeError(f"expected a harel Execution, got {type(exe).__name__}")
    return exe


def _exe_json(exe: Execution) -> str:
    """`exe`'s JSON, once its names are well-formed text and its times finite (pydantic would
    write a NaN time as ``null``)."""
    for name in ("id", "definition_id", "parent_id", "child_id"):
        value = getattr(exe, name)
        if isinstance(value, str):
            _text(f"execution.{name}", value)
    for name in ("created_at", "updated_at", "finished_at", "expires_at"):
        _time(f"execution.{name}", getattr(exe, name))
    data: str = exe.model_dump_json()
    return data


def _window(name: str, after: object, before: object) -> tuple[Optional[float], Optional[float]]:
    return (
        None if after is None else _float(f"{name}_after", after),
        None if before is None else _float(f"{name}_before", before),
    )


def _emits(emits: object) -> list[tuple[Optional[str], str]]:
    if not isinstance(emits, (list, tuple)):
        raise TypeError(f"emits must be a list of (target_id, Event), got {type(emits).__name__}")
    out: list[tuple[Optional[str], str]] = []
    for item in emits:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"an emit must be a (target_id, Event) pair, got {item!r}")
        target, event = item
        if target is not None and not isinstance(target, str):
            raise TypeError(f"an emit's target_id must be a str or None, got {type(target).__name__}")
        if target is not None:
            _text(f"emits[{len(out)}].target_id", target)
        if not isinstance(event, Event):
            raise TypeError(f"an emit's event must be a harel Event, got {type(event).__name__}")
        _text(f"emits[{len(out)}].event.id", event.id)
        _text(f"emits[{len(out)}].event.kind", event.kind)
        out.append((target, event.model_dump_json()))
    return out


def _timers(timers: object) -> list[tuple[str, str, float]]:
    if not isinstance(timers, (list, tuple)):
        raise TypeError(f"timers must be a sequence of TimerOp, got {type(timers).__name__}")
    out: list[tuple[str, str, float]] = []
    for op in timers:
        if not isinstance(op, TimerOp):
            raise TypeError(f"a timer must be a harel TimerOp, got {type(op).__name__}")
        out.append((_str("TimerOp.action", op.action), _str("TimerOp.path", op.path), _float("TimerOp.fire_at", op.fire_at)))
    return out


def _spawns(spawns: object) -> list[tuple[str, str, str]]:
    if not isinstance(spawns, (list, tuple)):
        raise TypeError(f"spawns must be a sequence of (child_id, root_path, context), got {type(spawns).__name__}")
    out: list[tuple[str, str, str]] = []
    for item in spawns:
        if not isinstance(item, tuple) or len(item) != 3:
            raise TypeError(f"a spawn must be a (child_id, root_path, context) triple, got {item!r}")
        child_id, root_path, context = item
        if not isinstance(context, dict):
            raise TypeError(f"a spawn's context must be a dict, got {type(context).__name__}")
        out.append((_str("child_id", child_id), _str("root_path", root_path), json.dumps(context)))
    return out


def _statuses(status: Optional[Iterable[Status]]) -> Optional[list[str]]:
    if status is None:
        return None
    if isinstance(status, (str, Status)):
        raise TypeError("status must be an iterable of Status, not a single one")
    return [Status(s).value for s in status]


class MissingTableError(BackendError, sqlite3.OperationalError):
    """A table of a SQLite store opened with `create_schema=False` is missing: raised by the
    first operation that needs it, an `execstore.BackendError` and, as harel's own store
    raises, a `sqlite3.OperationalError` ("no such table: ...")."""


def _pg_missing_table_error() -> type[BackendError]:
    """The PostgreSQL twin of `MissingTableError`: also a `psycopg.errors.UndefinedTable`
    (what harel's `PostgresStore` raises) when psycopg is installed."""
    try:
        from psycopg.errors import UndefinedTable
    except ImportError:
        return BackendError

    class PgMissingTableError(BackendError, UndefinedTable):  # type: ignore[misc]
        """A table of a PostgreSQL store opened with `create_schema=False` is missing."""

    return PgMissingTableError


def _is_missing_table(message: str) -> bool:
    return "no such table" in message or ("relation" in message and "does not exist" in message)


class _OwnedSchema:
    """The handle of a store opened with `create_schema=False`, on tables something else owns:
    nothing is created, so a missing table fails the operation that needs it, with
    `MissingTableError` (SQLite) or its PostgreSQL twin, as harel's stores fail."""

    __slots__ = ("_inner", "_error")

    def __init__(self, inner: HarelStore, error: type[BackendError]) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_error", error)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except BackendError as e:
                if type(e) is BackendError and _is_missing_table(str(e)):
                    err = self._error(str(e))
                    for key in ("code", "retryable"):
                        if hasattr(e, key):
                            setattr(err, key, getattr(e, key))
                    raise err from None
                raise

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def __repr__(self) -> str:
        return repr(self._inner)


class _Store:
    """harel's sync store protocol over a `HarelStore` handle (`SqliteStore`, `PostgresStore`)."""

    _h: HarelStore

    def _own(self, handle: HarelStore, create_schema: bool, error: Callable[[], type[BackendError]]) -> None:
        self._h = handle if create_schema else _OwnedSchema(handle, error())  # type: ignore[assignment]

    # --- configuration ------------------------------------------------------------------------
    @property
    def trace_max(self) -> int:
        """How many trace steps are kept per execution (0: all)."""
        return self._h.trace_max

    @trace_max.setter
    def trace_max(self, value: Optional[int]) -> None:
        self._h.trace_max = 0 if value is None else _int("trace_max", value)

    @property
    def closed(self) -> bool:
        return self._h.closed

    def close(self) -> None:
        """Closes the store; later calls raise `ValueError`."""
        self._h.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._h!r}>"

    # --- reads --------------------------------------------------------------------------------
    def load(self, execution_id: str) -> Optional[Execution]:
        data = self._h.load(_str("execution_id", execution_id))
        return Execution.model_validate_json(data) if data is not None else None

    def load_for_event(self, execution_id: str, event_id: str) -> tuple[Optional[Execution], bool]:
        """The execution and whether it already processed `event_id`, in one read."""
        data, seen = self._h.load_for_event(_str("execution_id", execution_id), _str("event_id", event_id))
        if data is None:
            return None, False
        return Execution.model_validate_json(data), seen

    def is_processed(self, execution_id: str, event_id: str) -> bool:
        return self._h.is_processed(_str("execution_id", execution_id), _str("event_id", event_id))

    def list_executions(
        self,
        *,
        status: Optional[Iterable[Status]] = None,
        definition_id: Optional[str] = None,
        roots_only: bool = False,
        limit: int = 100,
        cursor: Optional[str] = None,
        created_after: Optional[float] = None,
        created_before: Optional[float] = None,
        updated_after: Optional[float] = None,
        updated_before: Optional[float] = None,
        finished_after: Optional[float] = None,
        finished_before: Optional[float] = None,
        search: Optional[str] = None,
        order: str = "id",
        where: Optional[str] = None,
    ) -> ExecutionPage:
        """A page of summaries, as harel's `list_executions`, with execstore's filters besides
        (keyword-only, all optional): the `created`, `updated` and `finished` windows in epoch
        seconds, `[after, before)`, and `search` (an id prefix, or a state the execution is in),
        as the monitor and `execstore list` filter, and `where`, a query of execstore's `where`
        language (`'context.customer_id = "c-17" and updated > -1h'`, see docs/search.md). A
        NaN, negative or inverted window, an empty search and a bad query raise
        InvalidInputError; a window that is not a number, TypeError.
        `order` is "id" (harel's), "updated" (most recently updated first) or "created" (newest
        created first); another order, or a cursor of another order, raises InvalidInputError."""
        _str("order", order)
        if definition_id is not None:
            _str("definition_id", definition_id)
        if cursor is not None:
            _str("cursor", cursor)
        if search is not None:
            _str("search", search)
        if where is not None:
            _str("where", where)
        windows = [
            _window("created", created_after, created_before),
            _window("updated", updated_after, updated_before),
            _window("finished", finished_after, finished_before),
        ]
        data = self._h.list_executions(
            _statuses(status),
            definition_id,
            bool(roots_only),
            _int("limit", limit),
            cursor or None,
            windows,
            search,
            order,
            where,
        )
        return ExecutionPage.model_validate_json(data)

    def attributes(self) -> list[str]:
        """The declared search attributes (context paths kept indexed for `where`)."""
        return self._h.attributes()

    def declare_attribute(self, path: str) -> str:
        """Declares the context path `path` (`"context.customer_id"`) a search attribute, building
        its index; returns its canonical path. Not a context path: InvalidInputError."""
        return self._h.declare_attribute(_str("path", path))

    def drop_attribute(self, path: str) -> bool:
        """Drops a search attribute and its index; whether there was one."""
        return self._h.drop_attribute(_str("path", path))

    def read_trace(self, execution_id: str) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = json.loads(self._h.read_trace(_str("execution_id", execution_id)))
        return steps

    def pending_outbox(self) -> list[OutboxEntry]:
        return [
            OutboxEntry(seq, target_id, Event.model_validate_json(event))
            for seq, target_id, event in self._h.pending_outbox()
        ]

    def pending_spawns(self) -> list[SpawnEntry]:
        return [
            SpawnEntry(seq, parent_id, child_id, root_path, json.loads(context))
            for seq, parent_id, child_id, root_path, context in self._h.pending_spawns()
        ]

    def due_timers(self, now: float) -> list[tuple[str, str, float]]:
        return self._h.due_timers(_float("now", now))

    def ids_with_prefix(self, prefix: str) -> list[str]:
        return self._h.ids_with_prefix(_str("prefix", prefix))

    # --- writes -------------------------------------------------------------------------------
    def save(self, exe: Execution) -> None:
        """The CAS write of `exe` at `exe.version + 1`; `exe.version` is bumped on success and
        left as it was on `StoreConflict`."""
        self.commit(exe, [])

    def commit(
        self,
        exe: Execution,
        emits: list[tuple[Optional[str], Event]],
        processed_event_id: Optional[str] = None,
        timers: tuple[TimerOp, ...] = (),
        spawns: tuple[tuple[str, str, dict[str, Any]], ...] = (),
        trace: Optional[dict[str, Any]] = None,
        step: Optional[Step] = None,
    ) -> list[int]:
        """One event step in one transaction: the CAS write of `exe`, its outbox events, the
        dedupe marker, timer changes, spawns and a trace step. Returns the outbox seqs."""
        exe = _execution(exe)
        if processed_event_id is not None:
            _str("processed_event_id", processed_event_id)
        if trace is not None and not isinstance(trace, dict):
            raise TypeError(f"trace must be a dict or None, got {type(trace).__name__}")
        args = (
            _exe_json(exe),
            _emits(emits),
            processed_event_id,
            _timers(timers),
            _spawns(spawns),
            json.dumps(trace) if trace is not None else None,
        )
        try:
            version, seqs = self._h.commit(*args)
        except ConflictError as e:
            raise StoreConflict(exe.id, expected=exe.version, found=e.found) from None
        exe.version = version
        return seqs

    def send(self, execution_id: str, event: Event, expected_version: Optional[int] = None) -> int:
        """Sends `event` to the execution `execution_id` as an engine would receive it: one
        outbox entry addressed to it, which harel's relay delivers like any emit (the execution
        itself is not written); returns the entry's seq. Raises, writing nothing:
        NotFoundError for an unknown id, StoreConflict when the stored version is not
        `expected_version`, InvalidInputError for an execution not RUNNING, one of harel's
        control kinds (Start, Cancel, ...), an empty kind or id, a NaN or infinite number or a
        lone surrogate in the event, an event too large."""
        _str("execution_id", execution_id)
        if not isinstance(event, Event):
            raise TypeError(f"event must be a harel Event, got {type(event).__name__}")
        _text("event.id", event.id)
        _text("event.kind", event.kind)
        _finite("event.data", event.data)
        if expected_version is not None:
            _int("expected_version", expected_version)
        try:
            return self._h.send(execution_id, event.model_dump_json(), expected_version)
        except ConflictError as e:
            raise StoreConflict(execution_id, expected=expected_version or 0, found=e.found) from None

    def ack_outbox(self, seq: int) -> None:
        self._h.ack_outbox(_int("seq", seq))

    def ack_spawn(self, seq: int) -> None:
        self._h.ack_spawn(_int("seq", seq))

    def delete_timer(self, execution_id: str, path: str, fire_at: float) -> None:
        self._h.delete_timer(_str("execution_id", execution_id), _str("path", path), _float("fire_at", fire_at))

    def append_trace(self, execution_id: str, entry: dict[str, Any]) -> None:
        if not isinstance(entry, dict):
            raise TypeError(f"entry must be a dict, got {type(entry).__name__}")
        self._h.append_trace(_str("execution_id", execution_id), json.dumps(entry))

    def purge(self, execution_id: str, expected_version: int) -> bool:
        return self._h.purge(_str("execution_id", execution_id), _int("expected_version", expected_version))


class SqliteStore(_Store):
    """harel's `SqliteStore`, on execstore: `path` (a file, or `":memory:"` for a private
    database of this store alone), tables named by `prefix` (harel's default `"harel"`).
    `create_schema=True` creates harel's tables if missing and execstore's listing indexes
    (recorded in `<prefix>_execstore_migrations`); with `create_schema=False` no DDL runs at
    all: the tables must be there (a migration tool's, say), and a missing one fails the
    first call that needs it with `MissingTableError` (a `sqlite3.OperationalError`, as in
    harel). `trace_max` (settable, default 200; 0 keeps every step) is the trace ring's size.

    On 64-bit Linux, Python's `sqlite3` (harel's `SqliteTransport`, a `sqlite3.connect`) may
    open the same file in this process: the store's SQLite takes open-file-description locks,
    which Python's copy of SQLite sees. Elsewhere, opening a file in a process that loaded
    `sqlite3` raises `BackendError` (two copies of SQLite in one process do not see each
    other's POSIX locks; see docs/guide.md, "Python's sqlite3 in the same process")."""

    def __init__(
        self,
        path: Union[str, "PathLike[str]"] = ":memory:",
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
    ) -> None:
        handle = HarelStore.open_sqlite(str(path), _str("prefix", prefix), bool(create_schema), DEFAULT_TRACE_MAX)
        self._own(handle, bool(create_schema), lambda: MissingTableError)


class PostgresStore(_Store):
    """harel's `PostgresStore`, on execstore: a pool of up to `max_connections` connections
    to `dsn` (`postgresql://...` or `postgres://...`), harel's tables under `prefix`.
    `create_schema=False` runs no DDL (a role without DDL rights works on a schema a migration
    made): a missing table fails the first call that needs it (also a
    `psycopg.errors.UndefinedTable` when psycopg is installed, as in harel)."""

    def __init__(  # noqa: D107
        self,
        dsn: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        max_connections: int = 8,
    ) -> None:
        handle = HarelStore.open_postgres(
            _str("dsn", dsn), _str("prefix", prefix), bool(create_schema), DEFAULT_TRACE_MAX, _int("max_connections", max_connections)
        )
        self._own(handle, bool(create_schema), _pg_missing_table_error)

    @classmethod
    def from_dsn(cls, dsn: str, *, prefix: str = DEFAULT_PREFIX, create_schema: bool = True) -> "PostgresStore":
        return cls(dsn, prefix=prefix, create_schema=create_schema)


class _AsyncStore:
    """The async face of a sync store: every call runs in a worker thread."""

    _s: _Store

    def __init__(self, sync: _Store) -> None:
        self._s = sync

    async def _call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    @property
    def trace_max(self) -> int:
        return self._s.trace_max

    @trace_max.setter
    def trace_max(self, value: Optional[int]) -> None:
        self._s.trace_max = value

    @property
    def closed(self) -> bool:
        return self._s.closed

    @property
    def sync(self) -> _Store:
        """The sync store behind this one (the same database and handle)."""
        return self._s

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._s._h!r}>"

    async def close(self) -> None:
        await self._call(self._s.close)

    async def __aenter__(self: _A) -> _A:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def load(self, execution_id: str) -> Optional[Execution]:
        return await self._call(self._s.load, execution_id)

    async def load_for_event(self, execution_id: str, event_id: str) -> tuple[Optional[Execution], bool]:
        return await self._call(self._s.load_for_event, execution_id, event_id)

    async def is_processed(self, execution_id: str, event_id: str) -> bool:
        return await self._call(self._s.is_processed, execution_id, event_id)

    async def list_executions(
        self,
        *,
        status: Optional[Iterable[Status]] = None,
        definition_id: Optional[str] = None,
        roots_only: bool = False,
        limit: int = 100,
        cursor: Optional[str] = None,
        created_after: Optional[float] = None,
        created_before: Optional[float] = None,
        updated_after: Optional[float] = None,
        updated_before: Optional[float] = None,
        finished_after: Optional[float] = None,
        finished_before: Optional[float] = None,
        search: Optional[str] = None,
        order: str = "id",
        where: Optional[str] = None,
    ) -> ExecutionPage:
        if status is not None:
            status = list(status)  # an iterator is consumed here, not in the thread
        return await self._call(
            self._s.list_executions,
            status=status,
            definition_id=definition_id,
            roots_only=roots_only,
            limit=limit,
            cursor=cursor,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            updated_before=updated_before,
            finished_after=finished_after,
            finished_before=finished_before,
            search=search,
            order=order,
            where=where,
        )

    async def attributes(self) -> list[str]:
        return await self._call(self._s.attributes)

    async def declare_attribute(self, path: str) -> str:
        return await self._call(self._s.declare_attribute, path)

    async def drop_attribute(self, path: str) -> bool:
        return await self._call(self._s.drop_attribute, path)

    async def read_trace(self, execution_id: str) -> list[dict[str, Any]]:
        return await self._call(self._s.read_trace, execution_id)

    async def pending_outbox(self) -> list[OutboxEntry]:
        return await self._call(self._s.pending_outbox)

    async def pending_spawns(self) -> list[SpawnEntry]:
        return await self._call(self._s.pending_spawns)

    async def due_timers(self, now: float) -> list[tuple[str, str, float]]:
        return await self._call(self._s.due_timers, now)

    async def ids_with_prefix(self, prefix: str) -> list[str]:
        return await self._call(self._s.ids_with_prefix, prefix)

    async def save(self, exe: Execution) -> None:
        await self._call(self._s.save, exe)

    async def commit(
        self,
        exe: Execution,
        emits: list[tuple[Optional[str], Event]],
        processed_event_id: Optional[str] = None,
        timers: tuple[TimerOp, ...] = (),
        spawns: tuple[tuple[str, str, dict[str, Any]], ...] = (),
        trace: Optional[dict[str, Any]] = None,
        step: Optional[Step] = None,
    ) -> list[int]:
        return await self._call(self._s.commit, exe, emits, processed_event_id, timers, spawns, trace, step)

    async def send(self, execution_id: str, event: Event, expected_version: Optional[int] = None) -> int:
        return await self._call(self._s.send, execution_id, event, expected_version)

    async def ack_outbox(self, seq: int) -> None:
        await self._call(self._s.ack_outbox, seq)

    async def ack_spawn(self, seq: int) -> None:
        await self._call(self._s.ack_spawn, seq)

    async def delete_timer(self, execution_id: str, path: str, fire_at: float) -> None:
        await self._call(self._s.delete_timer, execution_id, path, fire_at)

    async def append_trace(self, execution_id: str, entry: dict[str, Any]) -> None:
        await self._call(self._s.append_trace, execution_id, entry)

    async def purge(self, execution_id: str, expected_version: int) -> bool:
        return await self._call(self._s.purge, execution_id, expected_version)


class AsyncSqliteStore(_AsyncStore):
    """harel's `AsyncSqliteStore`, on execstore: build with `await AsyncSqliteStore.create(path)`."""

    @classmethod
    async def create(
        cls,
        path: Union[str, "PathLike[str]"] = ":memory:",
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
    ) -> "AsyncSqliteStore":
        sync = await asyncio.to_thread(SqliteStore, path, prefix=prefix, create_schema=create_schema)
        return cls(sync)


class AsyncPostgresStore(_AsyncStore):
    """harel's `AsyncPostgresStore`, on execstore: build with `await AsyncPostgresStore.create(dsn)`."""

    @classmethod
    async def create(
        cls,
        dsn: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        max_connections: int = 8,
    ) -> "AsyncPostgresStore":
        sync = await asyncio.to_thread(
            PostgresStore, dsn, prefix=prefix, create_schema=create_schema, max_connections=max_connections
        )
        return cls(sync)

    @classmethod
    async def from_dsn(cls, dsn: str, *, prefix: str = DEFAULT_PREFIX, create_schema: bool = True) -> "AsyncPostgresStore":
        return await cls.create(dsn, prefix=prefix, create_schema=create_schema)


# --- the transport ---------------------------------------------------------------------------
