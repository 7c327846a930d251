"""Request lines: compact JSON, NaN refused, large number tables formatted fast."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional


def _jsonable(o: Any) -> Any:
    """numpy arrays and scalars (or anything with tolist/item), for json.dumps."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (tuple, set, frozenset)):
        return list(o)
    raise TypeError(f"{type(o).__name__} is not JSON: give lists, dicts, numbers and strings")


class RawJSON:
    """JSON text to be sent as it is (made by :func:`number_rows`)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def number_rows(rows: Any) -> Any:
    """A list of rows of numbers (lists, tuples or a 2-D numpy array) as
    JSON text, each number with 17 significant digits (exact for every
    double, and about twice as fast as json's shortest form, which matters
    for a 1000-configuration batch); `rows` unchanged when it is anything
    else (rows of joint names, say).  NaN and infinities are refused."""
    try:
        if hasattr(rows, "tolist"):
            rows = rows.tolist()
        if not isinstance(rows, (list, tuple)):
            return rows
        parts = []
        fmts: Dict[int, str] = {}  # one format per row length: one % per row
        for r in rows:
            if hasattr(r, "tolist"):
                r = r.tolist()
            if not isinstance(r, (list, tuple)):
                return rows
            fmt = fmts.get(len(r))
            if fmt is None:
                fmt = fmts[len(r)] = ",".join(["%.17g"] * len(r))
            parts.append(fmt % tuple(r))
    except TypeError:  # not numbers
        return rows
    text = "[[" + "],[".join(parts) + "]]" if parts else "[]"
    if "n" in text:  # "nan", "inf": JSON has no such numbers
        raise ValueError("NaN or infinity in a list of numbers (JSON has neither)")
    return RawJSON(text)


def encode_request(rid: int, method: str, params: Optional[Dict[str, Any]]) -> bytes:
    """One request line (compact JSON and a newline).  NaN and infinities are
    refused here, as the daemon would: JSON has no such numbers."""
    req: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    raw: Dict[str, str] = {}
    if params is not None:
        if any(isinstance(v, RawJSON) for v in params.values()):
            # Placeholders in the text, then the raw JSON in their place.
            token = os.urandom(8).hex()
            params = dict(params)
            for k, v in params.items():
                if isinstance(v, RawJSON):
                    mark = f"@repose-raw-{token}-{len(raw)}@"
                    raw['"' + mark + '"'] = v.text
                    params[k] = mark
        req["params"] = params
    try:
        text = json.dumps(req, separators=(",", ":"), allow_nan=False, default=_jsonable)
    except ValueError as e:
        raise ValueError(f"{method}: {e} (JSON has no NaN or infinity)") from None
    for mark, value in raw.items():
        text = text.replace(mark, value, 1)
    return text.encode("utf-8") + b"\n"


