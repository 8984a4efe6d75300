#!/usr/bin/env python3
"""bench/monitor_limits.py: `execstore monitor` under clients that misbehave, at the sizes of
issue 23 (tests/monitor_limits.rs runs the same smaller, as assertions):

  (a) stalled   N connections (default 3,000) that each send half a request line and stop;
                meanwhile one normal request is timed. Reports how many the server still holds
                after --hold seconds (its open sockets, from /proc/PID/fd) and how many it
                closed, and when the last one was closed.
  (b) readers   R clients (default 100) reading the detail of one 8 MB execution slowly (a
                4 KiB receive buffer, 64 bytes every 100 ms): the monitor's VmRSS before and
                while they read, and its VmHWM.
  (c) sigint    SIGINT while those readers are still reading: the seconds until the process
                exits (given up after 30 s).

    bench/monitor_limits.py [--execstore BIN] [--stalled N] [--readers R] [--hold SECS]
                            [-- MONITOR_ARGS...]

BIN defaults to target/release/execstore. Prints one JSON line of figures. Linux only
(/proc). Needs `ulimit -n` above N + 100.
"""

import argparse
import json
import os
import re
import selectors
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


STARTED = []


def start_monitor(binary, db, extra):
    proc = subprocess.Popen(
        [binary, "monitor", "--db", db, "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    STARTED.append(proc)
    for line in proc.stdout:
        m = re.match(r"monitor: (http://([^/]+)/)", line)
        if m:
            host, port = m.group(2).rsplit(":", 1)
            return proc, m.group(1), (host, int(port))
    raise SystemExit(f"{binary} monitor printed no URL")


def status(pid):
    text = open(f"/proc/{pid}/status").read()
    kb = lambda key: int(re.search(key + r":\s+(\d+) kB", text).group(1))
    return kb("VmRSS") // 1024, kb("VmHWM") // 1024


def open_sockets(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def timed_get(url, timeout=120):
    t = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        r.read()
        code = r.status
    return code, round(time.monotonic() - t, 3)


def stalled_phase(binary, db, n, hold, extra):
    proc, url, addr = start_monitor(binary, db, extra)
    socks = []
    t0 = time.monotonic()
    for _ in range(n):
        s = socket.create_connection(addr, timeout=30)
        s.sendall(b"GET /api/info HTTP/1.1\r\nHo")
        s.setblocking(False)
        socks.append(s)
    opened = round(time.monotonic() - t0, 2)
    code, latency = timed_get(url + "api/counts")
    open_set = set(socks)
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    last_closed = None
    deadline = time.monotonic() + hold
    while open_set and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                open_set.discard(s)
                last_closed = round(time.monotonic() - t0, 2)
    held = open_sockets(proc.pid) - 1  # less the listener
    result = {
        "stalled": n,
        "opened_in_s": opened,
        "normal_request": code,
        "normal_request_s": latency,
        f"closed_by_server_within_{hold}s": n - len(open_set),
        f"server_sockets_after_{hold}s": max(held, 0),
        "last_closed_at_s": last_closed,
    }
    for s in socks:
        s.close()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return result


def big_store(binary, dir):
    """A demo file with one execution grown to about 8 MB (55,000 context rows)."""
    db = os.path.join(dir, "big.db")
    run([binary, "demo", "--no-serve", "--db", db, "--executions", "20"])
    conn = sqlite3.connect(db)
    exe_id, data = conn.execute("SELECT id, data FROM executions ORDER BY id LIMIT 1").fetchone()
    doc = json.loads(data)
    doc["context"]["rows"] = [
        {"row": i, "sku": f"SKU-{i:08}", "note": "x" * 100} for i in range(55_000)
    ]
    conn.execute("UPDATE executions SET data = ? WHERE id = ?", (json.dumps(doc), exe_id))
    conn.commit()
    conn.close()
    return db, exe_id


def readers_phase(binary, db, exe_id, r, extra):
    proc, url, addr = start_monitor(binary, db, extra)
    path = f"/api/executions/{exe_id}"
    timed_get(url + path.lstrip("/"))  # warm up
    rss_before, _ = status(proc.pid)
    readers = []
    for _ in range(r):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(addr)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {addr[0]}:{addr[1]}\r\nConnection: close\r\n\r\n".encode())
        s.settimeout(120)
        head = s.recv(12)
        assert head.startswith(b"HTTP/1.1 200"), head
        readers.append(s)
    for _ in range(20):
        for s in readers:
            s.recv(64)
        time.sleep(0.1)
    rss_during, hwm = status(proc.pid)
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
        exit_s = round(time.monotonic() - t, 2)
    except subprocess.TimeoutExpired:
        exit_s = "still running after 30 s"
        proc.kill()
        proc.wait()
    for s in readers:
        s.close()
    return {
        "slow_readers": r,
        "rss_before_mb": rss_before,
        "rss_while_reading_mb": rss_during,
        "hwm_mb": hwm,
        "sigint_exit_s": exit_s,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--execstore", default=os.path.join(ROOT, "target", "release", "execstore"))
    p.add_argument("--stalled", type=int, default=3000)
    p.add_argument("--readers", type=int, default=100)
    p.add_argument("--hold", type=float, default=30.0)
    p.add_argument("monitor_args", nargs="*")
    a = p.parse_args()
    if not os.path.exists(a.execstore):
        raise SystemExit(f"no {a.execstore}: cargo build --release -p execstore-cli")
    with tempfile.TemporaryDirectory() as dir:
        demo = os.path.join(dir, "demo.db")
        run([a.execstore, "demo", "--no-serve", "--db", demo, "--executions", "20"])
        out = stalled_phase(a.execstore, demo, a.stalled, a.hold, a.monitor_args)
        db, exe_id = big_store(a.execstore, dir)
        out.update(readers_phase(a.execstore, db, exe_id, a.readers, a.monitor_args))
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for proc in STARTED:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
