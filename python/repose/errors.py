# SPDX-License-Identifier: MIT
"""Exceptions raised by :mod:`repose`.

Every error reply of the daemon becomes a :class:`ReposeError` subclass chosen
by its JSON-RPC code (proto/PROTOCOL.md, "Errors"); the exception carries the
code, the message, the ``data`` object and, for invalid params, the ``path``
of the offending field.  Failures of the connection itself are
:class:`ConnectionLost` (also an :class:`OSError`); a reply that is not what
the protocol promises is :class:`ProtocolError`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class ReposeError(Exception):
    """An error reply from reposed.

    Attributes: ``code`` (the JSON-RPC error code), ``message``, ``data``
    (the error's ``data`` object, or ``None``), ``path`` (``data.path``
    when the daemon named a field, e.g. ``"params.shapes.a.sphere.radius"``)
    and ``suggestion`` (for -32601, the method the daemon thinks was meant).
    """

    code: int = 0

    def __init__(self, code: int, message: str, data: Optional[Dict[str, Any]] = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        path = data.get("path") if isinstance(data, dict) else None
        self.path: Optional[str] = path if isinstance(path, str) else None
        suggestion = data.get("suggestion") if isinstance(data, dict) else None
        # -32601's nearest method name (proto/PROTOCOL.md, Errors), or None.
        self.suggestion: Optional[str] = suggestion if isinstance(suggestion, str) else None
        text = message
        if code:  # an error reply (the transport's own errors have no code)
            text += f" (code {code}" + (f", at {self.path})" if self.path else ")")
        if self.suggestion:
            text += f"; did you mean {self.suggestion!r}?"
        super().__init__(text)


class ParseError(ReposeError):
    """-32700: the request line was not JSON."""


class InvalidRequest(ReposeError):
    """-32600: not a valid JSON-RPC request."""


class MethodNotFound(ReposeError):
    """-32601: the daemon has no such method."""


class InvalidParams(ReposeError):
    """-32602: a parameter is missing or wrong; ``path`` names it."""


class InternalError(ReposeError):
    """-32603: the daemon ran out of memory for this request."""


class NotFound(ReposeError):
    """-32001: no such scene, shape, model, watch, object or robot
    (``data["kind"]``)."""


class AlreadyExists(ReposeError):
    """-32002: the scene exists already (``data``: ``kind``, ``name``), or
    the model is in use by a robot instance, which model.put and model.delete
    refuse (``data``: ``kind`` ``"model"``, ``name``, ``scene``, ``robot``)."""


class RevisionConflict(ReposeError):
    """-32003: ``if_revision`` did not match; ``data["actual"]`` is the current one."""


class LimitExceeded(ReposeError):
    """-32004: a daemon limit was hit; ``data["limit"]`` names it."""


class Unauthorized(ReposeError):
    """-32005: a TCP connection must ``auth`` first, or the token is wrong."""


class ShuttingDown(ReposeError):
    """-32006: the daemon is stopping and refuses mutations."""


class StorageError(ReposeError):
    """-32007: the daemon could not make the mutation durable; nothing changed."""


class ConnectionLost(ReposeError, OSError):
    """The connection failed or closed (code 0: not an error reply)."""

    def __init__(self, message: str) -> None:
        ReposeError.__init__(self, 0, message)


class ProtocolError(ReposeError):
    """A reply that breaks the protocol (code 0: not an error reply)."""

    def __init__(self, message: str) -> None:
        ReposeError.__init__(self, 0, message)


_BY_CODE: Dict[int, Type[ReposeError]] = {
    -32700: ParseError,
    -32600: InvalidRequest,
    -32601: MethodNotFound,
    -32602: InvalidParams,
    -32603: InternalError,
    -32001: NotFound,
    -32002: AlreadyExists,
    -32003: RevisionConflict,
    -32004: LimitExceeded,
    -32005: Unauthorized,
    -32006: ShuttingDown,
    -32007: StorageError,
}


def error_from_reply(error: Any) -> ReposeError:
    """The exception for a reply's ``error`` member."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) \
            or not isinstance(error.get("message"), str):
        return ProtocolError(f"malformed error member: {error!r}")
    code = error["code"]
    data = error.get("data")
    cls = _BY_CODE.get(code, ReposeError)
    return cls(code, error["message"], data if isinstance(data, dict) else None)
