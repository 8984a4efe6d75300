"""Shared by the reflexr interop scripts (tests/reflexr/*.py, run by the Rust tests in
tests/tests/workspace_interop_*.rs).

A target is a SQLite file path or a PostgreSQL URL (``postgresql://...``, optionally with
``--schema NAME`` to put reflexr's tables in that schema). Everything is read back through
reflexr's own ``SqlStorage`` API into the JSON shape that ``workspace_common::dump`` builds on
the Rust side from execstore's reads, so the two compare as plain JSON: records as the very
text reflexr stores (``json.dumps`` of ``model_dump(mode="json")``), times as microseconds
since the epoch.
"""

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import TypeAdapter
from reflexr.core import (
    Actor,
    Causation,
    EvaluationError,
    RuleProgress,
    Run,
    ScopeState,
    StoredRule,
    load_event,
)
from reflexr.sql import SqlStorage, create_sqlite_engine, migrate
from reflexr.workspace import Entry, RunPolicy, WorkspaceRef
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(at: datetime) -> int:
    """Microseconds since the epoch."""
    return (at - EPOCH) // timedelta(microseconds=1)


def from_micros(n: int) -> datetime:
    """The UTC datetime ``n`` microseconds after the epoch."""
    return EPOCH + timedelta(microseconds=n)


class Clock:
    """A clock the script sets by hand, as execstore's ManualClock."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def args() -> tuple[str, list[str], str | None]:
    """The target, the other positional arguments, and ``--schema``'s value."""
    argv = sys.argv[1:]
    schema = None
    if "--schema" in argv:
        i = argv.index("--schema")
        schema = argv[i + 1]
        del argv[i : i + 2]
    return argv[0], argv[1:], schema


def is_postgres(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def engine(target: str, schema: str | None = None) -> AsyncEngine:
    """reflexr's engine for the target: ``create_sqlite_engine`` for a file."""
    if is_postgres(target):
        url = "postgresql+asyncpg://" + target.split("://", 1)[1]
        connect_args = {"server_settings": {"search_path": schema}} if schema else {}
        return create_async_engine(url, connect_args=connect_args)
    return create_sqlite_engine("sqlite+aiosqlite:///" + os.path.abspath(target))


async def schema_of(eng: AsyncEngine, schema: str | None = None) -> list[list[Any]]:
    """What the database's schema holds, for telling whether ``migrate`` changed it."""
    async with eng.connect() as conn:
        if eng.dialect.name == "sqlite":
            rows = await conn.execute(
                text("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
            )
        else:
            rows = await conn.execute(
                text(
                    "SELECT table_name, column_name, data_type, is_nullable, ordinal_position "
                    "FROM information_schema.columns WHERE table_schema = :s "
                    "AND table_name LIKE 'reflexr%' ORDER BY table_name, ordinal_position"
                ),
                {"s": schema or "public"},
            )
        return [list(row) for row in rows]


async def migrate_checked(eng: AsyncEngine, schema: str | None = None) -> dict[str, Any]:
    """Runs reflexr's ``migrate`` and reports the schema before and after, and the version."""
    before = await schema_of(eng, schema)
    await migrate(eng)
    after = await schema_of(eng, schema)
    async with eng.connect() as conn:
        version = [r[0] for r in await conn.execute(text("SELECT version_num FROM reflexr_alembic_version"))]
    return {"schema_before": before, "schema_after": after, "version": version}


def stored(model: Any) -> str:
    """A record as reflexr stores it in a JSON column."""
    return json.dumps(model.model_dump(mode="json"))


_ACTOR = TypeAdapter(Actor)


def entry_of(j: dict[str, Any]) -> Entry:
    """An Entry from its JSON (``workspace_common::entry_json``)."""
    causation = j.get("causation")
    return Entry(
        id=j["id"],
        actor=_ACTOR.validate_python(j["actor"]),
        event=load_event(j["event"]),
        causation=None if causation is None else Causation.model_validate(causation),
        correlation_id=j.get("correlation_id"),
        traceparent=j.get("traceparent"),
    )


def ref_of(pair: list[str]) -> WorkspaceRef:
    return WorkspaceRef(pair[0], pair[1])


def policy_of(q: dict[str, Any]) -> RunPolicy:
    return RunPolicy(
        disabled=frozenset(q["disabled"]),
        ordered=frozenset(q["ordered"]),
        blocking=frozenset(q["blocking"]),
    )


class _Rollback(Exception):
    pass


async def dump(storage: SqlStorage, probe: dict[str, Any]) -> dict[str, Any]:
    """Everything the probe names, read through reflexr's API (see workspace_common::dump)."""
    out: dict[str, Any] = {
        "workspaces": [[w.tenant_id, w.workspace_id] for w in await storage.workspaces()],
        "by_workspace": {},
    }
    for spec in probe["workspaces"]:
        ref = ref_of(spec["workspace"])
        d: dict[str, Any] = {"head_seq": await storage.head_seq(ref)}
        d["envelopes"] = [stored(e) for e in await storage.read(ref)]
        d["windows"] = [[e.seq for e in await storage.read(ref, **w)] for w in probe["windows"]]
        d["runs"] = [stored(r) for r in await storage.runs(ref)]
        d["run_lists"] = [[r.id for r in await storage.runs(ref, **q)] for q in probe["run_queries"]]
        d["run"] = {i: _opt(await storage.run(ref, i)) for i in spec["run_ids"]}
        d["dead_letters"] = [stored(x) for x in await storage.dead_letters(ref)]
        d["dead_letters_of"] = {
            rule: [stored(x) for x in await storage.dead_letters(ref, rule=rule)] for rule in spec["rules"]
        }
        d["progress"] = [[rule, stored(p)] for rule, p in (await storage.progress(ref)).items()]
        d["schedules"] = [[name, micros(at)] for name, at in (await storage.schedules(ref)).items()]
        d["stored_rules"] = [stored(r) for r in await storage.stored_rules(ref)]
        d["rule_history"] = {
            name: [stored(e) for e in await storage.rule_history(ref, name)] for name in spec["stored_rule_names"]
        }
        d["cursors"] = {name: await storage.cursor(ref, name) for name in spec["cursor_names"]}
        try:
            async with storage.transaction(ref) as tx:
                d["tx"] = {
                    "head_seq": await tx.head_seq(),
                    "read": [e.seq for e in await tx.read(after_seq=1, limit=3)],
                    "envelope": {i: _opt(await tx.envelope(i)) for i in spec["event_ids"]},
                    "states": {
                        rule: [[k, stored(s)] for k, s in (await tx.states(rule, keys)).items()]
                        for rule, keys in spec["states"].items()
                    },
                    "scope_runs": [[r.id for r in await tx.scope_runs(rule, key)] for rule, key in spec["scopes"]],
                    "progress": {rule: _opt(await tx.progress(rule)) for rule in spec["rules"]},
                    "stored_rule": {n: _opt(await tx.stored_rule(n)) for n in spec["stored_rule_names"]},
                    "stored_rules": [stored(r) for r in await tx.stored_rules()],
                    "schedule": {n: _micros_opt(await tx.schedule(n)) for n in spec["schedule_names"]},
                }
                raise _Rollback
        except _Rollback:
            pass
        out["by_workspace"][f"{ref.tenant_id}/{ref.workspace_id}"] = d
    out["due"] = [
        [
            [w.tenant_id, w.workspace_id, r.id]
            for w, r in await storage.due_runs(now=from_micros(q["now"]), limit=q["limit"], policy=policy_of(q))
        ]
        for q in probe["due"]
    ]
    return out


def _opt(model: Any) -> str | None:
    return None if model is None else stored(model)


def _micros_opt(at: datetime | None) -> int | None:
    return None if at is None else micros(at)


def write_json(path: str, value: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=1)


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


RECORDS = {
    "run": Run,
    "progress": RuleProgress,
    "state": ScopeState,
    "dead_letter": EvaluationError,
    "stored_rule": StoredRule,
}
"""The record models a program's calls build from JSON."""
