# SPDX-License-Identifier: MIT
"""What the benchmark scripts share: a newline-delimited JSON-RPC connection
to reposed over a Unix socket, a daemon started on a scratch socket, and
its memory as /proc reports it.  Standard library only."""
import json
import os
import socket
import subprocess
import tempfile
import time


class Conn:
    """One connection; replies are read in order, a line at a time."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""

    def send_line(self, text):
        self.s.sendall(text.encode() + b"\n")

    def send(self, obj):
        self.send_line(json.dumps(obj, separators=(",", ":")))

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, params=None, rid=1):
        """Sends one request and returns its reply, skipping notifications."""
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        self.send(req)
        while True:
            r = self.line()
            if "id" in r:
                return r

    def result(self, method, params=None):
        """call() for a request that must succeed: its result, or the
        script stops with the error."""
        reply = self.call(method, params)
        if "error" in reply:
            raise SystemExit(f"{method}: {reply['error']}")
        return reply["result"]

    def batch(self, calls):
        """Sends [(method, params), ...] as one JSON-RPC batch (one line)
        and returns the results in request order, stopping the script at an
        error."""
        reqs = [{"jsonrpc": "2.0", "id": k, "method": m, "params": p}
                for k, (m, p) in enumerate(calls)]
        self.send(reqs)
        while True:
            r = self.line()
            if isinstance(r, list):
                break
        out = [None] * len(calls)
        for item in r:
            if "error" in item:
                raise SystemExit(f"{calls[item['id']][0]}: {item['error']}")
            out[item["id"]] = item["result"]
        return out


def start(binary, extra=(), log=None, wait_s=5.0):
    """Starts reposed on a scratch Unix socket (no TCP) and waits (up to
    wait_s) until it answers; returns (process, socket path, scratch
    directory)."""
    tmp = tempfile.mkdtemp(prefix="repose-bench-")
    sock = os.path.join(tmp, "s.sock")
    p = subprocess.Popen([binary, "--unix", sock, "--tcp", "none", *extra],
                         stdout=log, stderr=log)
    for _ in range(int(wait_s * 100)):
        if os.path.exists(sock):
            try:
                Conn(sock).s.close()
                return p, sock, tmp
            except OSError:
                pass
        time.sleep(0.01)
    p.kill()
    raise RuntimeError("reposed did not start")


def status_kb(pid, field):
    """A /proc/PID/status field in KiB (VmRSS, VmHWM), -1 when absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1
