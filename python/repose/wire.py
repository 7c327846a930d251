# SPDX-License-Identifier: MIT
"""Request lines: compact JSON, NaN refused, large number tables formatted fast."""

from __future__ import annotations

import json
import math
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


def _non_finite(value: Any, path: str) -> Optional[str]:
    """The path of the first NaN or infinity in value (dicts, lists, tuples,
    floats, and arrays through tolist), e.g. ``params.joints[3][1]``; None
    when there is none."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, dict):
        for k, v in value.items():
            p = _non_finite(v, f"{path}.{k}")
            if p:
                return p
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            p = _non_finite(v, f"{path}[{i}]")
            if p:
                return p
    elif isinstance(value, float) or hasattr(value, "item"):
        try:
            return None if math.isfinite(float(value)) else path
        except (TypeError, ValueError):
            return None
    return None


def number_rows(rows: Any, name: str = "rows") -> Any:
    """A list of rows of numbers (lists, tuples or a 2-D numpy array) as
    JSON text, each number with 17 significant digits (exact for every
    double, and about twice as fast as json's shortest form, which matters
    for a 1000-configuration batch); `rows` unchanged when it is anything
    else (rows of joint names, say).  NaN and infinities are refused with a
    ValueError that names the row and the value (``name[row][column]``)."""
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
        for i, part in enumerate(parts):
            if "n" in part:
                cells = part.split(",")
                j = next(k for k, c in enumerate(cells) if "n" in c)
                raise ValueError(f"{name}[{i}][{j}] is {cells[j]} (row {i}): JSON has no NaN "
                                 "or infinity")
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
        where = _non_finite(params, "params")
        what = f"{where} is not a finite number" if where else str(e)
        raise ValueError(f"{method}: {what} (JSON has no NaN or infinity)") from None
    for mark, value in raw.items():
        text = text.replace(mark, value, 1)
    return text.encode("utf-8") + b"\n"


