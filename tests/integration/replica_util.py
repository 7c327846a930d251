# SPDX-License-Identifier: MIT
"""What the replica tests in Python share (test_replica_cluster.py,
test_replica_snapshot.py, test_replica_faults.py): failing with a message,
a free port, waiting for a condition, one nats-server, stopping what was
started, and a JSON-RPC connection over a Unix socket."""
import json
import os
import socket
import subprocess
import sys
import time

NAME = "test_replica"


def fail(msg):
    print(f"{NAME}: FAIL: {msg}", flush=True)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_until(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def start_nats(tmp):
    """One nats-server with JetStream on a free port of 127.0.0.1, its
    storage under tmp; (process, port) once it accepts connections."""
    port = free_port()
    p = subprocess.Popen(["nats-server", "-js", "-a", "127.0.0.1", "-p", str(port),
                          "-sd", os.path.join(tmp, "js")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: accepts(port), 30, "nats-server")
    return p, port


def stop_all(procs):
    """SIGTERM to every process still running, SIGKILL after 20 s."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


class Conn:
    def __init__(self, path, timeout=60):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.f = self.s.makefile("rwb")

    def call(self, method, params=None):
        req = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        self.f.write(json.dumps(req).encode() + b"\n")
        self.f.flush()
        line = self.f.readline()
        if not line:
            raise EOFError("connection closed")
        return json.loads(line)

    def result(self, method, params=None):
        r = self.call(method, params)
        if "error" in r:
            fail(f"{method}: {r['error']}")
        return r["result"]
