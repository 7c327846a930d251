# SPDX-License-Identifier: MIT
"""The connection to reposed: newline-delimited JSON-RPC 2.0 over a Unix
socket or TCP (proto/PROTOCOL.md), with pipelining and watches."""

from __future__ import annotations

import collections
import json
import os
import select
import socket
from typing import (Any, Deque, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple,
                    Union)

from .errors import ConnectionLost, ProtocolError, ReposeError, error_from_reply
from .meshes import PathLike, read_urdf_meshes
from .methods import Methods
from .wire import encode_request

DEFAULT_UNIX = "/tmp/reposed.sock"
DEFAULT_PORT = 7411


class Notification(dict):
    """A server notification: ``method`` (``"scene.changed"``,
    ``"scene.deleted"``, ``"scene.resync"``) and ``params`` (``watch``,
    ``scene``, ``revision``, and for scene.changed ``put`` and ``removed``,
    and when objects, robots or clouds changed ``objects`` ({name:
    {"pose", "shapes"}} a put or replace wrote), ``robots`` ({name:
    {"model", "joints", "base"}} a put or replace wrote), ``clouds``
    ({name: {"radius", "count"}} a put or replace wrote: not the points,
    which scene_get gives) or ``moved`` (what a scene.move gave: {name:
    pose} for an object, {name: {"joints", "base"}} for a robot))."""

    @property
    def method(self) -> str:
        return self["method"]

    @property
    def params(self) -> Dict[str, Any]:
        return self.get("params") or {}


def read_token_file(path: str) -> str:
    """The token in a token file: its first line.  The rules are the
    daemon's for its own --token-file: a file readable by everyone is
    refused (ValueError), and so is an empty one; OSError when it cannot be
    read."""
    with open(path, "rb") as f:
        mode = os.fstat(f.fileno()).st_mode
        if mode & 0o004:
            raise ValueError(f"token file {path} is world-readable (mode {mode & 0o7777:04o}); "
                             f"refusing to use it (chmod o-r {path})")
        data = f.read(4097)
    line = data.split(b"\n", 1)[0].rstrip(b"\r")
    if not line or (len(data) > 4096 and b"\n" not in data[:4097]) or b"\0" in line:
        raise ValueError(f"token file {path}: " + ("empty" if not line else
                                                   "not a token (too long or binary)"))
    return line.decode("utf-8", "surrogateescape")


class _Conn:
    """One socket with a line buffer."""

    def __init__(self, unix: Optional[str], host: Optional[str], port: int,
                 timeout: Optional[float]) -> None:
        self.timeout = timeout
        self.buf = bytearray()
        try:
            if host is not None:
                self.where = f"{host}:{port}"
                self.sock = socket.create_connection((host, port), timeout=timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            else:
                path = unix or DEFAULT_UNIX
                self.where = f"unix:{path}"
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
        except OSError as e:
            raise ConnectionLost(f"connect to {self.where}: {e.strerror or e}") from None
        self.sock.settimeout(timeout)

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ConnectionLost(f"send to {self.where}: {e.strerror or e}") from None

    def send_reading(self, data: bytes) -> None:
        """Sends data while keeping what arrives meanwhile: the daemon stops
        reading a connection whose replies pile up unread, so a long
        pipeline sent without reading would never finish."""
        view = memoryview(data)
        self.sock.setblocking(False)
        try:
            while view:
                r, w, _ = select.select([self.sock], [self.sock], [], self.timeout)
                if not r and not w:
                    raise ConnectionLost(f"{self.where} took nothing for {self.timeout} s")
                if r:
                    try:
                        chunk = self.sock.recv(1 << 16)
                    except BlockingIOError:
                        chunk = None
                    except OSError as e:
                        raise ConnectionLost(f"receive from {self.where}: {e.strerror or e}") from None
                    if chunk == b"":
                        raise ConnectionLost(f"{self.where} closed the connection")
                    if chunk:
                        self.buf += chunk
                if w:
                    try:
                        view = view[self.sock.send(view[:1 << 16]):]
                    except BlockingIOError:
                        pass
                    except OSError as e:
                        raise ConnectionLost(f"send to {self.where}: {e.strerror or e}") from None
        finally:
            self.sock.settimeout(self.timeout)

    def line(self, timeout: Any = "default") -> Optional[bytes]:
        """The next line (without its newline); None when `timeout` (seconds)
        passed first.  `timeout` "default" is the connection's."""
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line = bytes(self.buf[:nl])
                del self.buf[:nl + 1]
                return line
            if timeout != "default":
                self.sock.settimeout(timeout)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                if timeout != "default":
                    return None
                raise ConnectionLost(f"no reply from {self.where} within {self.timeout} s") from None
            except OSError as e:
                raise ConnectionLost(f"receive from {self.where}: {e.strerror or e}") from None
            finally:
                if timeout != "default":
                    self.sock.settimeout(self.timeout)
            if not chunk:
                raise ConnectionLost(f"{self.where} closed the connection")
            self.buf += chunk

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _decode(line: bytes) -> Dict[str, Any]:
    try:
        msg = json.loads(line)
    except ValueError:
        raise ProtocolError(f"reply is not JSON: {line[:200]!r}") from None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        raise ProtocolError(f"reply is not a JSON-RPC 2.0 object: {line[:200]!r}")
    return msg


class Pending:
    """The reply to a pipelined call, available once the pipeline ends."""

    def __init__(self, method: str) -> None:
        self.method = method
        self._done = False
        self._result: Any = None
        self._error: Optional[ReposeError] = None

    def result(self) -> Any:
        """The decoded ``result``; raises the call's error."""
        if not self._done:
            raise RuntimeError("the pipeline has not been sent yet (leave its with-block first)")
        if self._error is not None:
            raise self._error
        return self._result

    @property
    def error(self) -> Optional[ReposeError]:
        """The call's error, or None."""
        return self._error


class Pipeline(Methods):
    """Calls queued and sent in one write when the with-block ends; replies are
    read in order.  Each call returns a :class:`Pending`.  With
    ``raise_errors`` (the default) the first failed call's error is raised
    at the end of the block, after every reply has been read."""

    def __init__(self, client: "Client", raise_errors: bool = True) -> None:
        self._client = client
        self._raise = raise_errors
        self._calls: List[Tuple[bytes, int, Pending]] = []

    def _call(self, method: str, params: Optional[Dict[str, Any]]) -> Pending:
        rid = self._client._next_id()
        p = Pending(method)
        self._calls.append((encode_request(rid, method, params), rid, p))
        return p

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None or not self._calls:
            return
        self.send()

    def send(self) -> List[Pending]:
        """Sends the queued calls and reads their replies (the with-block does it)."""
        calls, self._calls = self._calls, []
        self._client._conn.send_reading(b"".join(c[0] for c in calls))
        first: Optional[ReposeError] = None
        for _, rid, p in calls:
            msg = self._client._reply(rid)
            p._done = True
            if "error" in msg:
                p._error = error_from_reply(msg["error"])
                first = first or p._error
            else:
                p._result = msg.get("result")
        if first is not None and self._raise:
            raise first
        return [c[2] for c in calls]


class Watch:
    """Notifications of one scene, on a connection of their own: iterate to
    get each :class:`Notification` in revision order.  Iteration ends after
    ``scene.deleted``; ``close()`` (or the with-block) ends the watch.
    ``revision`` is the scene's revision when the watch started."""

    def __init__(self, client: "Client", scene: str, since: Optional[int],
                 timeout: Optional[float]) -> None:
        self._client = client.clone(timeout=None)
        try:
            r = self._client.scene_watch(scene, since)
        except BaseException:
            self._client.close()
            raise
        self.scene: str = r["scene"]
        self.revision: int = r["revision"]
        self.id: int = r["watch"]
        self._timeout = timeout
        self._over = False

    def __iter__(self) -> Iterator[Notification]:
        return self

    def __next__(self) -> Notification:
        if self._over:
            raise StopIteration
        n = self._client.next_notification(self._timeout)
        if n is None:
            raise TimeoutError(f"no notification within {self._timeout} s")
        if n.method == "scene.deleted" and n.params.get("watch") == self.id:
            self._over = True
        return n

    def close(self) -> None:
        self._client.close()
        self._over = True

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Client(Methods):
    """A connection to reposed.

    ``Client()`` connects to the Unix socket $REPOSE_SOCKET, else
    /tmp/reposed.sock;
    ``Client(unix=PATH)`` to another; ``Client(host="127.0.0.1", port=7411,
    token="...")`` over TCP (the token, when given, is sent with ``auth``
    first), or ``token_file="..."`` for the token in a file (as
    ``repose-cli --token-file``; the file must not be world-readable).  Over
    TCP with neither, the file $REPOSE_TOKEN_FILE names is used when set.
    ``timeout`` (seconds, None: wait for ever) bounds each reply.
    Use it as a context manager, or call :meth:`close`; one thread at a
    time (give each thread its own Client).  Every protocol
    method is a method here (``scene.put`` is :meth:`scene_put`) that returns
    the decoded ``result`` or raises a :class:`ReposeError` subclass.
    """

    def __init__(self, unix: Optional[str] = None, *, host: Optional[str] = None,
                 port: int = DEFAULT_PORT, token: Optional[str] = None,
                 token_file: Optional[str] = None,
                 timeout: Optional[float] = 30.0) -> None:
        if unix is not None and host is not None:
            raise ValueError("give unix or host, not both")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if unix is None and host is None:
            unix = os.environ.get("REPOSE_SOCKET") or DEFAULT_UNIX
        if token is None and token_file is None and host is not None:
            # Unix sockets never need auth (proto/PROTOCOL.md, auth).
            token_file = os.environ.get("REPOSE_TOKEN_FILE") or None
        if token_file is not None:
            token = read_token_file(token_file)
        self._args = dict(unix=unix, host=host, port=port, token=token)
        self._conn = _Conn(unix, host, port, timeout)
        self._ids = 0
        self._notes: Deque[Notification] = collections.deque()
        if token is not None:
            try:
                self.auth(token)
            except BaseException:
                self._conn.close()
                raise

    def clone(self, timeout: Optional[float] = 30.0) -> "Client":
        """A new connection to the same daemon (same address and token)."""
        return Client(self._args["unix"], host=self._args["host"], port=self._args["port"],
                      token=self._args["token"], timeout=timeout)

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _reply(self, rid: int) -> Dict[str, Any]:
        """Reads up to the reply with id `rid`, queueing notifications met on the way."""
        while True:
            line = self._conn.line()
            assert line is not None
            msg = _decode(line)
            if "id" not in msg:
                if isinstance(msg.get("method"), str):
                    self._notes.append(Notification(msg))
                    continue
                raise ProtocolError(f"line with neither id nor method: {line[:200]!r}")
            if msg["id"] != rid:
                if msg["id"] is None and "error" in msg:
                    raise error_from_reply(msg["error"])
                raise ProtocolError(f"reply to id {msg['id']!r} while waiting for {rid}")
            if ("result" in msg) == ("error" in msg):
                raise ProtocolError(f"reply {rid} needs exactly one of result and error")
            return msg

    def _call(self, method: str, params: Optional[Dict[str, Any]]) -> Any:
        rid = self._next_id()
        self._conn.send(encode_request(rid, method, params))
        msg = self._reply(rid)
        if "error" in msg:
            raise error_from_reply(msg["error"])
        return msg["result"]

    def pipeline(self, raise_errors: bool = True) -> Pipeline:
        """``with client.pipeline() as p: a = p.ping(); b = p.scene_get("lab")``:
        the calls go in one write when the block ends; ``a.result()`` then."""
        return Pipeline(self, raise_errors)

    def watch(self, scene: str, since: Optional[int] = None,
              timeout: Optional[float] = None) -> Watch:
        """Notifications of ``scene`` on a new connection, as an iterator
        (:class:`Watch`); ``since`` replays the changes after that revision
        (or sends ``scene.resync`` when the daemon no longer has them).
        ``timeout`` bounds the wait for each notification (None: for ever)."""
        return Watch(self, scene, since, timeout)

    def next_notification(self, timeout: Optional[float] = None) -> Optional[Notification]:
        """The next notification on this connection (after :meth:`scene_watch`):
        a queued one, else the next to arrive within ``timeout`` seconds
        (None: wait for ever); None when none came."""
        if self._notes:
            return self._notes.popleft()
        while True:
            line = self._conn.line(timeout)
            if line is None:
                return None
            msg = _decode(line)
            if "id" not in msg and isinstance(msg.get("method"), str):
                return Notification(msg)
            raise ProtocolError(f"a reply with no request outstanding: {line[:200]!r}")

    def load_urdf(self, model: str, urdf_path: PathLike, srdf_path: Optional[PathLike] = None,
                  *, package_path: Union[PathLike, Iterable[PathLike], None] = (),
                  spherize: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
        """Reads a URDF file (and an SRDF file) and sends them with ``model.put``;
        ``options`` are model.put's other params (``allow_adjacent``, ...).

        The mesh files the URDF's ``<collision>`` elements name (``<mesh
        filename>``; ``<visual>`` meshes are not sent) are read here and sent
        in ``meshes``, base64, under their filenames as written:
        ``package://NAME/rest`` is looked up in ``package_path`` (a directory
        or a list of them), then in $ROS_PACKAGE_PATH's entries, as DIR/NAME/rest
        or, for a DIR named NAME, DIR/rest; ``file:///abs`` and absolute paths
        are themselves; a relative path is relative to the URDF's folder.  A
        file not found raises :class:`repose.MeshNotFound` (a
        FileNotFoundError naming the URI, the link and the directories
        tried) before anything is sent.  ``spherize`` ({``max_spheres``,
        ``max_overshoot``}) is the daemon's sphere budget per link; the
        daemon reports its covers in model_get's ``mesh_covers``.  A
        ``meshes`` option given here is sent as given, its files not read."""
        with open(urdf_path, encoding="utf-8") as f:
            urdf = f.read()
        srdf = None
        if srdf_path is not None:
            with open(srdf_path, encoding="utf-8") as f:
                srdf = f.read()
        given = options.pop("meshes", None)
        meshes = read_urdf_meshes(urdf_path, package_path, urdf=urdf,
                                  skip=given.keys() if isinstance(given, Mapping) else ())
        if isinstance(given, Mapping):
            meshes.update(given)
        elif given is not None:
            meshes = given  # not a mapping: the daemon says what is wrong with it
        return self.model_put(model, urdf=urdf, srdf=srdf, meshes=meshes or None,
                              spherize=spherize, **options)

    def close(self) -> None:
        """Closes the connection (its watches end with it)."""
        self._conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
