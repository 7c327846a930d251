#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Memory figures of issue 21 (part 2): starts the given reposed on a
scratch Unix socket for each workload and prints its RSS (VmRSS, KiB):
100,000 empty and one-shape scenes created then deleted; 100 clients that
each ask for a ~25 MB scene.get and never read; 64 watchers that never
read while a writer puts 2000 shapes at a time.  With a daemon that has
them, stats.memory.output_bytes and limits_hit.max_output_bytes too.

Usage: bench/memory_figures.py PATH-TO-REPOSED [daemon flags...]
       (WHICH=scenes,big,watch selects workloads; all by default)
Measurements only: nothing here asserts; tests/integration/
test_daemon_limits.c does that.
"""
import json, os, socket, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_util import Conn, status_kb, start as start_daemon  # noqa: E402

def rss(pid):
    return status_kb(pid, "VmRSS")


def start(binary, extra):
    p, sock, _ = start_daemon(binary, ["--log-level", "error", *extra])
    return p, sock


def settle(pid, secs=2.0):
    time.sleep(secs)
    return rss(pid)

def scenes(binary, extra, n=100000, shapes=1):
    p, sock = start(binary, extra)
    c = Conn(sock)
    c.call("ping")
    r0 = rss(p.pid)
    for first in range(0, n, 1000):
        batch = []
        for i in range(first, first + 1000):
            params = {"scene": f"scene{i:07d}"}
            if shapes:
                params["shapes"] = {"a": {"sphere": {"center": [i, 0, 0], "radius": 0.5}}}
            batch.append({"jsonrpc": "2.0", "id": i, "method": "scene.create", "params": params})
        c.s.sendall((json.dumps(batch) + "\n").encode())
        r = c.line()
        assert all("result" in x for x in r), r[:2]
    r1 = rss(p.pid)
    for first in range(0, n, 1000):
        batch = [{"jsonrpc": "2.0", "id": i, "method": "scene.delete",
                  "params": {"scene": f"scene{i:07d}"}} for i in range(first, first + 1000)]
        c.s.sendall((json.dumps(batch) + "\n").encode())
        c.line()
    r2 = rss(p.pid)
    r3 = settle(p.pid)
    print(f"{n} {shapes}-shape scenes: RSS start {r0} KiB, created {r1} KiB "
          f"({(r1 - r0) * 1024 / n:.0f} B/scene), deleted {r2} KiB, 2 s later {r3} KiB")
    p.terminate(); p.wait()

def big_get(binary, extra, clients=100, shapes=400000):
    p, sock = start(binary, extra)
    c = Conn(sock)
    for first in range(0, shapes, 50000):  # a line's scene write is priced
        sh = {f"s{i:06d}": {"sphere": {"center": [i, i % 7 + 0.5, -(i % 13)], "radius": 0.25}}
              for i in range(first, min(shapes, first + 50000))}
        r = c.call("scene.put", {"scene": "big", "create": True, "shapes": sh})
        assert "result" in r, r
    del sh
    c.s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"scene.get","params":{"scene":"big"}}\n')
    rl = 0
    while True:
        d = c.s.recv(1 << 20)
        rl += len(d)
        if d.endswith(b"\n"):
            break
    print(f"one scene.get reply: {rl} bytes")
    r0 = rss(p.pid)
    cs = []
    for i in range(clients):
        a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        a.connect(sock)
        a.sendall(b'{"jsonrpc":"2.0","id":1,"method":"scene.get","params":{"scene":"big"}}\n')
        cs.append(a)
    time.sleep(1)
    c.call("ping")
    time.sleep(2)
    r1 = rss(p.pid)
    st = c.call("stats")["result"]
    held = st.get("memory", {}).get("output_bytes", "n/a")
    shed = st["limits_hit"].get("max_output_bytes", "n/a")
    for a in cs:
        a.close()
    c.call("ping")
    r2 = settle(p.pid)
    print(f"{clients} clients x scene.get of {shapes} shapes, not reading: RSS before {r0} KiB, "
          f"during {r1} KiB, output_bytes {held}, disconnected {shed}; closed, 2 s later {r2} KiB")
    p.terminate(); p.wait()

def watchers(binary, extra, n=64, puts=120):
    p, sock = start(binary, extra)
    c = Conn(sock)
    assert "result" in c.call("scene.create", {"scene": "w"})
    ws = []
    for i in range(n):
        w = Conn(sock)
        assert "result" in w.call("scene.watch", {"scene": "w"})
        ws.append(w)
    r0 = rss(p.pid)
    for k in range(puts):
        sh = {f"p{i:04d}": {"sphere": {"center": [i, k, 0.5], "radius": 0.25}} for i in range(2000)}
        c.call("scene.put", {"scene": "w", "shapes": sh}, id=k)
    c.call("ping")
    r1 = rss(p.pid)
    st = c.call("stats")["result"]
    held = st.get("memory", {}).get("output_bytes", "n/a")
    shed = st["limits_hit"].get("max_output_bytes", "n/a")
    for w in ws:
        w.s.close()
    c.call("ping")
    r2 = settle(p.pid)
    print(f"{n} stalled watchers, {puts} puts of 2000 shapes: RSS before {r0} KiB, stalled {r1} KiB, "
          f"output_bytes {held}, disconnected {shed}; closed, 2 s later {r2} KiB")
    p.terminate(); p.wait()

if __name__ == "__main__":
    binary, extra = sys.argv[1], sys.argv[2:]
    which = os.environ.get("WHICH", "scenes,big,watch").split(",")
    if "scenes" in which:
        scenes(binary, extra, shapes=0)
        scenes(binary, extra, shapes=1)
    if "big" in which:
        big_get(binary, extra)
    if "watch" in which:
        watchers(binary, extra)
