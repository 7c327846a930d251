# SPDX-License-Identifier: MIT
"""Request lines: compact JSON, NaN refused, large number tables formatted
fast, point clouds packed as base64 float32, numpy joint arrays as base64
float64 (joints_f64, path_f64)."""

from __future__ import annotations

import base64
import json
import math
import os
import struct
from typing import Any, Dict, List, Mapping, Optional

# A list of more points than this goes as points_f32 (see encode_cloud).
CLOUD_JSON_MAX_POINTS = 1024


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


def f64_rows(x: Any, ndim: int, name: str = "joints") -> Optional[str]:
    """The text of ``joints_f64`` / ``path_f64`` (proto/PROTOCOL.md, Binary
    joint arrays) for a numpy array ``x`` of ``ndim`` dimensions (1: one
    joint vector; 2: rows x joints, a table or a path) and a real numeric
    dtype (any float or integer dtype): base64 of its values as
    little-endian float64, row-major, whatever ``x``'s dtype and memory
    layout (``numpy.ascontiguousarray(x, dtype="<f8").tobytes()``; float32
    and float16 values convert exactly).  ``None`` for anything else (lists,
    mappings, state names, empty arrays, other shapes or dtypes): those go
    as JSON.  numpy is imported only when ``x`` is an array.  A NaN or an
    infinity is a ValueError naming it (``name[row][column] is nan (row
    row)``) before anything is sent."""
    if not _is_array(x) or getattr(x, "ndim", None) != ndim:
        return None
    try:
        import numpy
    except ImportError:  # an array-like without numpy: the JSON form
        return None
    a = numpy.asarray(x)
    if a.dtype.kind not in "fiu" or a.size == 0:
        return None
    f = numpy.ascontiguousarray(a, dtype="<f8")
    bad = ~numpy.isfinite(f)
    if bad.any():
        at = tuple(int(k) for k in numpy.argwhere(bad)[0])
        where = name + "".join(f"[{k}]" for k in at)
        row = f" (row {at[0]})" if ndim == 2 else ""
        raise ValueError(f"{where} is {float(a[at])!r}{row}: joint values must be finite")
    return base64.b64encode(f.tobytes()).decode("ascii")


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




def _f32_from_array(points: Any, where: str) -> bytes:
    """The little-endian float32 bytes of an (N, 3) numpy array of any
    numeric dtype and any memory layout; ValueError for another shape or a
    value that is not finite in float32 (NaN, infinite, or beyond
    float32's range), naming it (``where[row][column]``)."""
    import numpy  # the caller gave a numpy array: numpy is there

    a = numpy.asarray(points)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{where} must be an (N, 3) array of x, y, z rows, not of shape "
                         f"{a.shape}")
    with numpy.errstate(over="ignore", invalid="ignore"):
        f = a.astype("<f4", order="C")
    bad = ~numpy.isfinite(f)
    if bad.any():
        i, j = (int(k) for k in numpy.argwhere(bad)[0])
        raise ValueError(f"{where}[{i}][{j}] is {float(a[i, j])!r}, not a finite float32 "
                         f"(row {i})")
    return f.tobytes()


def _f32_from_rows(rows: List[List[Any]], where: str) -> bytes:
    """The little-endian float32 bytes of x, y, z rows; ValueError naming
    the first value that is not a number or not finite in float32."""
    flat: List[float] = []
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"{where}[{i}][{j}] is {v!r}, not a number (row {i})") from None
            if not math.isfinite(x):
                raise ValueError(f"{where}[{i}][{j}] is {x!r}, not a finite float32 (row {i})")
            flat.append(x)
    try:
        return struct.pack(f"<{len(flat)}f", *flat)
    except OverflowError:  # beyond float32's range: find it
        for k, x in enumerate(flat):
            try:
                struct.pack("<f", x)
            except OverflowError:
                i, j = divmod(k, 3)
                raise ValueError(f"{where}[{i}][{j}] is {x!r}, beyond float32's range "
                                 f"(row {i})") from None
        raise


def _rows(points: Any, where: str) -> List[List[Any]]:
    """x, y, z rows from a list (or any iterable, or an object with tolist())
    of rows; ValueError for a row without 3 numbers."""
    rows = points.tolist() if hasattr(points, "tolist") else list(points)
    rows = [r.tolist() if hasattr(r, "tolist") else list(r) for r in rows]
    for i, r in enumerate(rows):
        if len(r) != 3:
            raise ValueError(f"{where}[{i}] has {len(r)} numbers, not 3 (x, y, z)")
    return rows


def _is_array(points: Any) -> bool:
    """A numpy array (or one like it: a dtype and astype)."""
    return hasattr(points, "dtype") and hasattr(points, "astype")


def encode_cloud(cloud: Mapping[str, Any], where: str = "cloud") -> Dict[str, Any]:
    """A point cloud as scene.put reads it (proto/PROTOCOL.md, Point clouds):
    ``cloud`` is {"points": ..., "radius": r, "voxel": v (optional)} and
    any other member (``count``, or ``points_f32`` instead of ``points``)
    goes as it is, so a cloud from scene.get can be put back unchanged.

    ``points`` may be
      - a numpy array of shape (N, 3), of any numeric dtype and layout: sent
        as ``points_f32`` (base64 of its values cast to little-endian
        float32, C order) with ``count`` N;
      - a list (or any iterable, or an object with tolist()) of [x, y, z]
        rows: sent as JSON ``points`` when it has at most
        CLOUD_JSON_MAX_POINTS rows (readable, and the daemon's errors name
        the value), else packed as ``points_f32`` with ``count`` like an
        array (16 characters a point instead of about 60, no decimal
        parsing).  The daemon rounds ``points`` to float32 as the packing
        does, so both give the same spheres.
    A row without 3 numbers, or a value that is not finite in float32, is a
    ValueError naming it (``where.points[row][column]``) before anything is
    sent; ``where`` is the cloud's path in the params."""
    if "points" not in cloud:
        return dict(cloud)
    if "points_f32" in cloud:
        raise ValueError(f"{where}: give points or points_f32, not both")
    out = {k: v for k, v in cloud.items() if k != "points"}
    points = cloud["points"]
    at = f"{where}.points"
    if _is_array(points):
        raw = _f32_from_array(points, at)
    else:
        rows = _rows(points, at)
        if len(rows) <= CLOUD_JSON_MAX_POINTS:
            out["points"] = rows
            return out
        raw = _f32_from_rows(rows, at)
    out["points_f32"] = base64.b64encode(raw).decode("ascii")
    out.setdefault("count", len(raw) // 12)
    return out


def cloud_points(cloud: Mapping[str, Any], *, as_list: bool = False) -> Any:
    """The centres of a cloud's spheres as scene.get gives the cloud
    ({"radius", "count", "points_f32"}), in sphere order (row k is the
    sphere ``"name/k"``): an (N, 3) numpy float32 array, or with
    ``as_list=True`` a list of [x, y, z] Python floats holding the same
    float32 values exactly (no numpy needed).  A cloud as it is put, with
    ``points`` (rows or an array), is read too: its points rounded to
    float32, in the order given.  ValueError for base64 that is not
    RFC 4648 with padding, a length that is not a multiple of 12 bytes, or
    a ``count`` that does not match; ImportError without numpy unless
    ``as_list``."""
    if "points_f32" in cloud:
        try:
            raw = base64.b64decode(cloud["points_f32"], validate=True)
        except ValueError as e:  # binascii.Error
            raise ValueError(f"points_f32 is not base64: {e}") from None
        if len(raw) % 12:
            raise ValueError(f"points_f32 holds {len(raw)} bytes, not a multiple of 12 "
                             "(x, y, z float32 triples)")
    elif "points" in cloud:
        points = cloud["points"]
        raw = (_f32_from_array(points, "points") if _is_array(points)
               else _f32_from_rows(_rows(points, "points"), "points"))
    else:
        raise ValueError("a cloud has points_f32 (as scene.get gives it) or points")
    n = len(raw) // 12
    if cloud.get("count", n) != n:
        raise ValueError(f"the cloud holds {n} points, its count says {cloud['count']}")
    if as_list:
        flat = struct.unpack(f"<{3 * n}f", raw)
        return [list(flat[k:k + 3]) for k in range(0, 3 * n, 3)]
    try:
        import numpy
    except ImportError:
        raise ImportError("repose.cloud_points needs numpy for an array; as_list=True gives "
                          "lists") from None
    return numpy.frombuffer(raw, dtype="<f4").astype(numpy.float32).reshape(n, 3)
