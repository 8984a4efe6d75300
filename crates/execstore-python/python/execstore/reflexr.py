"""execstore as reflexr 0.1.1's storage: ``MemoryStorage``, ``SqliteStorage``, ``PostgresStorage``.

Each implements reflexr's :class:`reflexr.workspace.Storage` protocol over execstore's workspace
log (reflexr's own ``reflexr_*`` tables on SQLite and PostgreSQL, byte for byte), so it can be
handed to ``reflexr.workspace.Workspaces``::

    from execstore.reflexr import SqliteStorage
    storage = SqliteStorage("oncall.db")
    async with storage.transaction(WorkspaceRef("acme", "prod")) as tx:
        await tx.append([Entry(id="alert-7", actor=..., event=...)])

reflexr's pydantic models go in and come out (an event type this process does not know comes
back as reflexr's ``UnknownEvent``).

**Clock.** ``clock`` (a callable returning an aware ``datetime``; the system clock in UTC if
None) is called once per appended entry and once per ``acquire_lease``, as reflexr's storages
do: an envelope's ``ts`` is the later of the clock and the previous envelope's.

**Errors.** reflexr's ``ValueError`` messages where reflexr raises them: ``event {id} is already
in the log`` and ``the next version of {name} is {n}, not {v}``. One difference, by design: an
``append`` naming an id already in the log (or twice in the call) appends *none* of its entries,
where reflexr appends those before the duplicate and relies on the exception propagating out
of the transaction block to roll them back; with the exception propagating, the outcome is the
same. Bad input (wrong types, None, naive datetimes) raises ``TypeError``/``ValueError`` or
``execstore.InvalidInputError`` and changes nothing; a closed storage raises ``RuntimeError``.

**Cancellation**, as reflexr's protocol asks: every storage call runs to its end on a worker
thread (the GIL released) and a cancellation is raised only once it has ended; a cancelled
transaction block rolls back and frees its workspace (a cancelled commit may have committed);
a cancelled ``__anext__`` of ``subscribe`` keeps the envelopes it read for the next call.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import weakref
from collections import deque
from dataclasses import dataclass
from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self, TypeVar

from execstore._engines import require as _require

_require("reflexr")

from pydantic import BaseModel
from reflexr.core import (
    Envelope,
    EvaluationError,
    Event,
    RuleProgress,
    Run,
    RunStatus,
    ScopeState,
    StoredRule,
)
from reflexr.core.events import dump_event
from reflexr.workspace import Entry, RunPolicy, WorkspaceRef

from execstore._checks import text as _text
from execstore._core import AlreadyExistsError, ConflictError, WorkspaceStore, WorkspaceTxn

__all__ = ["LogSearchPage", "MemoryStorage", "PostgresStorage", "RunSearchPage", "SqliteStorage"]

Clock = Callable[[], datetime]
_T = TypeVar("_T")
_PAGE = 500


# ─── conversions ──────────────────────────────────────────────────────────────


def _iso(value: object, what: str) -> str:
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be an aware datetime (with a tzinfo)")
    return value.isoformat()


def _model(value: object, kind: type[BaseModel], what: str) -> str:
    if not isinstance(value, kind):
        raise TypeError(f"{what} must be a {kind.__name__}, not {type(value).__name__}")
    return json.dumps(value.model_dump(mode="json"))


def _ref(workspace: object) -> tuple[str, str]:
    if not isinstance(workspace, WorkspaceRef):
        raise TypeError(f"workspace must be a WorkspaceRef, not {type(workspace).__name__}")
    tenant, ws = workspace.tenant_id, workspace.workspace_id
    if not isinstance(tenant, str) or not isinstance(ws, str):
        raise TypeError("a WorkspaceRef's tenant_id and workspace_id must be strings")
    return _text("tenant_id", tenant), _text("workspace_id", ws)


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return _text(what, value)


def _int(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return value


def _opt_int(value: object, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _strs(values: object, what: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Collection):
        raise TypeError(f"{what} must be a collection of str")
    return [_str(v, what) for v in values]


def _entry(entry: object) -> str:
    if not isinstance(entry, Entry):
        raise TypeError(f"an entry must be a reflexr Entry, not {type(entry).__name__}")
    if not isinstance(entry.event, Event):
        raise TypeError("an entry's event must be a reflexr Event")
    if not isinstance(entry.actor, BaseModel):
        raise TypeError("an entry's actor must be a reflexr Actor")
    causation = entry.causation
    if causation is not None and not isinstance(causation, BaseModel):
        raise TypeError("an entry's causation must be a reflexr Causation or None")
    return json.dumps(
        {
            "id": _str(entry.id, "an entry's id"),
            "actor": entry.actor.model_dump(mode="json"),
            "event": dump_event(entry.event),
            "causation": None if causation is None else causation.model_dump(mode="json"),
            "correlation_id": entry.correlation_id,
            "traceparent": entry.traceparent,
        }
    )


@dataclass(frozen=True)
class LogSearchPage:
    """One page of ``search_log``: the matches, how many envelopes were examined, the last
    seq examined (None: none), and where to go on (the next ``after_seq``, or ``before_seq``
    newest first; None when the window is done)."""

    envelopes: list[Envelope]
    scanned: int
    scanned_to: int | None
    next: int | None


@dataclass(frozen=True)
class RunSearchPage:
    """One page of ``search_runs``: the matches (newest first), how many runs were examined,
    and the ``cursor`` to go on with (None when every run was examined)."""

    runs: list[Run]
    scanned: int
    next: int | None


def _envelopes(texts: list[str]) -> list[Envelope]:
    return [Envelope.model_validate_json(t) for t in texts]


# ─── running calls on worker threads, uncancellably ───────────────────────────


async def _settle(future: asyncio.Future[Any]) -> bool:
    """Wait for ``future`` to end, whatever cancellations arrive; whether one did."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait([future])
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


class _Storage:
    """What the three storages share: the Rust handle, the clock and the worker threads."""

    def __init__(self, core: WorkspaceStore, clock: Clock | None, poll_interval: timedelta) -> None:
        if clock is not None and not callable(clock):
            raise TypeError("clock must be a callable returning an aware datetime, or None")
        self._core = core
        self._clock = clock
        self._wait = max(poll_interval.total_seconds(), 0.01)
        self._executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="execstore-reflexr")
        # Per event loop and workspace: the lock in-process transactions queue on, and how
        # many hold or wait for it (the entry goes when none do).
        self._locks: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str], tuple[asyncio.Lock, list[int]]]
        ] = weakref.WeakKeyDictionary()

    # lifecycle

    def close(self) -> None:
        """Close the storage: later calls raise ``RuntimeError``; calls in flight end first."""
        self._core.close()
        self._executor.shutdown(wait=False)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._core.closed

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # plumbing

    def _submit(self, fn: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        if self._core.closed:
            raise RuntimeError("the storage is closed")
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(self._executor, fn, *args)

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        future = self._submit(fn, *args)
        cancelled = await _settle(future)
        if cancelled:
            future.exception()  # retrieved, so never reported as unretrieved
            raise asyncio.CancelledError
        return future.result()

    def _now(self) -> str | None:
        return None if self._clock is None else _iso(self._clock(), "the clock's time")

    async def _acquire(self, key: tuple[str, str]) -> asyncio.Lock:
        """Queue for a workspace behind this process's other transactions on it."""
        locks = self._locks.setdefault(asyncio.get_running_loop(), {})
        lock, users = locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            await lock.acquire()
        except BaseException:
            self._forget(key, users)
            raise
        return lock

    def _release(self, key: tuple[str, str], lock: asyncio.Lock) -> None:
        lock.release()
        locks = self._locks.get(asyncio.get_running_loop(), {})
        entry = locks.get(key)
        if entry is not None and entry[0] is lock:
            self._forget(key, entry[1])

    def _forget(self, key: tuple[str, str], users: list[int]) -> None:
        users[0] -= 1
        if users[0] == 0:
            self._locks.get(asyncio.get_running_loop(), {}).pop(key, None)

    # the protocol

    def transaction(self, workspace: WorkspaceRef) -> AbstractAsyncContextManager[Transaction]:
        """Begin a transaction: it commits if the block exits normally, and rolls back if not."""
        return _TransactionContext(self, _ref(workspace))

    async def head_seq(self, workspace: WorkspaceRef) -> int:
        """Return the log's latest ``seq``, or 0 if it is empty."""
        return await self._run(self._core.head_seq, *_ref(workspace))

    async def read(
        self,
        workspace: WorkspaceRef,
        *,
        after_seq: int = 0,
        before_seq: int | None = None,
        types: Collection[str] | None = None,
        limit: int | None = None,
        last: int | None = None,
    ) -> list[Envelope]:
        """Return logged envelopes in the window ``after_seq < seq < before_seq``, in order."""
        args = (
            *_ref(workspace),
            _int(after_seq, "after_seq"),
            _opt_int(before_seq, "before_seq"),
            None if types is None else _strs(types, "types"),
            _opt_int(limit, "limit"),
            _opt_int(last, "last"),
        )
        return _envelopes(await self._run(self._core.read, *args))

    async def rule_history(self, workspace: WorkspaceRef, name: str) -> list[Envelope]:
        """Return a stored rule's versions, oldest first."""
        args = (*_ref(workspace), _str(name, "name"))
        return _envelopes(await self._run(self._core.rule_history, *args))

    def subscribe(self, workspace: WorkspaceRef, *, after_seq: int = 0) -> AsyncGenerator[Envelope]:
        """Yield envelopes after ``after_seq``: the stored ones, then each one as it commits.

        Close it with ``aclose()``. A cancelled ``__anext__`` loses nothing: what it had read
        is yielded by the next call.
        """
        return _Subscription(self, _ref(workspace), _int(after_seq, "after_seq"))

    async def run(self, workspace: WorkspaceRef, run_id: str) -> Run | None:
        """Return a run, or None."""
        text = await self._run(self._core.run, *_ref(workspace), _str(run_id, "run_id"))
        return None if text is None else Run.model_validate_json(text)

    async def runs(
        self,
        workspace: WorkspaceRef,
        *,
        rule: str | None = None,
        status: RunStatus | None = None,
        scope_key: str | None = None,
        limit: int | None = None,
    ) -> list[Run]:
        """Return runs, newest first, optionally filtered."""
        args = (
            *_ref(workspace),
            None if rule is None else _str(rule, "rule"),
            None if status is None else _str(status, "status"),
            None if scope_key is None else _str(scope_key, "scope_key"),
            _opt_int(limit, "limit"),
        )
        return [Run.model_validate_json(t) for t in await self._run(self._core.runs, *args)]

    async def search_log(
        self,
        workspace: WorkspaceRef,
        where: str,
        *,
        after_seq: int = 0,
        before_seq: int | None = None,
        newest_first: bool = False,
        limit: int = 50,
        scan: int = 10_000,
    ) -> LogSearchPage:
        """Return one page of the envelopes matching ``where`` (docs/search.md, e.g.
        ``event.service = "auth"``), having examined at most ``scan`` envelopes of the window
        ``after_seq < seq < before_seq`` (from its top down if ``newest_first``); the page says
        how far it got and the ``after_seq`` (or ``before_seq``) to go on with. A bad query
        raises ``InvalidInput`` naming the position. Relative times (``at > -1h``) are read
        against this process's clock."""
        args = (
            *_ref(workspace),
            _str(where, "where"),
            _int(after_seq, "after_seq"),
            _opt_int(before_seq, "before_seq"),
            bool(newest_first),
            _int(limit, "limit"),
            _int(scan, "scan"),
            time.time(),
        )
        texts, scanned, scanned_to, following = await self._run(self._core.search_log, *args)
        return LogSearchPage(_envelopes(texts), scanned, scanned_to, following)

    async def search_runs(
        self,
        workspace: WorkspaceRef,
        where: str,
        *,
        cursor: int | None = None,
        limit: int = 50,
        scan: int = 10_000,
    ) -> RunSearchPage:
        """Return one page of the runs matching ``where``, newest first (``scope.customer =
        "c-17"``, ``status = dead``, ``event.service = "auth"`` for the event that fired a
        run), having examined at most ``scan`` runs from ``cursor``; ``next`` goes on."""
        args = (
            *_ref(workspace),
            _str(where, "where"),
            _opt_int(cursor, "cursor"),
            _int(limit, "limit"),
            _int(scan, "scan"),
            time.time(),
        )
        texts, scanned, following = await self._run(self._core.search_runs, *args)
        return RunSearchPage([Run.model_validate_json(t) for t in texts], scanned, following)

    async def dead_letters(
        self, workspace: WorkspaceRef, *, rule: str | None = None
    ) -> list[EvaluationError]:
        """Return the envelopes rules could not evaluate, oldest first."""
        args = (*_ref(workspace), None if rule is None else _str(rule, "rule"))
        texts = await self._run(self._core.dead_letters, *args)
        return [EvaluationError.model_validate_json(t) for t in texts]

    async def progress(self, workspace: WorkspaceRef) -> dict[str, RuleProgress]:
        """Return every rule's progress in a workspace."""
        pairs = await self._run(self._core.progress, *_ref(workspace))
        return {rule: RuleProgress.model_validate_json(t) for rule, t in pairs}

    async def schedules(self, workspace: WorkspaceRef) -> dict[str, datetime]:
        """Return the time of each schedule's last tick in a workspace."""
        pairs = await self._run(self._core.schedules, *_ref(workspace))
        return {name: datetime.fromisoformat(t) for name, t in pairs}

    async def stored_rules(self, workspace: WorkspaceRef) -> list[StoredRule]:
        """Return a workspace's active stored rules, by name, in code-point order."""
        texts = await self._run(self._core.stored_rules, *_ref(workspace))
        return [StoredRule.model_validate_json(t) for t in texts]

    async def workspaces(self) -> list[WorkspaceRef]:
        """Return every workspace with a log, by tenant then workspace."""
        return [WorkspaceRef(t, w) for t, w in await self._run(self._core.workspaces)]

    async def due_runs(
        self, *, now: datetime, limit: int, policy: RunPolicy
    ) -> list[tuple[WorkspaceRef, Run]]:
        """Return the runs to attempt now, across workspaces, by due time.

        Ties are ordered by tenant, workspace and creation (reflexr's ``InMemoryStorage``
        keeps its dictionaries' order instead).
        """
        if not isinstance(policy, RunPolicy):
            raise TypeError(f"policy must be a RunPolicy, not {type(policy).__name__}")
        limit = _int(limit, "limit")
        if limit < 0:
            raise ValueError("limit must not be negative")
        args = (
            _iso(now, "now"),
            limit,
            _strs(policy.disabled, "policy.disabled"),
            _strs(policy.ordered, "policy.ordered"),
            _strs(policy.blocking, "policy.blocking"),
        )
        found = await self._run(self._core.due_runs, *args)
        return [(WorkspaceRef(t, w), Run.model_validate_json(r)) for t, w, r in found]

    async def acquire_lease(
        self, workspace: WorkspaceRef, key: str, holder: str, ttl: timedelta
    ) -> bool:
        """Take or renew an exclusive lease. Return False if another holder has it."""
        if not isinstance(ttl, timedelta):
            raise TypeError(f"ttl must be a timedelta, not {type(ttl).__name__}")
        micros = (ttl.days * 86_400 + ttl.seconds) * 1_000_000 + ttl.microseconds
        args = (*_ref(workspace), _str(key, "key"), _str(holder, "holder"), micros, self._now())
        return await self._run(self._core.acquire_lease, *args)

    async def release_lease(self, workspace: WorkspaceRef, key: str, holder: str) -> None:
        """Release a lease if ``holder`` has it."""
        args = (*_ref(workspace), _str(key, "key"), _str(holder, "holder"))
        await self._run(self._core.release_lease, *args)

    async def cursor(self, workspace: WorkspaceRef, name: str) -> int:
        """Return how far a named consumer of the log has got: the ``seq`` saved, or 0."""
        return await self._run(self._core.cursor, *_ref(workspace), _str(name, "name"))

    async def save_cursor(self, workspace: WorkspaceRef, name: str, seq: int) -> None:
        """Save how far a named consumer of the log has got; a cursor only moves forward."""
        args = (*_ref(workspace), _str(name, "name"), _int(seq, "seq"))
        await self._run(self._core.save_cursor, *args)


class MemoryStorage(_Storage):
    """execstore's in-memory workspace storage (one process; nothing kept across restarts)."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(WorkspaceStore.memory(), clock, timedelta(seconds=0.5))


class SqliteStorage(_Storage):
    """reflexr's tables in a SQLite file (created and migrated if needed; WAL).

    ``poll_interval``: how soon a subscriber sees another process's commits (this storage's own
    wake it at once).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        poll_interval: timedelta = timedelta(seconds=0.5),
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"path must be a str or path, not {type(path).__name__}")
        seconds = _poll(poll_interval)
        super().__init__(WorkspaceStore.sqlite(os.fspath(path), seconds), clock, poll_interval)


class PostgresStorage(_Storage):
    """reflexr's tables in PostgreSQL (in ``schema``, or the search path's first schema).

    Subscribers are woken at once through ``LISTEN``/``NOTIFY``; ``poll_interval`` bounds how
    long a cancelled ``__anext__`` waits for its wait to end.
    """

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock | None = None,
        poll_interval: timedelta = timedelta(seconds=0.5),
        schema: str | None = None,
    ) -> None:
        _poll(poll_interval)
        core = WorkspaceStore.postgres(_str(dsn, "dsn"), None if schema is None else _str(schema, "schema"))
        super().__init__(core, clock, poll_interval)


def _poll(poll_interval: object) -> float:
    if not isinstance(poll_interval, timedelta):
        raise TypeError("poll_interval must be a timedelta")
    if poll_interval <= timedelta(0):
        raise ValueError("poll_interval must be positive")
    return poll_interval.total_seconds()


# ─── transactions ─────────────────────────────────────────────────────────────


class _TransactionContext(AbstractAsyncContextManager["Transaction"]):
    def __init__(self, storage: _Storage, ref: tuple[str, str]) -> None:
        self._storage = storage
        self._ref = ref
        self._lock: asyncio.Lock | None = None
        self._tx: Transaction | None = None

    async def __aenter__(self) -> Transaction:
        storage = self._storage
        lock = await storage._acquire(self._ref)  # in-process waiters wait here, not on a thread
        try:
            future = storage._submit(storage._core.begin, *self._ref)
            cancelled = await _settle(future)
        except BaseException:
            storage._release(self._ref, lock)
            raise
        if future.exception() is not None:
            storage._release(self._ref, lock)
            future.result()
        txn = future.result()
        if cancelled:
            roll = storage._submit(txn.rollback)
            await _settle(roll)
            storage._release(self._ref, lock)
            raise asyncio.CancelledError
        self._lock = lock
        self._tx = Transaction(storage, txn, self._ref)
        return self._tx

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._tx is not None and self._lock is not None
        txn, lock, storage = self._tx._txn, self._lock, self._storage
        self._tx._ended = True
        try:
            future = storage._submit(txn.commit if exc_type is None else txn.rollback)
            cancelled = await _settle(future)
            if exc_type is None:
                if cancelled:
                    future.exception()
                    raise asyncio.CancelledError
                future.result()
        finally:
            if txn.open:  # a failed commit: give the workspace back
                txn.rollback()
            storage._release(self._ref, lock)


class Transaction:
    """One atomic unit of work on a workspace (reflexr's ``Transaction`` protocol)."""

    def __init__(self, storage: _Storage, txn: WorkspaceTxn, ref: tuple[str, str]) -> None:
        self._storage = storage
        self._txn = txn
        self._ref = ref
        self._ended = False

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._ended:
            raise RuntimeError("the transaction has ended")
        return await self._storage._run(fn, *args)

    async def append(self, entries: Sequence[Entry]) -> list[Envelope]:
        """Append events, assigning each the next ``seq`` and a ``ts``.

        An id already in the log, earlier in the transaction or twice in ``entries`` raises
        ``ValueError`` and appends none of ``entries``.
        """
        if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
            raise TypeError("entries must be a sequence of reflexr Entry")
        texts = [_entry(e) for e in entries]
        clock = self._storage._clock
        nows = None if clock is None else [_iso(clock(), "the clock's time") for _ in texts]
        try:
            return _envelopes(await self._call(self._txn.append, texts, nows))
        except AlreadyExistsError as error:
            duplicate = await self._first_duplicate(entries, error.key)
            raise ValueError(f"event {duplicate} is already in the log") from None

    async def _first_duplicate(self, entries: Sequence[Entry], named: str) -> str:
        """The id reflexr names: the first entry already in the log or earlier in the call."""
        seen: set[str] = set()
        for entry in entries:
            if entry.id in seen or await self.envelope(entry.id) is not None:
                return entry.id
            seen.add(entry.id)
        return named

    async def envelope(self, event_id: str) -> Envelope | None:
        """Return the envelope of an event id, or None."""
        text = await self._call(self._txn.envelope, _str(event_id, "event_id"))
        return None if text is None else Envelope.model_validate_json(text)

    async def head_seq(self) -> int:
        """Return the log's latest ``seq``, or 0."""
        return await self._call(self._txn.head_seq)

    async def read(self, *, after_seq: int, limit: int) -> list[Envelope]:
        """Return up to ``limit`` envelopes after ``after_seq``, in order."""
        args = (_int(after_seq, "after_seq"), _int(limit, "limit"))
        return _envelopes(await self._call(self._txn.read, *args))

    async def progress(self, rule: str) -> RuleProgress | None:
        """Return a rule's progress, or None."""
        text = await self._call(self._txn.progress, _str(rule, "rule"))
        return None if text is None else RuleProgress.model_validate_json(text)

    async def save_progress(self, rule: str, progress: RuleProgress) -> None:
        """Save a rule's progress."""
        args = (_str(rule, "rule"), _model(progress, RuleProgress, "progress"))
        await self._call(self._txn.save_progress, *args)

    async def states(self, rule: str, keys: Collection[str]) -> dict[str, ScopeState]:
        """Return the stored state of the given scopes of a rule; missing ones are left out."""
        pairs = await self._call(self._txn.states, _str(rule, "rule"), _strs(keys, "keys"))
        return {key: ScopeState.model_validate_json(t) for key, t in pairs}

    async def save_states(self, rule: str, states: Mapping[str, ScopeState]) -> None:
        """Save the state of scopes of a rule."""
        if not isinstance(states, Mapping):
            raise TypeError("states must be a mapping of scope key to ScopeState")
        pairs = [(_str(k, "a scope key"), _model(s, ScopeState, "a state")) for k, s in states.items()]
        await self._call(self._txn.save_states, _str(rule, "rule"), pairs)

    async def clear_states(self, rule: str) -> None:
        """Delete every scope state of a rule."""
        await self._call(self._txn.clear_states, _str(rule, "rule"))

    async def run(self, run_id: str) -> Run | None:
        """Return a run, or None."""
        text = await self._call(self._txn.run, _str(run_id, "run_id"))
        return None if text is None else Run.model_validate_json(text)

    async def save_runs(self, runs: Sequence[Run]) -> None:
        """Insert or update runs."""
        if not isinstance(runs, Sequence):
            raise TypeError("runs must be a sequence of Run")
        await self._call(self._txn.save_runs, [_model(r, Run, "a run") for r in runs])

    async def scope_runs(self, rule: str, scope_key: str) -> list[Run]:
        """Return every run of a rule's scope that has not succeeded, in firing order."""
        args = (_str(rule, "rule"), _str(scope_key, "scope_key"))
        return [Run.model_validate_json(t) for t in await self._call(self._txn.scope_runs, *args)]

    async def dead_letter(self, errors: Sequence[EvaluationError]) -> None:
        """Record envelopes a rule could not evaluate."""
        if not isinstance(errors, Sequence):
            raise TypeError("errors must be a sequence of EvaluationError")
        texts = [_model(e, EvaluationError, "an error") for e in errors]
        await self._call(self._txn.dead_letter, texts)

    async def schedule(self, name: str) -> datetime | None:
        """Return the time of a schedule's last tick, or None."""
        text = await self._call(self._txn.schedule, _str(name, "name"))
        return None if text is None else datetime.fromisoformat(text)

    async def save_schedule(self, name: str, at: datetime) -> None:
        """Save the time of a schedule's last tick."""
        await self._call(self._txn.save_schedule, _str(name, "name"), _iso(at, "at"))

    async def stored_rule(self, name: str) -> StoredRule | None:
        """Return a stored rule, active or archived, or None."""
        text = await self._call(self._txn.stored_rule, _str(name, "name"))
        return None if text is None else StoredRule.model_validate_json(text)

    async def stored_rules(self) -> list[StoredRule]:
        """Return the active stored rules, by name, in code-point order."""
        return [StoredRule.model_validate_json(t) for t in await self._call(self._txn.stored_rules)]

    async def save_stored_rule(self, stored: StoredRule) -> None:
        """Save a stored rule's next version; any other version raises ``ValueError``."""
        text = _model(stored, StoredRule, "stored")
        try:
            await self._call(self._txn.save_stored_rule, text)
        except ConflictError as error:
            raise ValueError(
                f"the next version of {stored.rule.name} is {error.expected}, not {error.found}"
            ) from None


# ─── subscriptions ────────────────────────────────────────────────────────────


class _Subscription(AsyncGenerator[Envelope, None]):
    def __init__(self, storage: _Storage, ref: tuple[str, str], after_seq: int) -> None:
        self._storage = storage
        self._ref = ref
        self._read_seq = after_seq
        self._buffer: deque[Envelope] = deque()
        self._closed = False

    def __aiter__(self) -> _Subscription:
        return self

    async def __anext__(self) -> Envelope:
        storage = self._storage
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._buffer:
                return self._buffer.popleft()
            future: asyncio.Future[Any] = storage._submit(
                storage._core.read, *self._ref, self._read_seq, None, None, _PAGE, None
            )
            cancelled = await _settle(future)
            if future.exception() is None:
                page = _envelopes(future.result())
                self._buffer.extend(page)
                if page:
                    self._read_seq = page[-1].seq
            if cancelled:
                raise asyncio.CancelledError
            future.result()
            if self._buffer:
                continue
            wait = storage._submit(
                storage._core.wait_for_append, *self._ref, self._read_seq, storage._wait
            )
            cancelled = await _settle(wait)
            if cancelled:
                wait.exception()
                raise asyncio.CancelledError
            wait.result()

    async def asend(self, value: None) -> Envelope:
        return await self.__anext__()

    async def athrow(
        self,
        typ: type[BaseException] | BaseException,
        val: object = None,
        tb: TracebackType | None = None,
    ) -> Envelope:
        self._closed = True
        if isinstance(typ, BaseException):
            raise typ
        raise typ()

    async def aclose(self) -> None:
        self._closed = True

