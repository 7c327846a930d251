# SPDX-License-Identifier: MIT
"""Replicas against a misconfigured stream and a connection that drops
(proto/PROTOCOL.md, Replication).

    python3 tests/integration/test_replica_faults.py REPOSED

With one nats-server:
  - a stream named like a store's but made with other settings (memory
    storage) is refused with a message that says so, exit 1;
  - a replica asking --nats-copies 3 for a store whose stream exists with
    one copy is refused (two replicas of one store with other options);
  - through a TCP proxy that cuts the connection right after it forwards a
    mutation's publish (its acknowledgement never comes back), and then
    right before (the publish is lost too), the replica reconnects and the
    mutation is applied exactly once (a lost publish is sent again with the
    same message id): each write is acknowledged once, the stream holds one
    message per write, and the revisions have no gap.
Exit 0 on success, 1 on failure, 77 (skipped) without nats-server.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tempfile
import threading

import replica_util
from replica_util import Conn, fail, start_nats, stop_all, wait_until

replica_util.NAME = "test_replica_faults"


def js_api(port, subject, payload):
    """One JetStream API request over the NATS text protocol; its reply."""
    s = socket.create_connection(("127.0.0.1", port), 10)
    f = s.makefile("rwb")
    f.readline()  # INFO
    body = json.dumps(payload).encode()
    f.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n')
    f.write(b"SUB _INBOX.faults 1\r\n")
    f.write(b"PUB %s _INBOX.faults %d\r\n%s\r\n" % (subject.encode(), len(body), body))
    f.flush()
    while True:
        line = f.readline()
        if not line:
            fail(f"no reply to {subject}")
        if line.startswith(b"PING"):
            f.write(b"PONG\r\n")
            f.flush()
        elif line.startswith(b"MSG"):
            n = int(line.split()[-1])
            reply = json.loads(f.read(n + 2)[:-2])
            s.close()
            return reply


def run(binary, tmp, name, url, extra=(), wait_exit=False):
    sock = os.path.join(tmp, name + ".sock")
    log_path = os.path.join(tmp, name + ".log")
    p = subprocess.Popen([binary, "--unix", sock, "--tcp", "none", "--nats", url, *extra],
                         stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    if wait_exit:
        code = p.wait(60)
        return code, open(log_path).read()
    wait_until(lambda: os.path.exists(sock) or p.poll() is not None, 60, name + " to listen")
    if p.poll() is not None:
        fail(f"{name} exited: " + open(log_path).read())
    return p, sock


class DropProxy:
    """Relays TCP between reposed and nats-server; armed, it cuts the
    connection right after relaying a publish to the store's subject."""

    def __init__(self, target, subject):
        self.target, self.subject = target, subject
        self.armed = False
        self.before = False  # cut before relaying the publish (it is lost)
        self.drops = 0
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            threading.Thread(target=self.pipe, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(u, c, False), daemon=True).start()

    def pipe(self, src, dst, upstream):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                cut = upstream and self.armed and self.subject in data
                if not (cut and self.before):
                    dst.sendall(data)
                if cut:
                    self.armed = False
                    self.drops += 1
                    break  # its acknowledgement will not come back (nor, before, the publish)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def main():
    binary = sys.argv[1]
    if not shutil.which("nats-server"):
        print("test_replica_faults: skipped: no nats-server (Debian: nats-server)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="repose-faults-")
    procs = []
    try:
        nats, port = start_nats(tmp)
        procs.append(nats)
        url = f"nats://127.0.0.1:{port}"

        # A stream with a store's name and other settings.
        r = js_api(port, "$JS.API.STREAM.CREATE.REPOSE_odd",
                   {"name": "REPOSE_odd", "subjects": ["repose.odd.m"], "storage": "memory",
                    "retention": "limits", "num_replicas": 1})
        if "error" in r:
            fail(f"could not make the odd stream: {r}")
        code, log = run(binary, tmp, "odd", url, ["--store", "odd"], wait_exit=True)
        if code != 1 or "settings a store cannot use" not in log:
            fail(f"a stream with other settings: exit {code}, log:\n{log}")

        # The same store asked for with other options.
        p, sock = run(binary, tmp, "one", url, ["--store", "cp"])
        Conn(sock).result("scene.create", {"scene": "s"})
        p.terminate()
        p.wait(30)
        code, log = run(binary, tmp, "three", url, ["--store", "cp", "--nats-copies", "3"],
                        wait_exit=True)
        if code != 1 or "--nats-copies asks for 3" not in log:
            fail(f"--nats-copies against an existing stream: exit {code}, log:\n{log}")

        # A publish whose acknowledgement is lost.
        # (HPUB: the publish itself, not a consumer request naming the subject)
        proxy = DropProxy(port, b"HPUB repose.drop.m ")
        p, sock = run(binary, tmp, "drop", f"nats://127.0.0.1:{proxy.port}",
                      ["--store", "drop"])
        procs.append(p)
        c = Conn(sock)

        def connected():
            # After a cut the replica reconnects; until then a write is
            # refused (-32007, nothing published), which is not what is
            # tested here.
            return c.result("stats")["replication"]["connected"]

        def put(k):
            # The replica may find the last cut only now (a loaded machine):
            # a write refused as cut off published nothing; it is asked
            # again once the replica is back.
            for _ in range(20):
                wait_until(connected, 60, "the replica to reconnect")
                proxy.armed = True
                r = c.call("scene.put", {"scene": "s", "shapes": {
                    f"p{k}": {"sphere": {"center": [k, 0, 0], "radius": 1}}}})
                if "result" in r:
                    return r["result"]["revision"]
                if r["error"]["code"] != -32007 or "cut off" not in r["error"]["message"]:
                    fail(f"scene.put: {r['error']}")
                time.sleep(0.1)
            fail("scene.put refused as cut off 20 times")

        revs = [c.result("scene.create", {"scene": "s"})["revision"]]
        for k in range(3):
            revs.append(put(k))
        # ... and publishes lost on the way: sent again with the same id.
        proxy.before = True
        for k in range(3, 6):
            revs.append(put(k))
        if proxy.drops != 6:
            fail(f"the proxy cut {proxy.drops} connections, not 6")
        st = c.result("stats")["replication"]
        if revs != list(range(1, 8)):
            fail(f"revisions {revs}: a write was applied twice or lost")
        if st["applied"] != 7 or st["stream_last"] != 7:
            fail(f"the stream holds other than one message per write: {st}")
        if st["publish_retries"] < 3:
            fail(f"lost publishes were not sent again: {st}")
        if len(c.result("scene.get", {"scene": "s"})["shapes"]) != 6:
            fail("the scene lacks a write")
        print(f"test_replica_faults: ok: odd stream and copies refused; 3 lost "
              f"acknowledgements and 3 lost publishes, each write applied once "
              f"({st['publish_retries']} resends)",
              flush=True)
    finally:
        stop_all(procs)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
