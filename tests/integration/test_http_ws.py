# SPDX-License-Identifier: MIT
"""reposed --http's WebSocket at /ws: the daemon's JSON-RPC, one message a
request, with the limits, auth and pricing of a TCP client.

  - requests and replies, a fragmented message, line breaks inside one;
  - scene.watch on the WebSocket sees a change made over the Unix socket;
  - with a token file: refused until `auth`, then served;
  - pricing: a request over --max-request-work gets -32004 as on a socket;
  - a reply of several MiB arrives whole; a message over
    --max-request-bytes gets the daemon's -32004, then the close; a binary
    one closes with 1003; an upgrade elsewhere than /ws, from another
    origin, or with another site's Host (DNS rebinding) gets 403, as does
    one lws does not know (and the daemon stays up); "WebSocket" in any
    case is accepted; before
    auth, a huge message is cut off by the daemon's pre-auth line limit;
  - a client that asks for large replies and never reads is cut off by
    --write-kill-bytes while a socket client keeps being answered; one
    that then sends 1-byte fragments costs the daemon their bytes, not
    a write each;
  - the daemon stops cleanly with WebSockets open; stopping, it sends a
    WebSocket the replies to what it had read, whole, before the close,
    refuses new connections, and /healthz sent on a connection opened
    before says it stops.

Usage: test_http_ws.py REPOSED.  REPOSE_DAEMON_WRAPPER (e.g. a valgrind
command line) runs every daemon under it."""
import http.client
import json
import os
import signal
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ws_client  # noqa: E402
from http_daemon import Daemon, fail, read_to_close, run  # noqa: E402
import http_daemon  # noqa: E402

NAME = "test_http_ws"


def ws(d, **kw):
    w, status, _ = ws_client.handshake(d.port, **kw)
    if w is None:
        fail(f"upgrade refused: {status}")
    return w


def rss_kb(d):
    """The daemon's resident size in KiB (0 when it cannot be read)."""
    try:
        with open(f"/proc/{d.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def http_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    answer = (r.status, r.read())
    c.close()
    return answer


def rpc(w, method, params=None, rid=1):
    req = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        req["params"] = params
    w.send(json.dumps(req))
    while True:
        msg = json.loads(w.recv())
        if msg.get("id") == rid:
            return msg


def closes_with(w, code, what):
    try:
        for _ in range(100):
            w.recv()
    except ws_client.Closed as e:
        if e.code not in (code if isinstance(code, tuple) else (code,)):
            fail(f"{what}: closed with {e.code}, want {code}")
        return
    fail(f"{what}: not closed")


def shapes(n):
    return {f"s{i}": {"sphere": {"center": [i * 0.1, 0, 0], "radius": 0.04}} for i in range(n)}



def main():
    reposed = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(reposed, tmp, "--max-request-bytes", "100000", "--max-request-work", "20000",
                   "--write-kill-bytes", "2000000", "--write-pause-bytes", "200000")
        w = ws(d)
        if rpc(w, "ping").get("result") != {"pong": True}:
            fail("ping over /ws")
        w.send_fragments(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}), 7)
        if json.loads(w.recv()) != {"jsonrpc": "2.0", "id": 2, "result": {"pong": True}}:
            fail("a fragmented message")
        w.send('{"jsonrpc":"2.0",\n"id":3,\r\n"method":"ping"}')
        if json.loads(w.recv()).get("id") != 3:
            fail("line breaks inside a message")
        if rpc(w, "no.such", rid=4)["error"]["code"] != -32601:
            fail("unknown method over /ws")
        # /metrics counts a WebSocket once, as ws (the scrape is the one http).
        w2 = ws(d)
        if rpc(w2, "ping").get("result") != {"pong": True}:
            fail("a second WebSocket")
        hc = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
        hc.request("GET", "/metrics")
        conns = {line.split(b'"')[1]: int(line.split()[-1]) for line in hc.getresponse().read().splitlines()
                 if line.startswith(b"repose_connections{")}
        hc.close()
        if conns != {b"tcp": 0, b"unix": 1, b"http": 1, b"ws": 2}:
            fail(f"repose_connections with two WebSockets: {conns}")
        w2.close()
        # Live: a watch on the WebSocket, a change over the socket.
        if "result" not in d.call("scene.create", {"scene": "cell", "shapes": shapes(3)}):
            fail("scene.create")
        if "result" not in rpc(w, "scene.watch", {"scene": "cell"}, rid=5):
            fail("scene.watch over /ws")
        d.call("scene.put", {"scene": "cell", "shapes": {
            "new": {"sphere": {"center": [1, 1, 1], "radius": 0.5}}}})
        note = json.loads(w.recv())
        if note.get("method") != "scene.changed" or note["params"]["scene"] != "cell":
            fail(f"no scene.changed on /ws: {note}")
        # Pricing, as on a socket: 600 shapes are over --max-request-work.
        q = {"scene": "big", "shapes": shapes(600)}
        on_ws = rpc(w, "scene.create", q, rid=6)
        on_sock = d.call("scene.create", q)
        if on_ws.get("error", {}).get("code") != -32004 or \
                on_ws["error"] != on_sock.get("error"):
            fail(f"pricing differs: ws {str(on_ws)[:300]} socket {str(on_sock)[:300]}")
        # A reply of several MiB (the bridge holds 256 KiB: it goes out as
        # it comes, in fragments).
        for k in range(5):
            put = {f"big{k}-{i}": v for i, v in shapes(300).items()}
            d.call("scene.put", {"scene": "cell", "shapes": put})
        cell = d.call("scene.get", {"scene": "cell"})
        big = rpc(w, "scene.get", {"scene": "cell"}, rid=70)
        if big != {**cell, "id": 70} or len(json.dumps(big)) < 100000:
            fail(f"a large reply over /ws differs from the socket's ({len(json.dumps(big))} bytes)")
        # Too large: the daemon's own line limit answers, then closes.
        w.send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping",
                           "params": {"pad": "x" * 120000}}))
        over = json.loads(w.recv())
        if over.get("error", {}).get("code") != -32004:
            fail(f"a message over --max-request-bytes: {str(over)[:200]}")
        closes_with(w, 1000, "after a message over --max-request-bytes")
        w = ws(d)
        w.frame(2, b'{"jsonrpc":"2.0","id":8,"method":"ping"}')
        closes_with(w, 1003, "a binary message")
        for kw in ({"path": "/wsx"}, {"path": "/metrics"},
                   {"headers": {"Origin": "http://evil.example"}},
                   # DNS rebinding: another site's name, resolved to us
                   {"headers": {"Host": f"evil.example:{d.port}",
                                "Origin": f"http://evil.example:{d.port}"}}):
            sock, status, _ = ws_client.handshake(d.port, **kw)
            if sock is not None or (" 403 " not in status + " " and status != "reset"):
                fail(f"upgrade {kw}: {status}")
        # An upgrade lws does not know: it answers 403 itself, then (lws
        # 4.1) still asks the daemon with headers it has released; the
        # daemon reads them again and closes (fuzz_http's finding; under
        # ASan the old read aborted the daemon).  One with a request
        # pipelined behind it, as the fuzzer sent.
        for extra in (b"", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"):
            s = socket.create_connection(("127.0.0.1", d.port), 10)
            s.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket---x\r\n"
                      b"Connection: Upgrade\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n"
                      b"Sec-WebSocket-Version: 13\r\n\r\n" + extra)
            got, why = read_to_close(s, 10)
            s.close()
            if why == "timeout" or got and not (got.startswith(b"HTTP/1.") and got[8:13] == b" 403 "):
                fail(f"an unknown upgrade got {got[:100]!r}")
            if d.call("ping").get("result") != {"pong": True}:
                fail("the daemon after an unknown upgrade")
        # The Upgrade value is case-insensitive (RFC 6455 4.2.1).
        w = ws(d, upgrade="WebSocket")
        if rpc(w, "ping").get("result") != {"pong": True}:
            fail("an upgrade spelled WebSocket")
        w.close()
        w = ws(d, headers={"Origin": f"http://127.0.0.1:{d.port}"})
        if rpc(w, "ping").get("result") != {"pong": True}:
            fail("same-origin WebSocket")
        # A client that asks for large replies and never reads: it is paused
        # (the daemon stops reading it, the bridge stops reading the daemon,
        # lws stops reading the client), memory stays bounded, and the
        # socket client is answered meanwhile.
        for k in range(5):  # (each put under the limits above)
            put = {f"{k}-{i}": v for i, v in shapes(300).items()}
            r = d.call("scene.put", {"scene": "cell", "shapes": put})
            if "result" not in r:
                fail(f"scene.put for the big replies: {str(r)[:300]}")
        hog = ws(d)
        hog.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hog.s.settimeout(2)
        sent = 0
        for i in range(2000):
            try:
                hog.send(json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "scene.get",
                                     "params": {"scene": "cell"}}))
                sent += 1
            except OSError:
                break  # its sends block: nothing reads them any more
            if i % 50 == 0 and d.call("ping").get("result") != {"pong": True}:
                fail("the socket client starved")
        time.sleep(1)
        s = d.call("stats")["result"]
        answered = s["requests"]["by_method"].get("scene.get", 0)
        if answered >= sent or answered > 200:
            fail(f"a client that never reads got {answered} of {sent} scene.get answered")
        if s["memory"]["output_bytes"] > 2000000:
            fail(f"unsent output not bounded: {s['memory']}")
        if rpc(w, "ping", rid=9).get("result") != {"pong": True}:
            fail("the other WebSocket while one is paused")
        hog.s.close()
        end = time.time() + 30
        while time.time() < end and d.call("stats")["result"]["connections"]["tcp"] != 1:
            time.sleep(0.05)
        if d.call("stats")["result"]["connections"]["tcp"] != 1:
            fail("the paused WebSocket's connection did not go when it closed")
        # Paused the same way, a client sends a message in 1-byte fragments:
        # they wait for the daemon at their own size (they cost ~200 bytes
        # apiece, a write each, and 256 KiB of them were let in: 50 MB).
        frag = ws(d)
        frag.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for i in range(300):  # (80 bytes each: well under the bridge's 256 KiB)
            frag.send(json.dumps({"jsonrpc": "2.0", "id": 500 + i, "method": "scene.get",
                                  "params": {"scene": "cell"}}))
        time.sleep(1)
        before = rss_kb(d)
        frag.frame(1, b"[", fin=False)
        burst = bytes([0x00, 0x81, 0, 0, 0, 0, 0x20]) * 10000  # continuations of " "
        frag.s.settimeout(2)
        sent = 0
        try:
            while sent < 600000:
                frag.s.sendall(burst)
                sent += 10000
        except OSError:
            pass  # its sends block: the daemon stopped reading them
        time.sleep(0.5)
        grown = rss_kb(d) - before
        if before and not http_daemon.WRAP and grown > 16000:
            fail(f"{sent} fragments of 1 byte grew the daemon by {grown} KiB")
        if d.call("ping").get("result") != {"pong": True}:
            fail("ping after the fragments")
        frag.s.close()
        d.stop()  # with a WebSocket still open

    # Stopping: a WebSocket gets the replies to what the daemon had read,
    # whole, then the close; new connections are refused meanwhile, and a
    # kept-alive HTTP connection's /healthz says the daemon is stopping.
    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(reposed, tmp)
        w = ws(d)
        if http_get(d.port, "/healthz") != (200, b'{"ready":true}\n'):
            fail("/healthz before the stop")
        # A connection opened now, its request sent while the daemon stops.
        early = socket.create_connection(("127.0.0.1", d.port), 30)
        time.sleep(0.2)  # (accepted before the stop)
        batch = [{"jsonrpc": "2.0", "id": k, "method": "tessellation",
                  "params": {"segments": 128, "rings": 64}} for k in range(8)]
        w.send(json.dumps(batch))  # several MiB of replies, unread for now
        end = time.time() + 60
        while d.call("stats")["result"]["requests"]["by_method"].get("tessellation", 0) < 8:
            if time.time() > end:
                fail("the batch was never read")
            time.sleep(0.01)
        d.p.send_signal(signal.SIGTERM)
        while "shutting down" not in d.log():
            if time.time() > end:
                fail("no 'shutting down' in the log")
            time.sleep(0.01)
        got = b""
        try:
            early.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{d.port}\r\n\r\n".encode())
            while chunk := early.recv(4096):
                got += chunk
        except OSError:
            pass  # (the daemon may have closed it already)
        early.close()
        if got and (not got.startswith(b"HTTP/1.1 503 ") or
                    not got.endswith(b'{"ready":false,"reason":"shutting down"}\n')):
            fail(f"/healthz while stopping: {got!r}")
        try:
            late, _, _ = ws_client.handshake(d.port)
        except OSError:
            late = None  # refused or closed: either way, not opened
        if late is not None:
            fail("a WebSocket opened while the daemon stops")
        try:
            got = json.loads(w.recv())
        except (ws_client.Closed, OSError) as e:
            fail(f"the WebSocket closed before the replies: {e!r}")
        if sorted(r["id"] for r in got) != list(range(8)) or \
                any(len(r["result"]["round"]["directions"]) != 128 * 2 * 65 for r in got):
            fail("the batch's replies did not arrive whole")
        closes_with(w, 1000, "after the last reply, stopping")
        if d.p.wait(timeout=120) != 0:
            fail(f"reposed exited with {d.p.returncode}: {d.log()}")
        d.u.close()

    with tempfile.TemporaryDirectory() as tmp:
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write("s3cret\n")
        os.chmod(tok, 0o600)
        d = Daemon(reposed, tmp, "--token-file", tok)
        w = ws(d)
        # Before auth the daemon's small line limit applies to a message as
        # it arrives: a huge one closes the connection, unbuffered.
        big_w = ws(d)
        try:
            # (the daemon may cut it off while it is still being sent)
            big_w.frame(1, b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' +
                        b"x" * (2 << 20), fin=False)
            for _ in range(10):
                big_w.recv()
        except (ws_client.Closed, OSError):
            pass
        locked = rpc(w, "scene.list")
        if locked.get("error", {}).get("code") != -32005:
            fail(f"before auth: {locked}")
        if rpc(w, "auth", {"token": "wrong"}, rid=2).get("error", {}).get("code") != -32005:
            fail("a wrong token")
        if "result" not in rpc(w, "auth", {"token": "s3cret"}, rid=3):
            fail("auth over /ws")
        if "result" not in rpc(w, "scene.list", rid=4):
            fail("after auth")
        w.close()
        time.sleep(0.2)
        s = d.call("stats")["result"]
        if s["connections"]["tcp"] != 0:
            fail(f"the closed WebSocket's connection is still open: {s['connections']}")
        d.stop()
    print(f"{NAME}: JSON-RPC over /ws with the socket's limits, auth, pricing and watches")


if __name__ == "__main__":
    http_daemon.NAME = NAME
    run(main)
