#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Replays the denial-of-service cases of issue 8 against a running reposed
and prints what each costs now: wall time of the hostile request, the reply
(size, or the error), the daemon's RSS, and how long another client's ping
waited meanwhile.

Usage: bench/redteam.py --unix /tmp/reposed.sock [--pid PID]
(start the daemon with default limits; --pid enables the RSS column).
Measurements only: nothing here asserts; the tests in
tests/integration/test_hardening.c do that.
"""
import argparse
import json
import socket
import threading
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s, s.makefile("rb")


def call(conn, obj):
    s, f = conn
    s.sendall((json.dumps(obj, separators=(",", ":")) + "\n").encode())
    return f.readline()


def rss_mb(pid):
    if not pid:
        return float("nan")
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Pinger(threading.Thread):
    """Pings on its own connection while a hostile request runs; keeps the
    worst wait."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.conn = connect(path)
        self.stop = False
        self.worst = 0.0

    def run(self):
        while not self.stop:
            t = time.perf_counter()
            call(self.conn, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
            self.worst = max(self.worst, time.perf_counter() - t)
            time.sleep(0.002)


def measure(path, pid, name, conn, request):
    p = Pinger(path)
    p.start()
    t = time.perf_counter()
    reply = call(conn, request)
    dt = time.perf_counter() - t
    p.stop = True
    p.join()
    j = json.loads(reply)
    items = j if isinstance(j, list) else [j]
    errors = [e["error"]["data"].get("limit", e["error"]["code"]) for e in items if "error" in e]
    what = f"{len(reply) / 1e6:.2f} MB reply"
    if errors:
        what += f", errors: {sorted(set(map(str, errors)))} x{len(errors)}"
    print(f"{name:44s} {dt * 1e3:9.1f} ms  {what}; RSS {rss_mb(pid):.0f} MB; "
          f"worst ping {p.worst * 1e3:.1f} ms")


def scene_shapes(n, prefix="s"):
    return {f"{prefix}{i}": {"sphere": {"center": [i % 1000, (i // 1000) % 1000, i // 1000000],
                                        "radius": 0.25}} for i in range(n)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unix", default="/tmp/reposed.sock")
    ap.add_argument("--pid", type=int, default=0)
    a = ap.parse_args()
    c = connect(a.unix)
    call(c, {"jsonrpc": "2.0", "id": 1, "method": "scene.create",
             "params": {"scene": "two", "shapes": scene_shapes(2)}})
    for part in range(4):
        call(c, {"jsonrpc": "2.0", "id": 1, "method": "scene.put",
                 "params": {"scene": "big", "create": True,
                            "shapes": {f"p{part}_{k}": v for k, v in
                                       scene_shapes(25000).items()}}})
    ids = [f"s{i % 2}" for i in range(240000)]
    measure(a.unix, a.pid, "scene.get, 240,000 ids", c,
            {"jsonrpc": "2.0", "id": 2, "method": "scene.get",
             "params": {"scene": "two", "ids": ids}})
    links = [{"id": f"l{i}", "frame": i % 1000,
              "shape": {"sphere": {"center": [0, 0, 0], "radius": 0.1}}} for i in range(30000)]
    measure(a.unix, a.pid, "model.put, 30,000 links", c,
            {"jsonrpc": "2.0", "id": 3, "method": "model.put",
             "params": {"model": "huge", "links": links}})
    batch = [{"jsonrpc": "2.0", "id": i, "method": "scene.get", "params": {"scene": "big"}}
             for i in range(100)]
    measure(a.unix, a.pid, "batch of 100 scene.get, 100k shapes", c, batch)
    queries = {f"q{i}": {"sphere": {"center": [i, 0, 0], "radius": 0.1}} for i in range(200)}
    measure(a.unix, a.pid, "scene.distance, 200 queries, max 1e300", c,
            {"jsonrpc": "2.0", "id": 4, "method": "scene.distance",
             "params": {"scene": "big", "shapes": queries, "max_distance": 1e300}})
    arm = [{"id": f"a{i}", "frame": i,
            "shape": {"capsule": {"a": [0, 0, 0], "b": [0.2, 0, 0], "radius": 0.03}}}
           for i in range(1000)]
    call(c, {"jsonrpc": "2.0", "id": 5, "method": "model.put",
             "params": {"model": "wide", "links": arm}})
    frames = [{"translation": [i * 0.3, 0, 0]} for i in range(1000)]
    measure(a.unix, a.pid, "check.batch, 1000-link model, 100 configs", c,
            {"jsonrpc": "2.0", "id": 6, "method": "check.batch",
             "params": {"model": "wide", "scene": "big",
                        "configurations": [{"frames": frames}] * 100}})
    call(c, {"jsonrpc": "2.0", "id": 7, "method": "scene.delete", "params": {"scene": "big"}})
    print(f"{'after scene.delete of the 100k-shape scene':44s} RSS {rss_mb(a.pid):.0f} MB")


if __name__ == "__main__":
    main()
