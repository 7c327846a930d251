# SPDX-License-Identifier: MIT
"""reposed --http: GET /metrics parsed by a real Prometheus text parser
(Debian's python3-prometheus-client), its counters rising as requests are
made over the Unix socket; GET /healthz; the token on /metrics; 404 and
405 (with Allow); the viewer's files; the loopback rule; malformed HTTP, a client that sends half a
request, and more connections than the cap, with the daemon answering on
its socket meanwhile.

Usage: test_http_metrics.py REPOSED.  REPOSE_DAEMON_WRAPPER (e.g. a
valgrind command line) runs every daemon under it.
Exit 77 (skipped) without prometheus_client."""
import gzip
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_daemon import Daemon, fail, read_to_close, run  # noqa: E402
import http_daemon  # noqa: E402

NAME = "test_http_metrics"
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print(f"{NAME}: SKIP: python3-prometheus-client is not installed")
    sys.exit(77)


def get(d, path, headers=None, method="GET"):
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
    c.request(method, path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body


def scrape(d, headers=None):
    status, hdrs, body = get(d, "/metrics", headers)
    if status != 200:
        fail(f"/metrics: {status} {body[:200]!r}")
    if not hdrs.get("content-type", "").startswith("text/plain; version=0.0.4"):
        fail(f"/metrics content type {hdrs.get('content-type')!r}")
    samples = {}
    kinds = {}
    for fam in text_string_to_metric_families(body.decode("utf-8")):
        kinds[fam.name] = fam.type
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, kinds


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def main():
    reposed = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(reposed, tmp, "--data-dir", os.path.join(tmp, "data"))
        status, hdrs, body = get(d, "/healthz")
        if status != 200 or json.loads(body) != {"ready": True}:
            fail(f"/healthz: {status} {body!r}")
        before, kinds = scrape(d)
        for fam, kind in (("repose_requests", "counter"), ("repose_request_duration_seconds",
                                                           "histogram"),
                          ("repose_connections", "gauge"), ("repose_scenes", "gauge"),
                          ("repose_limits_hit", "counter"), ("repose_memory_bytes", "gauge"),
                          ("repose_journal_bytes", "gauge"), ("repose_ready", "gauge"),
                          ("repose_method_duration_seconds", "summary")):
            if kinds.get(fam) != kind:
                fail(f"family {fam}: {kinds.get(fam)} (want {kind})")
        if value(before, "repose_ready") != 1 or value(before, "repose_scenes") != 0:
            fail("ready / scenes before")
        # Requests over the socket move the counters.
        for _ in range(40):
            if d.call("ping").get("result") != {"pong": True}:
                fail("ping")
        r = d.call("scene.create", {"scene": "lab", "shapes": {
            "a": {"sphere": {"center": [0, 0, 0], "radius": 1}},
            "b": {"capsule": {"a": [2, 0, 0], "b": [3, 0, 0], "radius": 0.5}}}})
        if "result" not in r:
            fail(f"scene.create: {r}")
        if d.call("no.such.method").get("error", {}).get("code") != -32601:
            fail("unknown method")
        for _ in range(3):  # a bad request: counted by method and code
            if d.call("scene.create", {"scene": 7}).get("error", {}).get("code") != -32602:
                fail("scene.create with a number for a name")
        after, _ = scrape(d)
        pings = (value(after, "repose_requests_total", method="ping", code="ok") or 0) - (
            value(before, "repose_requests_total", method="ping", code="ok") or 0)
        if pings != 40:
            fail(f"ping counter rose by {pings}")
        if value(after, "repose_requests_total", method="scene.create", code="-32602") != 3 or \
                value(after, "repose_requests_total", method="scene.create", code="ok") != 1:
            fail("scene.create by code: "
                 f"{value(after, 'repose_requests_total', method='scene.create', code='-32602')} "
                 f"bad, {value(after, 'repose_requests_total', method='scene.create', code='ok')} ok")
        if value(after, "repose_request_errors_total", code="-32602") != 3:
            fail("the -32602 errors are not counted by code")
        if value(after, "repose_scenes") != 1 or value(after, "repose_shapes") != 2:
            fail(f"scenes {value(after, 'repose_scenes')} shapes {value(after, 'repose_shapes')}")
        if value(after, "repose_request_errors_total", code="-32601") != 1:
            fail("the -32601 error was not counted")
        if value(after, "repose_connections", transport="unix") != 1:
            fail("the unix connection is not counted")
        if value(after, "repose_journal_records") < 1:
            fail("the journal record of scene.create is not counted")
        # The histogram is cumulative and ends at its count.
        buckets = sorted((float(dict(k[1])["le"]), v) for k, v in after.items()
                         if k[0] == "repose_request_duration_seconds_bucket")
        counts = [v for _, v in buckets]
        if counts != sorted(counts) or buckets[-1][0] != float("inf") or \
                buckets[-1][1] != value(after, "repose_request_duration_seconds_count"):
            fail(f"histogram buckets {buckets}")
        if value(after, "repose_request_duration_seconds_count") < 5:
            fail("too few latency samples (one line in 8 is sampled)")
        # Another site's name as Host (DNS rebinding): 403; a GET with a
        # body is answered whole.
        if get(d, "/metrics", {"Host": "evil.example"})[0] != 403 or \
                get(d, "/healthz", {"Host": f"localhost:{d.port}"})[0] != 200:
            fail("the Host rule")
        s = socket.create_connection(("127.0.0.1", d.port), 5)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
                  b"Connection: close\r\n\r\nhello")
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        s.close()
        if not got.startswith(b"HTTP/1.1 200") or not got.endswith(b'{"ready":true}\n'):
            fail(f"GET with a body: {got!r}")
        # 404, 405, HEAD.
        if get(d, "/nope")[0] != 404:
            fail("404")
        status, hdrs, body = get(d, "/metrics", method="POST")
        if status != 405 or hdrs.get("allow") != "GET, HEAD" or not body.startswith(b"405"):
            fail(f"POST: {status} {hdrs} {body!r}")
        # The viewer's page and its files; HEAD of the page.
        for path, kind in (("/", "text/html"), ("/viewer.js", "text/javascript"),
                           ("/three.module.js", "text/javascript"),
                           ("/three.core.js", "text/javascript"),
                           ("/three-LICENSE.txt", "text/plain")):
            status, hdrs, body = get(d, path)
            if status != 200 or not hdrs.get("content-type", "").startswith(kind) or \
                    int(hdrs.get("content-length", -1)) != len(body) or not body or \
                    "content-encoding" in hdrs or hdrs.get("vary") != "Accept-Encoding":
                fail(f"GET {path}: {status} {hdrs}")
            # Compressed for a client that takes gzip, the same bytes once
            # inflated; not for one that refuses it (q=0).
            for accept, zipped in (("gzip, deflate, br", True), ("*", True),
                                   ("GZIP;q=0.5", True), ("gzip;q=0", False),
                                   ("gzip;q=0.000, *", False), ("br", False),
                                   ("identity", False)):
                st, zh, zbody = get(d, path, {"Accept-Encoding": accept})
                if st != 200 or int(zh.get("content-length", -1)) != len(zbody) or \
                        zh.get("vary") != "Accept-Encoding" or \
                        (zh.get("content-encoding") == "gzip") != zipped or \
                        (gzip.decompress(zbody) if zipped else zbody) != body:
                    fail(f"GET {path} with Accept-Encoding {accept!r}: {st} {zh}")
                if zipped and len(zbody) >= len(body):
                    fail(f"GET {path}: gzip is no smaller ({len(zbody)} of {len(body)} bytes)")
                if zipped:
                    zipped_len = len(zbody)
            st, zh, zbody = get(d, path, {"Accept-Encoding": "gzip"}, method="HEAD")
            if st != 200 or zbody or zh.get("content-encoding") != "gzip" or \
                    int(zh.get("content-length", -1)) != zipped_len:
                fail(f"HEAD {path} with gzip: {st} {zh}")
        if b"three.js authors" not in get(d, "/three-LICENSE.txt")[2]:
            fail("the three.js licence")
        status, hdrs, body = get(d, "/", method="HEAD")
        if status != 200 or body or int(hdrs.get("content-length", 0)) < 1000:
            fail(f"HEAD /: {status} {hdrs} {body!r}")
        status, hdrs, body = get(d, "/metrics", method="HEAD")
        if status != 200 or body != b"" or int(hdrs.get("content-length", 0)) == 0:
            fail(f"HEAD /metrics: {status} {hdrs} {body!r}")
        # Malformed HTTP, and a client that sends half a request: the
        # socket keeps answering.
        for junk in (b"\x00\x01\x02garbage\r\n\r\n", b"GET /metrics HTTP/9.9\r\n\r\n",
                     b"GET " + b"/" * 10000 + b" HTTP/1.1\r\n\r\n",
                     b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 2000 + b"\r\n"):
            s = socket.create_connection(("127.0.0.1", d.port), 5)
            s.sendall(junk)
            s.settimeout(5)
            try:
                s.recv(4096)
            except (socket.timeout, ConnectionResetError):
                pass
            s.close()
            if d.call("ping").get("result") != {"pong": True}:
                fail(f"ping after {junk[:20]!r}")
        # One answer a connection, then the close ("Connection: close"):
        # requests pipelined behind it are not read.  With keep-alive, a
        # request with a body (or a POST) pipelined behind a GET spun the
        # event loop for good inside libwebsockets (fuzz_http's finding).
        h = "Host: 127.0.0.1\r\n"
        for name, data in (
                ("a GET with a body", f"GET /healthz HTTP/1.1\r\n{h}\r\n"
                 f"GET /nope HTTP/1.1\r\n{h}Content-Length: 1\r\n\r\nh"),
                ("a POST", f"GET /healthz HTTP/1.1\r\n{h}\r\n"
                 f"POST /metrics HTTP/1.1\r\n{h}Content-Length: 5\r\n\r\nhello"),
                ("three GETs", f"GET /healthz HTTP/1.1\r\n{h}\r\n" * 3),
                ("a body before a GET", f"GET /healthz HTTP/1.1\r\n{h}Content-Length: 2\r\n\r\n"
                 f"hiGET /healthz HTTP/1.1\r\n{h}\r\n")):
            s = socket.create_connection(("127.0.0.1", d.port), 5)
            s.sendall(data.encode())
            got, why = read_to_close(s)
            if why:
                fail(f"pipelined {name}: the connection was not closed ({why}): {got[:200]!r}")
            s.close()
            if d.call("ping").get("result") != {"pong": True}:
                fail(f"ping after pipelined {name}")
            if got.count(b"HTTP/1.1 ") != 1 or b"connection: close" not in got.lower() or \
                    b'{"ready":true}' not in got:
                fail(f"pipelined {name}: not one answer, then the close: {got[:300]!r}")
        # CONNECT: lws hands it over as a raw socket; 405 and the close
        # (it was held open for good: 128 of them shut the port out).
        connects = []
        for _ in range(130):
            s = socket.create_connection(("127.0.0.1", d.port), 5)
            s.sendall(b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
            connects.append(s)
        for s in connects:
            got, why = read_to_close(s)
            if why == "timeout":
                fail(f"a CONNECT was held open: {got!r}")
            if got and not got.startswith(b"HTTP/1.1 405 ") or b"Allow: GET, HEAD" not in got \
                    and got:
                fail(f"CONNECT: {got!r}")
            s.close()
        if get(d, "/healthz")[0] != 200:
            fail("/healthz after 130 CONNECTs")
        half = socket.create_connection(("127.0.0.1", d.port), 5)
        half.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        if d.call("ping").get("result") != {"pong": True}:
            fail("ping while an HTTP request is half sent")
        mid, _ = scrape(d)
        if value(mid, "repose_connections", transport="http") < 2:
            fail("the half-sent request's connection is not counted")
        half.close()
        # At most 128 HTTP connections: more are closed at once, and the
        # socket and a later HTTP client are still served.
        many = [socket.create_connection(("127.0.0.1", d.port), 5) for _ in range(140)]
        time.sleep(0.5)
        shut = 0
        for s in many:
            s.settimeout(0.05)
            try:
                shut += s.recv(16) == b""
            except socket.timeout:
                pass
            except ConnectionResetError:
                shut += 1
        if shut < 12:
            fail(f"{shut} of 140 HTTP connections closed at once (the cap is 128)")
        if d.call("ping").get("result") != {"pong": True}:
            fail("ping with 140 HTTP connections open")
        for s in many:
            s.close()
        end = time.time() + 10
        while time.time() < end and get(d, "/healthz")[0] != 200:
            time.sleep(0.05)
        if get(d, "/healthz")[0] != 200:
            fail("/healthz after the connections over the cap closed")
        refused = value(mid, "repose_http_refused_total")
        d.stop()

    # The token: /metrics needs it, /healthz and the viewer's page do not.
    with tempfile.TemporaryDirectory() as tmp:
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write("s3cret-token\n")
        os.chmod(tok, 0o600)
        d = Daemon(reposed, tmp, "--token-file", tok)
        if get(d, "/healthz")[0] != 200 or get(d, "/")[0] != 200:
            fail("/healthz and / with a token file need no token")
        for h in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"},
                  {"Authorization": "Bearer s3cret-tokenX"}):
            status, hdrs, _ = get(d, "/metrics", h)
            if status != 401 or "bearer" not in hdrs.get("www-authenticate", "").lower():
                fail(f"/metrics with {h}: {status}")
        samples, _ = scrape(d, {"Authorization": "Bearer s3cret-token"})
        if value(samples, "repose_http_refused_total") != 4:
            fail(f"refused {value(samples, 'repose_http_refused_total')}")
        d.stop()

    # Only loopback unless --insecure-http.
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "s")
        for spec, want in (("0.0.0.0:0", b"--insecure-http"), ("nope", b"HOST:PORT"),
                           ("[::]:0", b"--insecure-http")):
            r = subprocess.run([*http_daemon.WRAP, reposed, "--unix", sock, "--tcp", "none", "--http", spec],
                               stderr=subprocess.PIPE, timeout=120)
            if r.returncode != 1 or want not in r.stderr or os.path.exists(sock):
                fail(f"--http {spec}: {r.returncode} {r.stderr!r}")
        p = subprocess.Popen([*http_daemon.WRAP, reposed, "--unix", sock, "--tcp", "none", "--http",
                              "0.0.0.0:0", "--insecure-http"], stderr=subprocess.PIPE)
        line = b""
        end = time.time() + 120
        while b"listening on http" not in line and time.time() < end:
            line = p.stderr.readline()
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=120)
        if b"listening on http 0.0.0.0:" not in line or p.returncode != 0:
            fail(f"--http 0.0.0.0:0 --insecure-http: {p.returncode} {line!r}")
    print(f"{NAME}: /metrics parsed ({len(after)} samples), counters rose with 40 pings, "
          f"token and loopback rules hold, {refused} refusals counted")


if __name__ == "__main__":
    http_daemon.NAME = NAME
    run(main)
