"""Writes into a demo store from a second process, for the browser tests (stdlib only).

  store_fixture.py hostile DB        add executions whose id, definition, context and trace
                                     carry HTML/script payloads (they must show as text)
  store_fixture.py touch DB ID       a second writer moves execution ID to FAILED (version + 1)
  store_fixture.py replicate DB K    K copies of every execution under new ids (a big store fast)
  store_fixture.py ws-hostile DB     add a workspace (reflexr's tables) whose envelopes' fields
                                     and stored rule's provenance carry HTML/script payloads
  store_fixture.py ws-append DB T W TYPE   a second writer appends one envelope of TYPE to T/W
  store_fixture.py ws-only SRC DST   DST: a new file with only SRC's reflexr_* tables (a reflexr
                                     user's database, no execution tables)

Rows are written as execstore and harel write them: JSON in `data`, the version column
matching the JSON's version.
"""

import json
import sqlite3
import sys
import time

PAYLOAD = "<img src=x onerror=alert(1)>"


def connect(db):
    conn = sqlite3.connect(db, timeout=10)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def execution(id_, definition, status, context, version=1, parent=None):
    now = time.time()
    return {
        "id": id_, "definition_id": definition, "definition_fqn": None, "root_path": "",
        "status": status, "outcome": None, "error": None, "active_path": "x.<b>bold</b>",
        "history": {}, "context": context, "processed_events": 1, "version": version,
        "priority": 0, "parent_id": parent, "child_id": None, "deferred": [], "children": {},
        "invoke_seq": {}, "created_at": now - 60, "updated_at": now, "finished_at": None,
        "expires_at": None,
    }


def hostile(db):
    conn = connect(db)
    context = {"note": PAYLOAD, "nested": {"html": "<script>alert(2)</script>", PAYLOAD: [PAYLOAD]}}
    rows = [
        execution("xss-context", "orders", "RUNNING", context),
        execution("xss-" + PAYLOAD, "<b>" + PAYLOAD + "</b>", "FAILED", {"ok": True}),
    ]
    with conn:
        for exe in rows:
            conn.execute(
                "INSERT INTO executions (id, definition_id, data, version) VALUES (?, ?, ?, ?)",
                (exe["id"], exe["definition_id"], json.dumps(exe), exe["version"]),
            )
        steps = [
            {"event_kind": "Start", "event_data": {}, "from_path": None, "to_path": "x.a",
             "actions": [], "guards": [], "context_out": {}, "timestamp": time.time() - 30},
            {"event_kind": PAYLOAD, "event_data": {"html": PAYLOAD}, "from_path": "x.a",
             "to_path": PAYLOAD, "actions": [PAYLOAD], "guards": ["<i>g</i>"],
             "context_out": context, "timestamp": time.time() - 10, "note": PAYLOAD},
        ]
        for idx, step in enumerate(steps):
            conn.execute(
                "INSERT INTO trace (execution_id, idx, entry) VALUES (?, ?, ?)",
                ("xss-context", idx, json.dumps(step)),
            )
        conn.execute(
            "INSERT INTO outbox (target_id, event) VALUES (?, ?)",
            ("xss-context", json.dumps({"id": "xss-event", "kind": PAYLOAD, "created_time": None,
                                        "received_time": None, "data": {"html": PAYLOAD}})),
        )


def touch(db, id_):
    conn = connect(db)
    with conn:
        (data, version) = conn.execute(
            "SELECT data, version FROM executions WHERE id = ?", (id_,)).fetchone()
        exe = json.loads(data)
        exe["status"] = "FAILED"
        exe["error"] = "set by a second process"
        exe["version"] = version + 1
        exe["updated_at"] = time.time()
        changed = conn.execute(
            "UPDATE executions SET data = ?, version = ? WHERE id = ? AND version = ?",
            (json.dumps(exe), version + 1, id_, version)).rowcount
        assert changed == 1, "lost the CAS race"


def replicate(db, copies):
    conn = connect(db)
    with conn:
        for n in range(1, copies + 1):
            suffix = "-r%d" % n
            conn.execute(
                """INSERT INTO executions (id, definition_id, data, version)
                   SELECT id || ?1, definition_id,
                          json_set(data, '$.id', id || ?1, '$.parent_id',
                                   CASE WHEN json_extract(data, '$.parent_id') IS NULL THEN NULL
                                        ELSE json_extract(data, '$.parent_id') || ?1 END),
                          version
                   FROM executions WHERE id NOT LIKE '%-r%'""",
                (suffix,),
            )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _ts_json(t):
    """A time as reflexr's JSON text (UTC, microseconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + (".%06dZ" % int(round((t % 1) * 1e6)) if t % 1 else "Z")


def _ts_sql(t):
    """A time as SQLAlchemy's UTC text in a SQLite DATETIME column."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ".%06d" % int(round((t % 1) * 1e6))


def _append(conn, tenant, workspace, id_, actor, event, causation=None, correlation=None, rule=None):
    """Appends one envelope as reflexr does: the next seq, the workspace's head moved."""
    t = time.time()
    row = conn.execute(
        "SELECT head_seq FROM reflexr_workspaces WHERE tenant_id = ? AND workspace_id = ?",
        (tenant, workspace)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO reflexr_workspaces (tenant_id, workspace_id, head_seq, head_ts, last_position) "
            "VALUES (?, ?, 0, NULL, 0)", (tenant, workspace))
        head = 0
    else:
        head = row[0]
    seq = head + 1
    envelope = {"seq": seq, "id": id_, "ts": _ts_json(t), "workspace_id": workspace, "actor": actor,
                "causation": causation, "correlation_id": correlation or id_, "traceparent": None,
                "event": event}
    conn.execute(
        "INSERT INTO reflexr_events (tenant_id, workspace_id, seq, event_id, envelope, event_type, rule) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (tenant, workspace, seq, id_, json.dumps(envelope), event["type"], rule))
    conn.execute(
        "UPDATE reflexr_workspaces SET head_seq = ?, head_ts = ? WHERE tenant_id = ? AND workspace_id = ?",
        (seq, _ts_sql(t), tenant, workspace))
    return seq


WS_TENANT = "evil"
WS_NAME = "xss <b>ws</b>"


def ws_hostile(db):
    conn = connect(db)
    with conn:
        first = _append(conn, WS_TENANT, WS_NAME, "evt-xss-1", {"kind": "source", "name": PAYLOAD},
                        {"type": "oncall:service_error", "service": "<script>alert(4)</script>",
                         "message": PAYLOAD, "nested": {"html": "<b>bold</b>"}})
        _append(conn, WS_TENANT, WS_NAME, "evt-xss-2",
                {"kind": "agent", "rule": "oncall:page", "run_id": "run-xss", "name": "pager"},
                {"type": "oncall:page_sent", "to": PAYLOAD},
                causation={"firing_id": "run-xss", "run_id": "run-xss", "depth": 1},
                correlation="evt-xss-1")
        rule = {"name": "oncall:page", "description": PAYLOAD, "ordering": "scope",
                "on_dead_letter": "block"}
        provenance = {"by": PAYLOAD, "note": "<script>alert(5)</script>"}
        conn.execute(
            "INSERT INTO reflexr_rules (tenant_id, workspace_id, name, version, status, rule, provenance) "
            "VALUES (?, ?, ?, 1, 'active', ?, ?)",
            (WS_TENANT, WS_NAME, rule["name"], json.dumps(rule), json.dumps(provenance)))
        _append(conn, WS_TENANT, WS_NAME, "install-xss", {"kind": "user", "id": "u-x", "name": PAYLOAD},
                {"type": "reflexr:rule_installed", "rule": rule["name"], "version": 1, "spec": rule,
                 "provenance": provenance}, rule=rule["name"])
        assert first == 1


def ws_append(db, tenant, workspace, type_):
    conn = connect(db)
    with conn:
        n = conn.execute("SELECT count(*) FROM reflexr_events").fetchone()[0]
        _append(conn, tenant, workspace, "late-%d-%d" % (n, int(time.time() * 1000)),
                {"kind": "source", "name": "second-writer"}, {"type": type_, "n": n})


def ws_leases(db, tenant, workspace, n):
    """`n` lease rows `bulk-0000`.. of a workspace, as reflexr writes them: every other one
    lapsed an hour ago, the others held for an hour."""
    conn = connect(db)
    now = time.time()
    with conn:
        for i in range(int(n)):
            conn.execute(
                'INSERT INTO reflexr_leases (tenant_id, workspace_id, "key", holder, expires_at) '
                "VALUES (?, ?, ?, ?, ?)",
                (tenant, workspace, "bulk-%04d" % i, "worker-%d" % (i % 3),
                 _ts_sql(now - 3600 if i % 2 else now + 3600)))


def ws_only(src, dst):
    conn = sqlite3.connect(dst)
    conn.execute("ATTACH DATABASE ? AS src", (src,))
    tables = conn.execute(
        "SELECT name, sql FROM src.sqlite_master WHERE type = 'table' AND name LIKE 'reflexr%'").fetchall()
    indexes = conn.execute(
        "SELECT sql FROM src.sqlite_master WHERE type = 'index' AND tbl_name LIKE 'reflexr%' AND sql IS NOT NULL"
    ).fetchall()
    with conn:
        for name, sql in tables:
            conn.execute(sql)
            conn.execute('INSERT INTO main."%s" SELECT * FROM src."%s"' % (name, name))
        for (sql,) in indexes:
            conn.execute(sql)
    conn.execute("DETACH DATABASE src")
    conn.close()


if __name__ == "__main__":
    command, db, *rest = sys.argv[1:]
    if command == "hostile":
        hostile(db)
    elif command == "touch":
        touch(db, rest[0])
    elif command == "replicate":
        replicate(db, int(rest[0]))
    elif command == "ws-hostile":
        ws_hostile(db)
    elif command == "ws-only":
        ws_only(db, rest[0])
    elif command == "ws-leases":
        ws_leases(db, *rest)
    elif command == "ws-append":
        ws_append(db, *rest)
    else:
        sys.exit("unknown command " + command)
