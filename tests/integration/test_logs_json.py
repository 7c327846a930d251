# SPDX-License-Identifier: MIT
"""reposed --log-format json: every line a daemon run writes to stderr
(start, listeners, connections, warnings and errors, the stop) is one JSON
object with the fields docs/ARCHITECTURE.md ("Logs") lists: time (UTC,
RFC 3339 with milliseconds), level, event, message, and the event's own
fields.  A second daemon refused on the same socket logs its error as JSON
too, and an unknown format is refused.

Usage: test_logs_json.py REPOSED"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

NAME = "test_logs_json"
LEVELS = {"error", "warn", "info", "debug"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def fail(msg):
    print(f"{NAME}: FAIL: {msg}", flush=True)
    sys.exit(1)


def wait_for(path, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            return
        time.sleep(0.02)
    fail(f"{path} did not appear")


def lines_of(text):
    """Every line parsed; a line that is not one JSON object fails."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line)
        except ValueError as e:
            fail(f"line {n} is not JSON ({e}): {line!r}")
        if not isinstance(obj, dict):
            fail(f"line {n} is not an object: {line!r}")
        for key, kind in (("time", str), ("level", str), ("event", str), ("message", str)):
            if not isinstance(obj.get(key), kind):
                fail(f"line {n} has no {key} string: {line!r}")
        if not TIME.match(obj["time"]):
            fail(f"line {n}: time {obj['time']!r} is not RFC 3339 UTC with milliseconds")
        if obj["level"] not in LEVELS:
            fail(f"line {n}: level {obj['level']!r}")
        out.append(obj)
    return out


def rpc(sock, line):
    sock.sendall(line + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def main():
    reposed = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s")
        weird = os.path.join(tmp, 'q"\\\x01\xe9')  # a path JSON must escape
        os.mkdir(weird)
        wpath = os.path.join(weird, "w")
        err = open(os.path.join(tmp, "err"), "wb")
        p = subprocess.Popen([reposed, "--unix", path, "--tcp", "127.0.0.1:0",
                              "--log-format", "json", "--log-level", "debug",
                              "--max-request-bytes", "4096"], stderr=err)
        try:
            wait_for(path)
            # A client that asks, one that sends a line over the limit
            # (closed, logged at debug), and one that goes away mid-line.
            a = socket.socket(socket.AF_UNIX)
            a.connect(path)
            if b'"pong":true' not in rpc(a, b'{"jsonrpc":"2.0","id":1,"method":"ping"}'):
                fail("ping")
            b = socket.socket(socket.AF_UNIX)
            b.connect(path)
            b.sendall(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"' + b"y" * 8000)
            b.recv(65536)
            b.close()
            c = socket.socket(socket.AF_UNIX)
            c.connect(path)
            c.sendall(b'{"jsonrpc":')
            c.close()
            a.close()
            # A second daemon on a weirdly named socket next to it, and one
            # refused on the first daemon's socket: errors, as JSON.
            r = subprocess.run([reposed, "--unix", path, "--tcp", "none", "--log-format", "json"],
                               stderr=subprocess.PIPE, timeout=30)
            if r.returncode == 0:
                fail("a second daemon on the same socket started")
            refused = lines_of(r.stderr.decode("utf-8"))
            if not any(o["level"] == "error" for o in refused):
                fail(f"the refused daemon logged no error: {refused}")
            q = subprocess.Popen([reposed, "--unix", wpath, "--tcp", "none",
                                  "--log-format", "json"], stderr=subprocess.PIPE)
            wait_for(wpath)
            q.send_signal(signal.SIGTERM)
            _, qerr = q.communicate(timeout=30)
            listening = [o for o in lines_of(qerr.decode("utf-8")) if o["event"] == "listening"]
            if not listening or listening[0].get("address") != wpath:
                fail(f"the listening line does not carry the path as it is: {listening}")
            time.sleep(0.2)
        finally:
            p.send_signal(signal.SIGTERM)
            if p.wait(timeout=30) != 0:
                fail(f"reposed exited with {p.returncode}")
            err.close()
        with open(os.path.join(tmp, "err"), "rb") as f:
            raw = f.read()
        logs = lines_of(raw.decode("utf-8"))
        events = [o["event"] for o in logs]
        for want in ("listening", "ready", "connection.open", "connection.close", "shutdown",
                     "stopped"):
            if want not in events:
                fail(f"no {want} event in {events}")
        opens = [o for o in logs if o["event"] == "connection.open"]
        closes = [o for o in logs if o["event"] == "connection.close"]
        if len(opens) < 3 or len(closes) != len(opens):
            fail(f"{len(opens)} connections opened, {len(closes)} closed")
        for o in opens + closes:
            if not isinstance(o.get("connection"), int) or o.get("transport") not in ("tcp", "unix"):
                fail(f"connection fields missing: {o}")
        tcp = [o for o in logs if o["event"] == "listening" and o.get("transport") == "tcp"]
        if not tcp or not re.match(r"^127\.0\.0\.1:\d+$", tcp[0].get("address", "")):
            fail(f"tcp listening line: {tcp}")
        if events[-1] != "stopped" or events.index("ready") > events.index("shutdown"):
            fail(f"events out of order: {events}")
        if not any("over" in o["message"] for o in logs if o["level"] == "debug"):
            fail("the line over the limit was not logged")
        bad = subprocess.run([reposed, "--log-format", "yaml"], stderr=subprocess.PIPE,
                             timeout=30)
        if bad.returncode != 2 or b"--log-format must be text or json" not in bad.stderr:
            fail(f"--log-format yaml: {bad.returncode} {bad.stderr!r}")
    print(f"{NAME}: {len(logs)} lines of a daemon run, every one JSON with its fields; "
          f"events {sorted(set(events))}")


if __name__ == "__main__":
    main()
