# SPDX-License-Identifier: MIT
"""A replica joining after its store's stream was trimmed starts from the
snapshot another replica published (proto/PROTOCOL.md, Replication).

    python3 tests/integration/test_replica_snapshot.py REPOSED

One nats-server with JetStream; replica A publishes a snapshot every 25
stream messages and trims the stream but for the last 10 before it
(--snapshot-publish 25 --nats-trim 10).  After a model, a scene of several
thousand shapes (an image of several NATS messages) and 200 puts through
A, replica B starts with an empty store: it must load the snapshot and
read the rest of the stream, ending equal to A (every scene and model).
A replica C whose data directory holds only the first revisions (the
stream has been trimmed past them since) replaces that stale cache by the
published snapshot and ends equal to A too; restarted, it starts from its
directory again with no snapshot to load.  Exit 0 on success, 1 on failure, 77 (skipped) without nats-server.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import replica_util
from replica_util import Conn, fail, start_nats, stop_all, wait_until

replica_util.NAME = "test_replica_snapshot"


def replica(binary, tmp, name, url, extra=()):
    sock = os.path.join(tmp, name + ".sock")
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([binary, "--unix", sock, "--tcp", "none", "--nats", url,
                          "--store", "snap", *extra], stdout=subprocess.DEVNULL, stderr=log)
    wait_until(lambda: os.path.exists(sock) or p.poll() is not None, 60, name + " to listen")
    return p, sock


def everything(c):
    scenes = {s["scene"]: c.result("scene.get", {"scene": s["scene"]})
              for s in c.result("scene.list")["scenes"]}
    models = {m["model"]: c.result("model.get", {"model": m["model"]})
              for m in c.result("model.list")["models"]}
    return scenes, models


def main():
    binary = sys.argv[1]
    if not shutil.which("nats-server"):
        print("test_replica_snapshot: skipped: no nats-server (Debian: nats-server)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="repose-snap-")
    procs = []
    try:
        nats, port = start_nats(tmp)
        procs.append(nats)
        url = f"nats://127.0.0.1:{port}"
        a, sa = replica(binary, tmp, "a", url, ["--snapshot-publish", "25", "--nats-trim", "10"])
        procs.append(a)
        ca = Conn(sa)
        # C's data directory: the first revisions only.
        c, sc = replica(binary, tmp, "c", url, ["--data-dir", os.path.join(tmp, "c-data")])
        urdf = open(os.path.join(os.path.dirname(__file__), "..", "data", "arm7.urdf")).read()
        ca.result("model.put", {"model": "arm", "urdf": urdf})
        ca.result("scene.create", {"scene": "cell"})
        r = ca.result("scene.put", {"scene": "cell", "shapes": {"p": {"sphere": {
            "center": [1, 0, 0], "radius": 0.5}}}})
        Conn(sc).result("stats", {"min_revision": r["revision"]})
        c.terminate()
        if c.wait(30) != 0:
            fail("replica c did not stop cleanly")
        for b in range(3):  # about 1 MB of image each
            ca.result("scene.put", {"scene": "cell", "shapes": {
                f"b{b}_{i}": {"capsule": {"a": [i * 0.01, b, 0], "b": [i * 0.01, b, 1],
                                          "radius": 0.03125}} for i in range(6000)}})
        for k in range(200):
            last = ca.result("scene.put", {"scene": "cell", "shapes": {
                f"k{k % 17}": {"sphere": {"center": [k * 0.125, 2, 0], "radius": 0.25}}}})
        wait_until(lambda: "published" in open(os.path.join(tmp, "a.log")).read(), 30,
                   "a published snapshot")
        time.sleep(1)  # (the last publication and its trim)
        b, sb = replica(binary, tmp, "b", url)
        procs.append(b)
        if b.poll() is not None:
            fail("replica b exited: " + open(os.path.join(tmp, "b.log")).read())
        blog = open(os.path.join(tmp, "b.log")).read()
        if "loaded the published snapshot" not in blog:
            fail("replica b did not start from the published snapshot:\n" + blog)
        cb = Conn(sb)
        cb.result("stats", {"min_revision": last["revision"]})
        if everything(ca) != everything(cb):
            fail("replica b differs from replica a")
        # C: its directory is behind the trimmed stream; it heals.
        c, sc = replica(binary, tmp, "c2", url, ["--data-dir", os.path.join(tmp, "c-data")])
        procs.append(c)
        if c.poll() is not None:
            fail("replica c exited: " + open(os.path.join(tmp, "c2.log")).read())
        clog = open(os.path.join(tmp, "c2.log")).read()
        if "replaced by the published snapshot" not in clog:
            fail("replica c did not replace its stale data directory:\n" + clog)
        cc = Conn(sc)
        cc.result("stats", {"min_revision": last["revision"]})
        if everything(ca) != everything(cc):
            fail("replica c differs from replica a after healing")
        # Its directory now holds the published state: stopped and started
        # again it needs no snapshot, only the stream's tail.
        extra = ca.result("scene.put", {"scene": "cell", "shapes": {
            "after": {"sphere": {"center": [0, 0, 9], "radius": 1}}}})
        cc.result("stats", {"min_revision": extra["revision"]})
        c.terminate()
        if c.wait(30) != 0:
            fail("replica c did not stop cleanly after healing")
        c, sc = replica(binary, tmp, "c3", url, ["--data-dir", os.path.join(tmp, "c-data")])
        procs.append(c)
        c3log = open(os.path.join(tmp, "c3.log")).read()
        if c.poll() is not None or "published snapshot" in c3log:
            fail("replica c's healed directory did not start it by itself:\n" + c3log)
        if everything(ca) != everything(Conn(sc)):
            fail("replica c differs from replica a after its restart")
        print("test_replica_snapshot: ok: b loaded the published snapshot and equals a; c "
              "replaced its stale data directory by it, and restarts from it", flush=True)
    finally:
        stop_all(procs)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
