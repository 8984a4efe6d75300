"""harel 0.9's transports on execstore (``execstore.harel`` re-exports them): the classes behind
``SqliteTransport``, ``AsyncSqliteTransport``, ``PostgresTransport`` and
``AsyncPostgresTransport``, each a thin face of the core's transport contract."""

from __future__ import annotations

import asyncio
import time
from os import PathLike
from typing import Any, Callable, Optional, TypeVar, Union

from execstore._engines import require as _require

_require("harel")

from harel.engine.transport import Lease
from harel.spec.states import Event

from execstore._checks import integer as _int
from execstore._checks import number as _float
from execstore._checks import string as _str
from execstore._core import HarelTransport

DEFAULT_PREFIX = "harel"

_TT = TypeVar("_TT", bound="_Transport")
_AT = TypeVar("_AT", bound="_AsyncTransport")


def _lease(lease: object) -> Lease:
    if not isinstance(lease, Lease):
        raise TypeError(f"expected a harel Lease, got {type(lease).__name__}")
    return lease


class _Transport:
    """harel's sync `Transport` protocol over a `HarelTransport` handle (`SqliteTransport`,
    `PostgresTransport`); `clock` gives "now" in epoch seconds for leases and parks."""

    _h: HarelTransport
    _clock: Callable[[], float]

    def _now(self) -> float:
        return _float("clock()", self._clock())

    def publish(self, group_id: str, event: Event, priority: int = 0) -> None:
        """Appends `event` to `group_id`'s queue; `priority` (0..4) is kept from the first
        publish into a group with no messages."""
        if not isinstance(event, Event):
            raise TypeError(f"event must be a harel Event, got {type(event).__name__}")
        self._h.publish(_str("group_id", group_id), event.model_dump_json(), _int("priority", priority))

    def claim(self, worker_id: str, visibility: float, min_priority: int = 0) -> Optional[Lease]:
        """Leases the oldest message of the group that waited longest (at `min_priority` or
        above, nothing in flight) for `visibility` seconds; None if nothing is claimable."""
        row = self._h.claim(
            _str("worker_id", worker_id), self._now(), _float("visibility", visibility), _int("min_priority", min_priority)
        )
        if row is None:
            return None
        seq, group_id, event, token = row
        return Lease(seq, group_id, Event.model_validate_json(event), token=token)

    def ack(self, lease: Lease) -> None:
        """The message was handled: removes it and frees its group."""
        lease = _lease(lease)
        self._h.ack(lease.seq, lease.group_id, lease.token, self._now())

    def nack(self, lease: Lease, delay: float = 0.0) -> None:
        """Returns the message: claimable at once, or parked (its group blocked) for `delay`
        seconds."""
        lease = _lease(lease)
        self._h.nack(lease.seq, lease.group_id, lease.token, self._now(), _float("delay", delay))

    def depth(self) -> int:
        """How many messages are queued (leased and parked ones included)."""
        return self._h.depth()

    @property
    def closed(self) -> bool:
        return self._h.closed

    def close(self) -> None:
        """Closes the transport; later calls raise `ValueError`."""
        self._h.close()

    def __enter__(self: _TT) -> _TT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._h!r}>"


def _clock_of(clock: object) -> Callable[[], float]:
    if not callable(clock):
        raise TypeError(f"clock must be callable, got {type(clock).__name__}")
    return clock  # type: ignore[return-value]


class SqliteTransport(_Transport):
    """harel's `SqliteTransport`, on execstore: a queue per group (an execution id) with at most
    one message of a group in flight, on harel's `<prefix>_transport_messages` and
    `<prefix>_transport_groups` tables in the SQLite file at `path` (`":memory:"`: a private
    database of this transport alone). With `create_schema=False` the tables must exist.
    `synchronous` (execstore's, keyword-only; harel's connection is always `"full"`): `"full"`
    syncs every transaction, `"normal"` only at checkpoints (a process crash loses nothing, a
    power loss may lose the last few). Several processes (harel's own transport among them) may share the file; within one
    process, do not open it through Python's `sqlite3` at the same time (see `SqliteStore`)."""

    def __init__(
        self,
        path: Union[str, "PathLike[str]"] = ":memory:",
        clock: Callable[[], float] = time.time,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        synchronous: str = "full",
    ) -> None:
        self._clock = _clock_of(clock)
        self._h = HarelTransport.open_sqlite(
            str(path), _str("prefix", prefix), bool(create_schema), _str("synchronous", synchronous)
        )


class PostgresTransport(_Transport):
    """harel's `PostgresTransport`, on execstore: harel's transport tables under `prefix` in
    the database at `dsn` (`postgresql://...`), through a pool of up to `max_connections`.
    Claims lease different groups in parallel (`FOR UPDATE SKIP LOCKED`); an ack or nack is
    fenced by its lease's token. harel's own transport may serve the same tables."""

    def __init__(
        self,
        dsn: str,
        clock: Callable[[], float] = time.time,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        max_connections: int = 8,
    ) -> None:
        self._clock = _clock_of(clock)
        self._h = HarelTransport.open_postgres(
            _str("dsn", dsn), _str("prefix", prefix), bool(create_schema), _int("max_connections", max_connections)
        )

    @classmethod
    def from_dsn(
        cls,
        dsn: str,
        connect_retries: int = 15,
        retry_delay: float = 1.0,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
    ) -> "PostgresTransport":
        """As harel's: retries a connection that fails with a retryable error."""
        from execstore import BackendError

        last: Optional[BaseException] = None
        for _ in range(max(1, _int("connect_retries", connect_retries))):
            try:
                return cls(dsn, prefix=prefix, create_schema=create_schema)
            except BackendError as e:
                if not getattr(e, "retryable", False):
                    raise
                last = e
                time.sleep(_float("retry_delay", retry_delay))
        assert last is not None
        raise last


class _AsyncTransport:
    """The async face of a sync transport: every call runs in a worker thread."""

    def __init__(self, sync: _Transport) -> None:
        self._t = sync

    @property
    def sync(self) -> _Transport:
        """The sync transport behind this one (the same database and handle)."""
        return self._t

    @property
    def closed(self) -> bool:
        return self._t.closed

    async def publish(self, group_id: str, event: Event, priority: int = 0) -> None:
        await asyncio.to_thread(self._t.publish, group_id, event, priority)

    async def claim(self, worker_id: str, visibility: float, min_priority: int = 0) -> Optional[Lease]:
        return await asyncio.to_thread(self._t.claim, worker_id, visibility, min_priority)

    async def ack(self, lease: Lease) -> None:
        await asyncio.to_thread(self._t.ack, lease)

    async def nack(self, lease: Lease, delay: float = 0.0) -> None:
        await asyncio.to_thread(self._t.nack, lease, delay)

    async def depth(self) -> int:
        return await asyncio.to_thread(self._t.depth)

    async def close(self) -> None:
        await asyncio.to_thread(self._t.close)

    async def __aenter__(self: _AT) -> _AT:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._t._h!r}>"


class AsyncSqliteTransport(_AsyncTransport):
    """harel's `AsyncSqliteTransport`, on execstore: build with `await
    AsyncSqliteTransport.create(path, clock)`."""

    @classmethod
    async def create(
        cls,
        path: Union[str, "PathLike[str]"] = ":memory:",
        clock: Callable[[], float] = time.time,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        synchronous: str = "full",
    ) -> "AsyncSqliteTransport":
        sync = await asyncio.to_thread(
            SqliteTransport, path, clock, prefix=prefix, create_schema=create_schema, synchronous=synchronous
        )
        return cls(sync)


class AsyncPostgresTransport(_AsyncTransport):
    """harel's `AsyncPostgresTransport`, on execstore: build with `await
    AsyncPostgresTransport.from_dsn(dsn, clock, pool_size)` (or `create`)."""

    @classmethod
    async def create(
        cls,
        dsn: str,
        clock: Callable[[], float] = time.time,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        max_connections: int = 8,
    ) -> "AsyncPostgresTransport":
        sync = await asyncio.to_thread(
            PostgresTransport, dsn, clock, prefix=prefix, create_schema=create_schema, max_connections=max_connections
        )
        return cls(sync)

    @classmethod
    async def from_dsn(
        cls,
        dsn: str,
        clock: Callable[[], float] = time.time,
        pool_size: int = 10,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
    ) -> "AsyncPostgresTransport":
        return await cls.create(dsn, clock, prefix=prefix, create_schema=create_schema, max_connections=pool_size)
