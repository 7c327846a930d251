# SPDX-License-Identifier: MIT
"""A small WebSocket client (RFC 6455) in the standard library, for the
tests of reposed's /ws: the handshake, masked text, binary and fragmented
frames, and reading messages and close frames.  Written here so that the
tests need no extra package and can send frames a library would refuse to."""
import base64
import hashlib
import os
import socket
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Closed(Exception):
    """The server closed the WebSocket; code is its close code (or None)."""

    def __init__(self, code, reason=b""):
        super().__init__(f"closed {code} {reason!r}")
        self.code = code
        self.reason = reason


def handshake(port, path="/ws", headers=None, timeout=10, upgrade="websocket"):
    """Opens a WebSocket; returns (socket, status line, response headers).
    The socket is None when the server refused the upgrade (status "reset"
    when it closed the connection before its answer could be read)."""
    s = socket.create_connection(("127.0.0.1", port), timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    headers = dict(headers or {})
    host = headers.pop("Host", f"127.0.0.1:{port}")
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", f"Upgrade: {upgrade}",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    for k, v in headers.items():
        lines.append(f"{k}: {v}")
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            chunk = s.recv(4096)
        except ConnectionResetError:
            # A refusal can race its own answer: the server closed first.
            s.close()
            return None, "reset", {}
        if not chunk:
            break
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status, *hdr_lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for line in hdr_lines:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if " 101 " not in status + " ":
        s.close()
        return None, status, hdrs
    want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    if hdrs.get("sec-websocket-accept") != want:
        raise AssertionError(f"bad Sec-WebSocket-Accept {hdrs}")
    return WS(s, rest), status, hdrs


class WS:
    def __init__(self, sock, rest=b""):
        self.s = sock
        self.buf = rest

    def frame(self, opcode, payload, fin=True, mask=True):
        head = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        m = 0x80 if mask else 0
        if n < 126:
            head += bytes([m | n])
        elif n < 65536:
            head += bytes([m | 126]) + struct.pack(">H", n)
        else:
            head += bytes([m | 127]) + struct.pack(">Q", n)
        if mask:
            key = os.urandom(4)
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
            head += key
        self.s.sendall(head + payload)

    def send(self, text):
        self.frame(1, text.encode() if isinstance(text, str) else text)

    def send_fragments(self, text, pieces):
        data = text.encode()
        step = max(1, len(data) // pieces)
        parts = [data[i:i + step] for i in range(0, len(data), step)]
        for i, p in enumerate(parts):
            self.frame(1 if i == 0 else 0, p, fin=i == len(parts) - 1)

    def _need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise Closed(None)
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """The next whole message (text as str); Closed on a close frame."""
        message = b""
        while True:
            b0, b1 = self._need(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._need(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._need(8))[0]
            payload = self._need(n)
            op = b0 & 0x0F
            if op == 8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                raise Closed(code, payload[2:])
            if op == 9:  # ping: answer
                self.frame(10, payload)
                continue
            if op == 10:
                continue
            message += payload
            if b0 & 0x80:
                return message.decode("utf-8")

    def close(self):
        try:
            self.frame(8, struct.pack(">H", 1000))
        except OSError:
            pass
        self.s.close()
