#!/usr/bin/env python3
"""The table of bench/compare: W1 figures of execstore and harel side by side, with ratios.

    ratios.py [--clients C] [--execstore-args "..."] LINES.jsonl

LINES.jsonl holds the JSON lines of the runs (`execstore bench` and bench/harel_w1.py), in
any order; a line whose `impl` starts with "harel-" is harel's, any other is execstore's.
Over repeated runs each figure is the median. The ratio is a speedup factor, so above 1
always means execstore is better: execstore/harel for rates, harel/execstore for times,
and harel/execstore for db_bytes (how many times smaller execstore's file is).

It also checks that every run did the same workload and stored the same rows: the same
configuration, the same check counts (and the counts WORKLOAD.md §7 predicts for N and K)
and the same exe0_data_sha256. Exit status 1 if not; the table is printed either way.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

# (key, kind): what the table shows, in the spec's order, then the timed extras
FIGURES = [
    ("commit_events_per_s", "rate"),
    ("list_all_pages_ms", "time"),
    ("list_mid_page_ms", "time"),
    ("due_timers_ms", "time"),
    ("outbox_drain_acks_per_s", "rate"),
    ("read_trace_100_ms", "time"),
    ("db_bytes", "size"),
    ("create_saves_per_s", "rate"),
    ("wall_s", "time"),
]
HOW = {"rate": "execstore/harel", "time": "harel/execstore", "size": "harel/execstore"}

# keys every run must agree on: the workload's configuration and its cross-checks
SAME = [
    "executions",
    "events",
    "trace",
    "synchronous",
    "seed",
    "list_rows",
    "list_pages",
    "due_timers_rows",
    "outbox_acked",
    "read_trace_rows",
    "wal_bytes_after_close",
    "exe0_data_sha256",
]

# WORKLOAD.md §7: exe0_data_sha256 for S = 1
KNOWN_SHA = {
    (1, 20): "4f3e8fd0553424a6ef04d63a9f1c839d448fe6c510fd3cb3bfad7e13ac10a34c",
    (1, 10): "91d88f82e6b814d59f4c99b3b3306dd824465466e24878933b04c1a9b6636d87",
}


def expected_counts(run: dict) -> dict:
    """The check counts WORKLOAD.md §5/§7 predicts from N, K and trace."""
    n, k, trace = run["executions"], run["events"], run["trace"]
    if k >= 1:  # odd indices are DONE after the last round
        rows = sum(1 for i in range(n) if i % 2 == 0 and i % 5 != 4)
    else:
        rows = sum(1 for i in range(n) if i % 5 != 4)
    want = {
        "list_rows": rows,
        "list_pages": max(1, math.ceil(rows / 100)),
        "due_timers_rows": n if k >= 2 and k % 2 == 0 else 0,
        "outbox_acked": n * k,
        "read_trace_rows": min(100, n) * min(k, 200) if trace else 0,
        "wal_bytes_after_close": 0,
    }
    sha = KNOWN_SHA.get((run.get("seed"), k))
    if sha is not None:
        want["exe0_data_sha256"] = sha
    return want


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def ratio(kind: str, exe, har):
    if exe is None or har is None:
        return None
    num, den = (exe, har) if kind == "rate" else (har, exe)
    return num / den if den else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def check(runs: list[dict]) -> list[str]:
    problems = []
    first = runs[0]
    for run in runs[1:]:
        for key in SAME:
            if run.get(key) != first.get(key):
                problems.append(
                    f"MISMATCH {key}: {first.get('impl')}={first.get(key)!r} {run.get('impl')}={run.get(key)!r}"
                )
    for key, want in expected_counts(first).items():
        if first.get(key) != want:
            problems.append(f"UNEXPECTED {key}: {first.get(key)!r}, WORKLOAD.md gives {want!r}")
    return problems


def table(exe_runs: list[dict], har_runs: list[dict], clients: str, execstore_args: str) -> str:
    e0, h0 = exe_runs[0], har_runs[0]
    reps = min(len(exe_runs), len(har_runs))
    sync = e0.get("synchronous") or "not set (FULL)"
    lines = [
        f"W1: executions={e0['executions']} events={e0['events']} trace={'on' if e0['trace'] else 'off'} "
        f"synchronous={sync} seed={e0['seed']}; "
        + (f"median of {reps} alternating rounds" if reps > 1 else "1 round"),
        f"execstore: {e0['impl']}, clients={e0.get('clients', clients)}"
        + (f", args: {execstore_args}" if execstore_args else "")
        + f"; SQLite {e0.get('sqlite')}; {e0.get('runtime') or ''}".rstrip("; "),
        f"harel:     {h0['impl']}, single-threaded (1 client, whatever --clients says); "
        f"SQLite {h0.get('sqlite')}; Python {h0.get('python')}",
        "ratio > 1: execstore is better (rates: execstore/harel; times and db_bytes: harel/execstore)",
        "",
    ]
    head = ["key", "execstore", "harel", "ratio", "ratio is"]
    if reps > 1:
        head += ["execstore min..max", "harel min..max"]
    rows = [head]
    for key, kind in FIGURES:
        ev = [r.get(key) for r in exe_runs]
        hv = [r.get(key) for r in har_runs]
        em, hm = median(ev), median(hv)
        if em is None and hm is None:
            continue
        r = ratio(kind, em, hm)
        row = [key, fmt(em), fmt(hm), f"{r:.2f}x" if r is not None else "-", HOW[kind]]
        if reps > 1:
            spread = lambda vs: f"{fmt(min(v for v in vs if v is not None))}..{fmt(max(v for v in vs if v is not None))}"  # noqa: E731
            row += [spread(ev) if em is not None else "-", spread(hv) if hm is not None else "-"]
        rows.append(row)
    known = {k for k, _ in FIGURES} | set(SAME) | {"impl", "python", "sqlite", "runtime", "clients"}
    extras = [k for k in e0 if k not in known]
    widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
    numeric = {1, 2, 3, 5, 6}
    for n, row in enumerate(rows):
        cells = [cell.rjust(widths[c]) if c in numeric else cell.ljust(widths[c]) for c, cell in enumerate(row)]
        lines.append(" | ".join(cells).rstrip())
        if n == 0:
            lines.append("-+-".join("-" * w for w in widths))
    if extras:
        shown = []
        for key in extras:
            values = [r.get(key) for r in exe_runs]
            numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if all(v == values[0] for v in values) or len(numbers) != len(values):
                shown.append(f"{key}={json.dumps(values[0])}")
            else:
                shown.append(f"{key}={fmt(median(numbers))} (median)")
        lines.append("execstore only: " + ", ".join(shown))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="ratios.py", description=__doc__.split("\n\n")[0])
    p.add_argument("lines", help="file of JSON lines, one per run")
    p.add_argument("--clients", default="1", help="execstore's --clients, for the header")
    p.add_argument("--execstore-args", default="", help="execstore's extra flags, for the header")
    a = p.parse_args(argv)

    runs = []
    with open(a.lines, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    exe_runs = [r for r in runs if not str(r.get("impl", "")).startswith("harel-")]
    har_runs = [r for r in runs if str(r.get("impl", "")).startswith("harel-")]
    if not exe_runs or not har_runs:
        print("ratios.py: need at least one execstore run and one harel run", file=sys.stderr)
        return 1

    print(table(exe_runs, har_runs, a.clients, a.execstore_args))
    problems = check(har_runs + exe_runs)
    if problems:
        for msg in problems:
            print(f"compare: {msg}", file=sys.stderr)
        print("compare: FAILED: execstore and harel did not run the same workload or store the same rows",
              file=sys.stderr)
        return 1
    print(
        f"compare: same workload and rows in all {len(runs)} runs "
        f"(exe0_data_sha256={exe_runs[0]['exe0_data_sha256']})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
