"""reflexr writes a variety of everything its storage keeps, then reads it all back.

Usage: write_variety.py TARGET OUT [--schema NAME]

TARGET is a new SQLite file or a PostgreSQL URL (see rx.py). reflexr migrates it and writes,
through SqlStorage with a clock set by hand: several tenants and workspaces; events with
unicode, floats, nesting, causation and trace context; runs in every status made by
reflexr.core's run functions; progress, scope states, dead letters, schedules (one given in
+02:00), leases, cursors; stored rules with three versions and an archive, with their
reflexr:rule_installed / reflexr:rule_archived facts. OUT gets {"probe": what to read back,
"dump": rx.dump of it, "leases": every lease taken}.
"""

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import rx
from reflexr.core import (
    AgentActor,
    CountState,
    DedupeState,
    EvaluationError,
    Firing,
    Match,
    Rule,
    RuleArchived,
    RuleInstalled,
    RuleProgress,
    ScopeState,
    SourceActor,
    StoredRule,
    SystemActor,
    ThrottleState,
    UserActor,
    cancel,
    checkpoint,
    create_run,
    fail,
    load_event,
    on,
    retry,
    skip,
    start,
    succeed,
)
from reflexr.core import run as action
from reflexr.sql import SqlStorage, migrate
from reflexr.workspace import Entry, WorkspaceRef, run_lease

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
PLUS2 = timezone(timedelta(hours=2))
TEXT = 'naïve — ✓ 😀 中文 "quoted" back\\slash /slash tab\t nl\n \u0001 \u007f \u2028 é'
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

A = WorkspaceRef("acme", "main")
B = WorkspaceRef("acme", "ops")
C = WorkspaceRef("globex", "main")
D = WorkspaceRef("tënant ✓", "ws/ü 1")

NOTIFY = Rule(name="app:notify", when=on("app:order.placed"), then=action("notify", channel="#ops"))
SHIP = Rule(name="app:ship", when=on("app:order.paid"), then=action("ship"))
AUDIT = Rule(name="app:audit", when=on("app:note.added"), then=action("audit"), ordering="none")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def event(kind: str, **fields: object) -> object:
    return load_event({"type": f"app:{kind}", **fields})


def firing(rule: Rule, fid: str, scope: str, seq: int, now: datetime) -> Firing:
    return Firing(
        id=fid,
        rule=rule.name,
        scope_key=scope,
        scope={"order": scope, "note": "ü"},
        seq=seq,
        at=now,
        matched=(seq,),
        depth=0,
        correlation_id=f"corr-{fid}",
    )


async def write(storage: SqlStorage, clock: rx.Clock) -> list[list[object]]:
    # --- the log ------------------------------------------------------------------------------
    async with storage.transaction(A) as tx:
        await tx.append(
            [
                Entry(
                    id="e1",
                    actor=SourceActor(name="monitor"),
                    event=event(
                        "order.placed",
                        order="o-1",
                        total=12.5,
                        items=[{"sku": "A-1", "qty": 2, "price": 0.1 + 0.2}, {"sku": "B", "qty": 1, "price": 1e20}],
                        note=TEXT,
                        nested={"a": {"b": [1, 2.0, 1e-7, -0.0, None, True, False, "x"]}, "empty": {}, "list": []},
                    ),
                ),
                Entry(
                    id="e2",
                    actor=UserActor(id="u-1", name="Zoë"),
                    event=event("order.paid", order="o-1", amount=1234.5678, currency="EUR"),
                    correlation_id="e1",
                    traceparent=TRACEPARENT,
                ),
                Entry(
                    id="e3",
                    actor=AgentActor(rule="app:notify", run_id="r-run", name="notifier"),
                    event=event("note.added", text=TEXT, big=2**53, neg=-7, ratio=1 / 3),
                    causation={"firing_id": "f-1", "run_id": "r-run", "depth": 1},
                    correlation_id="e1",
                    traceparent=TRACEPARENT,
                ),
            ]
        )
    clock.now = at(1.5)
    async with storage.transaction(A) as tx:
        await tx.append(
            [
                Entry(id=f"e{i}", actor=SystemActor(), event=event("order.placed", order=f"o-{i % 2}", i=i))
                for i in range(4, 8)
            ]
        )
    # The clock goes back: ts stays at the previous envelope's.
    clock.now = at(0.25)
    async with storage.transaction(A) as tx:
        await tx.append([Entry(id="e8", actor=SourceActor(name="late"), event=event("order.paid", order="o-0"))])
    clock.now = at(2)
    for ref, n in ((B, 3), (C, 2), (D, 2)):
        async with storage.transaction(ref) as tx:
            await tx.append(
                [
                    Entry(id=f"{ref.workspace_id}-{i}", actor=SourceActor(name="src"), event=event("tick.seen", i=i))
                    for i in range(1, n + 1)
                ]
            )

    # --- runs, in every status, through reflexr.core's run functions -------------------------
    now = at(3)
    runs = {}
    runs["n-pending"] = create_run(firing(NOTIFY, "n-pending", "o-1", 1, now), now=now)
    runs["n-running"], _ = start(create_run(firing(NOTIFY, "n-running", "o-2", 2, now), now=now), now=now,
                                  trace_id="4bf92f3577b34da6a3ce929d0e0e4736")
    started, _ = start(create_run(firing(NOTIFY, "n-retrying", "o-3", 3, now), now=now), now=now)
    runs["n-retrying"], _ = fail(started, NOTIFY, now=now, error="timeout — ü", reason="timeout")
    started, _ = start(create_run(firing(NOTIFY, "n-succeeded", "o-1", 4, now), now=now), now=now)
    runs["n-succeeded"], _ = succeed(started, now=now, output={"sent": True, "ratio": 0.5, "to": ["a", "é"]})
    started, _ = start(create_run(firing(SHIP, "s-dead", "o-1", 2, now), now=now), now=now)
    runs["s-dead"], _ = fail(started, SHIP, now=now, error="boom", reason="guardrail_blocked", permanent=True)
    runs["s-pending"] = create_run(firing(SHIP, "s-pending", "o-1", 5, now), now=now)
    runs["s-cancelled"], _ = cancel(create_run(firing(SHIP, "s-cancelled", "o-2", 2, now), now=now), now=now)
    runs["s-skipped"], _ = skip(create_run(firing(SHIP, "s-skipped", "o-2", 3, now), now=now), now=now)
    runs["s-later"] = create_run(firing(SHIP, "s-later", "o-2", 4, now), now=now)
    started, _ = start(create_run(firing(SHIP, "s-checkpointed", "o-3", 6, now), now=now), now=now)
    runs["s-checkpointed"], _ = checkpoint(started, now=now, step="draft", state={"x": [1, 2.5], "t": TEXT})
    started, _ = start(create_run(firing(SHIP, "s-requeued", "o-4", 7, now), now=now), now=now)
    dead, _ = fail(started, SHIP, now=now, error="x", permanent=True)
    runs["s-requeued"], _ = retry(dead, now=at(4))
    runs["a-same-1"] = create_run(firing(AUDIT, "a-same-1", "k", 7, at(1)), now=at(1))
    runs["a-same-2"] = create_run(firing(AUDIT, "a-same-2", "k", 7, at(1)), now=at(1))
    runs["a-orphan"], _ = start(create_run(firing(AUDIT, "a-orphan", "k", 8, now), now=now), now=now)
    runs["a-lapsed"], _ = start(create_run(firing(AUDIT, "a-lapsed", "k", 9, now), now=now), now=now)
    async with storage.transaction(A) as tx:
        await tx.save_runs(list(runs.values()))
        # Updated in the same transaction: the last version wins, in its first place.
        await tx.save_runs([runs["n-pending"].model_copy(update={"attempts": 0, "updated_at": at(3.5)})])
    async with storage.transaction(B) as tx:
        await tx.save_runs(
            [create_run(firing(NOTIFY, f"b-{i}", "o-1", i, at(i)), now=at(i)) for i in range(1, 4)]
        )
    async with storage.transaction(C) as tx:
        await tx.save_runs([create_run(firing(SHIP, "c-1", "o-1", 1, at(3)), now=at(3))])

    # --- progress, states, dead letters, schedules ---------------------------------------------
    async with storage.transaction(A) as tx:
        await tx.save_progress(
            "app:notify",
            RuleProgress(cursor=3, generation=1, definition=NOTIFY.definition(),
                         deadlines={"o-1": datetime(2026, 1, 1, 15, 0, tzinfo=PLUS2)}),
        )
        await tx.save_progress("app:ship", RuleProgress(cursor=2))
        await tx.save_states(
            "app:notify",
            {
                "o-1": ScopeState(
                    scope={"order": "o-1"},
                    dedupe=DedupeState(seen={"k": at(1)}),
                    pattern=CountState(matched=(Match(seq=1, ts=at(0), correlation_id="e1"),)),
                    throttle=ThrottleState(fired=(at(1), at(2.000001))),
                ),
                "o-2": ScopeState(scope={"order": "é", "n": 1.5}),
            },
        )
        await tx.save_states("app:ship", {"o-1": ScopeState(scope={"order": "o-1"})})
        await tx.dead_letter(
            [
                EvaluationError(rule="app:notify", seq=2, error="KeyError: 'x' — ü"),
                EvaluationError(rule="app:ship", seq=3, error="boom"),
            ]
        )
        await tx.save_schedule("hourly", at(3600))
        await tx.save_schedule("daily", datetime(2026, 1, 2, 0, 0, tzinfo=PLUS2))
    async with storage.transaction(A) as tx:
        await tx.save_progress("app:notify", RuleProgress(cursor=8, generation=1, definition=NOTIFY.definition()))
        await tx.clear_states("app:ship")
        await tx.save_states("app:ship", {"o-9": ScopeState(scope={"order": "o-9"})})
        await tx.dead_letter([EvaluationError(rule="app:notify", seq=8, error="again")])
        await tx.save_schedule("hourly", at(7200))

    # --- stored rules: three versions and an archive, with their facts ------------------------
    greet = Rule(name="chat:greet", description="v1", when=on("app:note.added"), then=action("reply"),
                 ordering="none", timeout=timedelta(seconds=30))
    versions = [
        greet,
        greet.model_copy(update={"description": "v2 — ü"}),
        greet.model_copy(update={"description": "v3", "then": action("reply", tone="warm", n=1.5)}),
    ]
    for version, rule in enumerate(versions, start=1):
        clock.now = at(10 + version)
        provenance = {"by": "operator", "ticket": f"T-{version}", "note": "ü"}
        async with storage.transaction(A) as tx:
            await tx.save_stored_rule(StoredRule(rule=rule, version=version, provenance=provenance))
            await tx.append(
                [
                    Entry(
                        id=f"install-greet-{version}",
                        actor=UserActor(id="op", name="Operator"),
                        event=RuleInstalled(rule=rule.name, version=version, spec=rule.model_dump(mode="json"),
                                            provenance=provenance),
                    )
                ]
            )
    bye = Rule(name="chat:bye", when=on("app:note.added"), then=action("reply"), ordering="none")
    clock.now = at(20)
    async with storage.transaction(A) as tx:
        await tx.save_stored_rule(StoredRule(rule=bye, version=1))
        await tx.save_stored_rule(
            StoredRule(rule=versions[2], version=4, status="archived", provenance={"by": "operator"})
        )
        await tx.append(
            [
                Entry(id="install-bye-1", actor=SystemActor(),
                      event=RuleInstalled(rule=bye.name, version=1, spec=bye.model_dump(mode="json"), provenance={})),
                Entry(id="archive-greet-4", actor=UserActor(id="op"),
                      event=RuleArchived(rule="chat:greet", version=4, reason="retired", cancelled=0)),
            ]
        )

    # --- leases and cursors ----------------------------------------------------------------------
    clock.now = at(30)
    taken = []
    for ref, key, holder, ttl in (
        (A, "eval", "worker-1", timedelta(seconds=30)),
        (A, "eval-expired", "worker-2", timedelta(seconds=1)),
        (A, run_lease("n-running"), "exec-1", timedelta(minutes=10)),
        (A, run_lease("s-checkpointed"), "exec-1", timedelta(minutes=10)),
        (A, run_lease("a-lapsed"), "exec-2", timedelta(milliseconds=1500)),
        (B, "eval", "worker-1", timedelta(hours=1)),
    ):
        assert await storage.acquire_lease(ref, key, holder, ttl)
        taken.append([ref.tenant_id, ref.workspace_id, key, holder, rx.micros(clock.now + ttl)])
    assert not await storage.acquire_lease(A, "eval", "someone-else", timedelta(seconds=5))
    await storage.save_cursor(A, "mirror", 3)
    await storage.save_cursor(A, "mirror", 2)
    await storage.save_cursor(A, "feedback", 1)
    await storage.save_cursor(C, "mirror", 2)
    return taken


def probe() -> dict[str, object]:
    all_rules = ["app:notify", "app:ship", "app:audit"]
    spec = {
        "run_ids": ["n-pending", "s-dead", "s-checkpointed", "nope", "b-1"],
        "rules": all_rules,
        "stored_rule_names": ["chat:greet", "chat:bye", "chat:none"],
        "cursor_names": ["mirror", "feedback", "none"],
        "event_ids": ["e1", "e3", "install-greet-2", "nope"],
        "states": {"app:notify": ["o-2", "missing", "o-1"], "app:ship": ["o-1", "o-9"]},
        "scopes": [["app:ship", "o-1"], ["app:ship", "o-2"], ["app:audit", "k"], ["app:notify", "o-1"]],
        "schedule_names": ["hourly", "daily", "never"],
    }
    policies = [
        {"disabled": [], "ordered": [], "blocking": []},
        {"disabled": [], "ordered": ["app:ship"], "blocking": []},
        {"disabled": ["app:audit"], "ordered": ["app:ship", "app:notify"], "blocking": ["app:ship"]},
        {"disabled": ["app:notify"], "ordered": ["app:audit"], "blocking": ["app:audit", "app:notify"]},
    ]
    due = []
    for now in (0, 3_000_000, 31_000_000, 600_000_000, 86_400_000_000):
        for limit in (100, 3, 0):
            for p in policies:
                due.append({"now": rx.micros(T0) + now, "limit": limit, **p})
    return {
        "workspaces": [{"workspace": [w.tenant_id, w.workspace_id], **spec} for w in (A, B, C, D)],
        "windows": [
            {},
            {"after_seq": 2},
            {"before_seq": 4},
            {"after_seq": 1, "before_seq": 6, "limit": 2},
            {"types": ["app:order.placed"]},
            {"types": ["app:order.placed", "app:note.added"], "last": 2},
            {"types": ["reflexr:rule_installed"], "after_seq": 9},
            {"last": 3},
            {"last": 2, "before_seq": 3},
            {"types": []},
            {"limit": 0},
        ],
        "run_queries": [
            {},
            {"rule": "app:notify"},
            {"status": "running"},
            {"scope_key": "o-1", "limit": 2},
            {"rule": "app:ship", "status": "pending", "scope_key": "o-1"},
            {"limit": 0},
        ],
        "due": due,
    }


async def main() -> None:
    target, rest, schema = rx.args()
    eng = rx.engine(target, schema)
    try:
        await migrate(eng)
        clock = rx.Clock(T0)
        storage = SqlStorage(eng, clock=clock)
        leases = await write(storage, clock)
        p = probe()
        rx.write_json(rest[0], {"probe": p, "dump": await rx.dump(storage, p), "leases": leases})
    finally:
        await eng.dispose()


asyncio.run(main())
