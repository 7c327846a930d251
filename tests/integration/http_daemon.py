# SPDX-License-Identifier: MIT
"""What the --http tests share (test_http_metrics.py, test_http_ws.py): a
reposed with a Unix socket and --http on a free loopback port, a JSON-RPC
connection on its socket, failing with a message, and every daemon started
killed when a test fails.  REPOSE_DAEMON_WRAPPER (e.g. a valgrind command
line) runs every daemon under it."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

NAME = "test_http"
WRAP = os.environ.get("REPOSE_DAEMON_WRAPPER", "").split()
STARTED = []  # daemons to kill when a check fails


def fail(msg):
    print(f"{NAME}: FAIL: {msg}", flush=True)
    for p in STARTED:
        if p.poll() is None:
            p.kill()
    sys.exit(1)


def read_to_close(s, timeout=5):
    """Reads a socket until its peer closes it: (the bytes, None), or with
    "reset" or "timeout" (the peer kept it open) instead of None."""
    s.settimeout(timeout)
    got = b""
    try:
        while chunk := s.recv(4096):
            got += chunk
    except ConnectionResetError:
        return got, "reset"
    except socket.timeout:
        return got, "timeout"
    return got, None


def run(main):
    """Runs main, killing the daemons it started if it raises."""
    try:
        main()
    except Exception:
        for p in STARTED:
            if p.poll() is None:
                p.kill()
        raise


class Daemon:
    def __init__(self, reposed, tmp, *extra):
        self.sock = os.path.join(tmp, "s")
        self.err = open(os.path.join(tmp, "err"), "w+")
        self.p = subprocess.Popen([*WRAP, reposed, "--unix", self.sock, "--tcp", "none",
                                   "--http", "127.0.0.1:0", *extra], stderr=self.err)
        STARTED.append(self.p)
        end = time.time() + 120
        self.port = None
        while time.time() < end and self.port is None:
            self.err.seek(0)
            m = re.search(r"listening on http 127\.0\.0\.1:(\d+)", self.err.read())
            if m:
                self.port = int(m.group(1))
            elif self.p.poll() is not None:
                fail(f"reposed exited: {self.log()}")
            else:
                time.sleep(0.02)
        if self.port is None:
            fail("no 'listening on http' line")
        while not os.path.exists(self.sock):
            time.sleep(0.02)
        self.u = socket.socket(socket.AF_UNIX)
        self.u.connect(self.sock)
        self.ubuf = b""
        self.next_id = 1

    def log(self):
        self.err.seek(0)
        return self.err.read()

    def call(self, method, params=None):
        req = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params is not None:
            req["params"] = params
        self.u.sendall(json.dumps(req).encode() + b"\n")
        while b"\n" not in self.ubuf:
            chunk = self.u.recv(1 << 20)
            if not chunk:
                fail(f"the socket closed; daemon log: {self.log()[-600:]}")
            self.ubuf += chunk
        line, self.ubuf = self.ubuf.split(b"\n", 1)
        return json.loads(line)

    def stop(self):
        self.u.close()
        self.p.send_signal(signal.SIGTERM)
        code = self.p.wait(timeout=120)
        if code != 0:
            fail(f"reposed exited with {code}: {self.log()}")
