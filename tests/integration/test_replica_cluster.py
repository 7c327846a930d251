# SPDX-License-Identifier: MIT
"""Replicas on a 3-node NATS JetStream cluster under failures
(proto/PROTOCOL.md, Replication; docs/ARCHITECTURE.md, Replicas).

    python3 tests/integration/test_replica_cluster.py REPOSED [SECONDS]

Starts three nats-server processes clustered on this machine and three
reposed replicas of one store (a stream with three copies).  Four writers,
each on its own scene through a different replica, put one shape at a time
for SECONDS (default 30) while the stream's leader is killed with SIGKILL
and restarted, twice, and one reposed replica (the one with a --data-dir)
is killed with SIGKILL and started again: it must start from its data
directory (a store revision above 0 before it reads the stream) and catch
up.  Then every replica must hold every acknowledged put, the
same scenes bit for bit, have applied the whole stream, and each writer's
revisions must rise.  A write refused meanwhile is allowed (and counted);
one acknowledged and missing, or replicas that differ, fail the test.
Exit 0 on success, 1 on failure, 77 (skipped) without nats-server.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import replica_util
from replica_util import Conn, accepts, fail, free_port, wait_until

replica_util.NAME = "test_replica_cluster"


class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        self.ports = [free_port() for _ in range(3)]
        self.cports = [free_port() for _ in range(3)]
        self.mports = [free_port() for _ in range(3)]
        self.procs = [None] * 3
        for i in range(3):
            self.start(i)
        for p in self.ports:
            wait_until(lambda p=p: accepts(p), 30, f"nats-server on {p}")
        wait_until(self.healthy, 60, "the JetStream cluster")

    def args(self, i):
        routes = ",".join(f"nats://127.0.0.1:{c}" for j, c in enumerate(self.cports) if j != i)
        return ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.ports[i]),
                "-sd", os.path.join(self.tmp, f"n{i}"), "-n", f"n{i}", "-m", str(self.mports[i]),
                "--cluster_name", "repose", "--cluster", f"nats://127.0.0.1:{self.cports[i]}",
                "--routes", routes]

    def start(self, i):
        log = open(os.path.join(self.tmp, f"n{i}.log"), "a")
        self.procs[i] = subprocess.Popen(self.args(i), stdout=log, stderr=log)

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait()

    def jsz(self, i):
        url = f"http://127.0.0.1:{self.mports[i]}/jsz?accounts=1&streams=1"
        return json.loads(urllib.request.urlopen(url, timeout=2).read())

    def healthy(self):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{self.mports[0]}/healthz",
                                          timeout=1).read()
            return b"ok" in body
        except OSError:
            return False

    def stream_leader(self, name):
        for i in range(3):
            if self.procs[i].poll() is not None:
                continue
            try:
                for acc in self.jsz(i).get("account_details", []):
                    for st in acc.get("stream_detail", []):
                        if st["name"] == name and st.get("cluster", {}).get("leader"):
                            return int(st["cluster"]["leader"][1:])
            except (OSError, ValueError, KeyError):
                continue
        return None

    def urls(self):
        return ",".join(f"nats://127.0.0.1:{p}" for p in self.ports)

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.kill()
                p.wait()


class Replica:
    def __init__(self, binary, tmp, k, urls, data_dir=None):
        self.sock = os.path.join(tmp, f"r{k}.sock")
        self.log = os.path.join(tmp, f"r{k}.log")
        self.cmd = [binary, "--unix", self.sock, "--tcp", "none", "--nats", urls,
                    "--store", "cluster", "--nats-copies", "3",
                    # (as README's cluster: a replica restarted while the
                    # cluster elects leaders waits for it instead of exiting)
                    "--nats-wait"]
        if data_dir:
            self.cmd += ["--data-dir", data_dir]
        self.p = None
        self.start()

    def start(self):
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL,
                                  stderr=open(self.log, "a"))
        wait_until(lambda: os.path.exists(self.sock) or self.p.poll() is not None, 60,
                   "a replica to listen")
        if self.p.poll() is not None:
            fail(f"a replica exited ({self.p.returncode}); its log:\n" + open(self.log).read())

    def kill9(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                fail("a replica did not stop at SIGTERM")
            if self.p.returncode != 0:
                fail(f"a replica exited {self.p.returncode} at SIGTERM")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test_replica_cluster.py REPOSED [SECONDS]")
    binary = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    if not shutil.which("nats-server"):
        print("test_replica_cluster: skipped: no nats-server (Debian: nats-server)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="repose-cluster-")
    cluster, replicas = None, []
    try:
        cluster = Cluster(tmp)
        replicas = [Replica(binary, tmp, k, cluster.urls(),
                            os.path.join(tmp, "r2-data") if k == 2 else None)
                    for k in range(3)]
        acked, refused, lock = {}, [], threading.Lock()
        stop = time.time() + seconds
        revs = {}

        def writer(k):
            scene = f"w{k}"
            mine, i = [], 0
            c = None
            while time.time() < stop:
                try:
                    if c is None:
                        c = Conn(replicas[k % 3].sock)
                        if i == 0:
                            r = c.call("scene.create", {"scene": scene})
                            if "error" in r:
                                c = None
                                time.sleep(0.1)
                                continue
                    r = c.call("scene.put", {"scene": scene, "shapes": {
                        f"s{i}": {"sphere": {"center": [i % 50, 0, 0], "radius": 0.5}}}})
                except (OSError, EOFError):
                    c = None  # its replica was killed: connect again
                    time.sleep(0.1)
                    continue
                with lock:
                    if "result" in r:
                        acked[(scene, f"s{i}")] = r["result"]["revision"]
                        mine.append(r["result"]["revision"])
                    else:
                        refused.append(r["error"]["message"])
                i += 1
            revs[k] = mine

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        step = seconds / 5
        time.sleep(step)
        for _ in range(2):
            leader = cluster.stream_leader("REPOSE_cluster")
            victim = leader if leader is not None else 0
            print(f"killing node n{victim} (the stream's leader: {leader is not None})",
                  flush=True)
            cluster.kill(victim)
            time.sleep(step)
            cluster.start(victim)
            time.sleep(step / 2)
        print("killing replica 2 with SIGKILL and starting it again", flush=True)
        replicas[2].kill9()
        time.sleep(step / 4)
        logged = len(open(replicas[2].log).read())
        replicas[2].start()
        restart_log = open(replicas[2].log).read()[logged:]
        m = re.search(r"store revision (\d+)", restart_log)
        if not m or int(m.group(1)) == 0:
            fail("the killed replica did not start from its data directory:\n" + restart_log)
        from_dir = int(m.group(1))
        for t in threads:
            t.join(120)
        if any(t.is_alive() for t in threads):
            fail("a writer is still waiting for a reply")
        if len(acked) < 20:
            fail(f"only {len(acked)} writes were acknowledged")
        top = max(acked.values())
        states = []
        for r in replicas:
            c = Conn(r.sock)
            st = c.result("stats", {"min_revision": top})["replication"]
            scenes = {f"w{k}": c.result("scene.get", {"scene": f"w{k}"}) for k in range(4)}
            states.append((st, scenes))
        for (scene, shape), rev in acked.items():
            for n, (_, scenes) in enumerate(states):
                if shape not in scenes[scene]["shapes"]:
                    fail(f"replica {n} lacks acknowledged {scene}/{shape} (revision {rev})")
        if not all(s[1] == states[0][1] for s in states):
            fail("the replicas differ")
        applied = {s[0]["applied"] for s in states}
        for k, mine in revs.items():
            if mine != sorted(set(mine)):
                fail(f"writer {k}'s revisions do not rise: {mine[:20]}")
        print(f"test_replica_cluster: ok: {len(acked)} writes acknowledged, {len(refused)} "
              f"refused, on every replica; applied {sorted(applied)}; the killed replica "
              f"restarted from revision {from_dir} of its data directory; refusals: "
              f"{sorted(set(m[:90] for m in refused))[:3]}", flush=True)
        for r in replicas:
            r.stop()
        replicas = []
    finally:
        for r in replicas:
            if r.p and r.p.poll() is None:
                r.p.kill()
        if cluster:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
