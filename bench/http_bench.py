# SPDX-License-Identifier: MIT
"""What --http costs (a benchmark, not a test):

  1. GET /metrics with 1,000 scenes in the store: the scrape's time
     (median and max of 50) and size;
  2. the JSON-RPC request path with and without --http: the round trip of
     one `ping` on the Unix socket (median and 99th percentile of 20,000),
     for a daemon without --http, with --http idle, and with --http while
     another thread scrapes /metrics ten times a second and a WebSocket
     client sends pings.

    python3 bench/http_bench.py build/release/reposed
"""
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import ws_client  # noqa: E402


def start(reposed, tmp, http):
    sock = os.path.join(tmp, "s")
    err = open(os.path.join(tmp, "err"), "w+")
    args = [reposed, "--unix", sock, "--tcp", "none"] + (["--http", "127.0.0.1:0"] if http else [])
    p = subprocess.Popen(args, stderr=err)
    port = None
    while not os.path.exists(sock) or (http and port is None):
        err.seek(0)
        m = re.search(r"listening on http 127\.0\.0\.1:(\d+)", err.read())
        port = int(m.group(1)) if m else None
        time.sleep(0.02)
    u = socket.socket(socket.AF_UNIX)
    u.connect(sock)
    return p, u, port


def call(u, req):
    u.sendall(req)
    buf = b""
    while not buf.endswith(b"\n"):
        buf += u.recv(1 << 20)
    return buf


def pings(u, n):
    req = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    out = []
    for _ in range(n):
        t = time.perf_counter_ns()
        call(u, req)
        out.append(time.perf_counter_ns() - t)
    out.sort()
    return out[len(out) // 2] / 1e3, out[len(out) * 99 // 100] / 1e3


def scrape(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    t = time.perf_counter_ns()
    c.request("GET", "/metrics")
    body = c.getresponse().read()
    dt = (time.perf_counter_ns() - t) / 1e6
    c.close()
    return dt, len(body)


def main():
    reposed = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        p, u, port = start(reposed, tmp, True)
        for i in range(1000):
            call(u, json.dumps({"jsonrpc": "2.0", "id": i, "method": "scene.create", "params": {
                "scene": f"s{i}", "shapes": {f"a{k}": {"sphere": {"center": [k, 0, 0],
                                                                   "radius": 0.1}}
                                             for k in range(10)}}}).encode() + b"\n")
        times = []
        for _ in range(50):
            dt, size = scrape(port)
            times.append(dt)
        print(f"/metrics with 1,000 scenes (10,000 shapes): median {statistics.median(times):.2f} "
              f"ms, max {max(times):.2f} ms, {size} bytes")
        p.send_signal(signal.SIGTERM)
        p.wait()
    rows = []
    for mode in ("no --http", "--http, idle", "--http, scraped 10/s + a WebSocket pinging"):
        with tempfile.TemporaryDirectory() as tmp:
            p, u, port = start(reposed, tmp, mode != "no --http")
            stop = threading.Event()
            threads = []
            if mode.startswith("--http, scraped"):
                def scraper():
                    while not stop.is_set():
                        scrape(port)
                        time.sleep(0.1)

                def wsping():
                    w, _, _ = ws_client.handshake(port)
                    while not stop.is_set():
                        w.send('{"jsonrpc":"2.0","id":1,"method":"ping"}')
                        w.recv()
                        time.sleep(0.001)
                    w.close()
                threads = [threading.Thread(target=scraper), threading.Thread(target=wsping)]
                for t in threads:
                    t.start()
            pings(u, 2000)  # warm-up
            med, p99 = pings(u, 20000)
            stop.set()
            for t in threads:
                t.join()
            rows.append((mode, med, p99))
            p.send_signal(signal.SIGTERM)
            p.wait()
    for mode, med, p99 in rows:
        print(f"ping on the Unix socket, {mode}: median {med:.1f} us, p99 {p99:.1f} us")


if __name__ == "__main__":
    main()
