"""Writes into a demo store from a second process, for the browser tests (stdlib only).

  store_fixture.py hostile DB        add executions whose id, definition, context and trace
                                     carry HTML/script payloads (they must show as text)
  store_fixture.py touch DB ID       a second writer moves execution ID to FAILED (version + 1)
  store_fixture.py replicate DB K    K copies of every execution under new ids (a big store fast)

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


if __name__ == "__main__":
    command, db, *rest = sys.argv[1:]
    if command == "hostile":
        hostile(db)
    elif command == "touch":
        touch(db, rest[0])
    elif command == "replicate":
        replicate(db, int(rest[0]))
    else:
        sys.exit("unknown command " + command)
