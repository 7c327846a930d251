# SPDX-License-Identifier: MIT
"""Replicas on NATS JetStream against one daemon with a journal.

    python3 bench/replica_bench.py [--reposed build/release/reposed]
                                   [--seconds 5] [--clients 4]

Writers (threads, each on its own connection and its own scene) send
scene.put of one sphere, one at a time, and time each acknowledgement; the
same load goes to:

  journal      one reposed with --data-dir --fsync always (group commit)
  R1, 1 rep.   one replica, one nats-server (the stream has one copy)
  R3, 1 rep.   one replica, a 3-node NATS cluster on this machine (R3)
  R3, 3 rep.   three replicas on that cluster, writers spread over them

and prints mutations per second with p50/p99 acknowledgement latency.
Then, on the R3 cluster: the lag of a second replica while puts go through
the first as fast as one client sends them (up to 1000/s), and query
throughput (scene.distance) with 1 and 3 replicas.  Last, on one
nats-server: --catchup puts (default a million), the time a new replica
takes to replay them, and the time one takes from a published snapshot
after the stream was trimmed.  Needs nats-server (Debian: nats-server).  Figures only; nothing
here is a test.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_util import Conn, start  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class Nats:
    """One nats-server, or a cluster of three, with JetStream, on this
    machine; stop() kills them and removes their storage."""

    def __init__(self, nodes):
        self.tmp = tempfile.mkdtemp(prefix="repose-nats-")
        self.procs, self.ports = [], [free_port() for _ in range(nodes)]
        cports = [free_port() for _ in range(nodes)]
        mports = [free_port() for _ in range(nodes)]
        for i in range(nodes):
            cmd = ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.ports[i]),
                   "-sd", os.path.join(self.tmp, f"n{i}"), "-n", f"n{i}",
                   "-m", str(mports[i])]
            if nodes > 1:
                routes = ",".join(f"nats://127.0.0.1:{c}" for j, c in enumerate(cports) if j != i)
                cmd += ["--cluster_name", "repose", "--cluster", f"nats://127.0.0.1:{cports[i]}",
                        "--routes", routes]
            self.procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))
        for p in self.ports:
            wait_port(p)
        if nodes > 1:  # JetStream's meta leader is elected a moment later
            import urllib.request
            end = time.time() + 30
            while time.time() < end:
                try:
                    body = urllib.request.urlopen(
                        f"http://127.0.0.1:{mports[0]}/healthz", timeout=1).read()
                    if b"ok" in body:
                        break
                except OSError:
                    pass
                time.sleep(0.2)
            time.sleep(1.0)

    def urls(self):
        return ",".join(f"nats://127.0.0.1:{p}" for p in self.ports)

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def writers(socks, clients, seconds, tag):
    """Each writer puts one sphere at a time into its own scene for
    `seconds`; returns (puts per second, latencies in ms)."""
    lat, lock = [], threading.Lock()
    stop = time.time() + seconds

    def run(k):
        c = Conn(socks[k % len(socks)])
        scene = f"{tag}-{k}"
        c.result("scene.create", {"scene": scene})
        mine, n = [], 0
        while time.time() < stop:
            t0 = time.perf_counter()
            c.result("scene.put", {"scene": scene, "shapes": {
                f"s{n % 64}": {"sphere": {"center": [n % 7, 0, 0], "radius": 0.5}}}})
            mine.append((time.perf_counter() - t0) * 1e3)
            n += 1
        with lock:
            lat.extend(mine)

    t = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    t0 = time.time()
    for x in t:
        x.start()
    for x in t:
        x.join()
    return len(lat) / (time.time() - t0), lat


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def report(name, rate, lat):
    print(f"  {name:14s} {rate:8.0f} puts/s   p50 {statistics.median(lat):6.2f} ms"
          f"   p99 {pct(lat, 0.99):6.2f} ms")


def replicas(binary, urls, n, store, log, extra=()):
    out = []
    for _ in range(n):
        out.append(start(binary, ["--nats", urls, "--store", store, *extra], log))
    return out


def stop_all(procs):
    for p, _, tmp in procs:
        p.terminate()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reposed", default="build/release/reposed")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--catchup", type=int, default=1000000)
    a = ap.parse_args()
    if not shutil.which("nats-server"):
        sys.exit("replica_bench: needs nats-server (Debian: nats-server)")
    log = open(os.devnull, "w")
    print(f"replica_bench: {a.clients} writers, {a.seconds:.0f} s each, scene.put of one sphere")

    data = tempfile.mkdtemp(prefix="repose-journal-")
    d = start(a.reposed, ["--data-dir", data, "--fsync", "always"], log)
    report("journal", *writers([d[1]], a.clients, a.seconds, "j"))
    stop_all([d])
    shutil.rmtree(data, ignore_errors=True)

    one = Nats(1)
    r = replicas(a.reposed, one.urls(), 1, "b1", log)
    report("R1, 1 rep.", *writers([r[0][1]], a.clients, a.seconds, "w"))
    stop_all(r)
    one.stop()

    three = Nats(3)
    try:
        r = replicas(a.reposed, three.urls(), 1, "b3", log, ["--nats-copies", "3"])
        report("R3, 1 rep.", *writers([r[0][1]], a.clients, a.seconds, "x"))
        r += replicas(a.reposed, three.urls(), 2, "b3", log)
        report("R3, 3 rep.", *writers([x[1] for x in r], a.clients, a.seconds, "y"))

        # Lag of replica 2 while replica 1 takes about 1000 puts/s.
        w, rd = Conn(r[0][1]), Conn(r[1][1])
        w.result("scene.create", {"scene": "lag"})
        lags, stop = [], time.time() + a.seconds
        n = 0
        while time.time() < stop:
            t0 = time.time()
            rev = w.result("scene.put", {"scene": "lag", "shapes": {
                "a": {"sphere": {"center": [n % 5, 0, 0], "radius": 1}}}})["revision"]
            n += 1
            if n % 50 == 0:
                st = rd.result("stats")["replication"]
                lags.append(max(0, rev - st["applied"]))
            time.sleep(max(0.0, 0.001 - (time.time() - t0)))
        print(f"  lag of a second replica at about {n / a.seconds:.0f} puts/s: median "
              f"{statistics.median(lags):.0f}, max {max(lags)} messages behind")

        # Query throughput: scene.distance from the C load tool (8 connections
        # x 16 in flight per replica), on 1 then 3 replicas.
        lb = os.path.join(os.path.dirname(a.reposed), "bench", "load_bench")
        req = os.path.join(three.tmp, "q.json")
        with open(req, "w") as f:
            f.write('{"jsonrpc":"2.0","id":1,"method":"scene.distance","params":{"scene":"lag",'
                    '"shape":{"sphere":{"center":[9,0,0],"radius":0.5}}}}\n')
        for socks in ([r[0][1]], [x[1] for x in r]):
            if not os.path.exists(lb):
                print(f"  (no {lb}: query throughput skipped)")
                break
            ps = [subprocess.Popen([lb, "--unix", s, "-c", "8", "-p", "16", "-d", str(a.seconds),
                                    "--payload-file", req], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True) for s in socks]
            total = 0.0
            for p in ps:
                out = p.communicate()[0]
                total += float(out.split("reqs/s=")[1].split(",")[0].split()[0])
            print(f"  queries (scene.distance) on {len(socks)} replica(s): {total:.0f}/s")

        stop_all(r)
    finally:
        three.stop()

    # Catch-up (one nats-server): --catchup puts from 8 writers, then a new
    # replica that replays the whole stream, then one that starts from a
    # published snapshot after the stream was trimmed.
    one = Nats(1)
    try:
        a0 = start(a.reposed, ["--nats", one.urls(), "--store", "cu"], log)
        Conn(a0[1]).result("scene.create", {"scene": "bulk"})
        t0 = time.time()

        def fill(k):
            c = Conn(a0[1])
            for i in range(k, a.catchup, 8):
                c.result("scene.put", {"scene": "bulk", "shapes": {f"s{i % 1000}": {"sphere": {
                    "center": [i % 11, 0, 0], "radius": 0.25}}}})

        ts = [threading.Thread(target=fill, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        fill_s = time.time() - t0
        t0 = time.time()
        d = start(a.reposed, ["--nats", one.urls(), "--store", "cu"], log, wait_s=600)
        took = time.time() - t0
        applied = Conn(d[1]).result("stats")["replication"]["applied"]
        print(f"  catch-up: {a.catchup} puts in {fill_s:.1f} s (8 writers, R1); a new replica "
              f"replayed {applied} messages and listened after {took:.2f} s")
        pub = start(a.reposed, ["--nats", one.urls(), "--store", "cu", "--snapshot-publish", "1",
                                "--nats-trim", "1000"], log, wait_s=600)
        Conn(pub[1]).result("scene.put", {"scene": "bulk", "shapes": {
            "last": {"sphere": {"center": [0, 0, 0], "radius": 1}}}})
        time.sleep(3)  # (the snapshot and the trim)
        t0 = time.time()
        e = start(a.reposed, ["--nats", one.urls(), "--store", "cu"], log, wait_s=600)
        took = time.time() - t0
        applied = Conn(e[1]).result("stats")["replication"]["applied"]
        print(f"  after a trim, a new replica loaded the published snapshot, read the rest "
              f"(applied {applied}) and listened after {took:.2f} s")
        stop_all([a0, d, pub, e])
    finally:
        one.stop()


if __name__ == "__main__":
    main()
