# SPDX-License-Identifier: MIT
"""Scenes as glTF 2.0 binary (.glb), so that any glTF viewer shows what the
daemon holds.  Each shape is drawn with the daemon's one tessellation (its
``tessellation`` method, which the browser viewer draws with too): spheres
and capsules by the round template (a cylinder with two hemispheres), boxes
by the box template (six flat faces; a rectangle drawn from both sides when
an extent is zero), a half-space, which has no end, by the square template:
a two-sided square in its boundary plane, centred where the plane is
nearest the centre of the other shapes' bounding box and max(10 m, 4 x that
box's diagonal) across.  One node and one mesh per shape, named by its id;
scene shapes in one colour and robot links (posed with model.fk) in
another.  A point cloud is one node and one mesh named after the cloud: a
POINTS primitive (mode 0) of its spheres' centres in sphere order (vertex k
is ``"name/k"``), in a third colour, the radius and count in the mesh's
``extras`` (glTF points have no size); an empty cloud is a node without a
mesh, with those extras.  Positions are world coordinates in metres
(glTF's unit), normals unit length, triangles counter-clockwise seen from
the side their normals face, indices 32-bit.  Standard library only.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .errors import NotFound
from .wire import cloud_points

Vec = Tuple[float, float, float]
Mesh = Tuple[List[Vec], List[Vec], List[int]]  # positions, normals, triangle indices
Quat = Dict[str, float]  # a Hamilton quaternion as the protocol writes it: w, x, y, z

IDENTITY: Quat = {"w": 1.0, "x": 0.0, "y": 0.0, "z": 0.0}
HALFSPACE_MIN_SIZE = 10.0  # metres: the least side of a half-space's square
HALFSPACE_SCALE = 4.0  # ... and at least this many diagonals of the other shapes' bounds

SCENE_COLOUR = [0.62, 0.64, 0.68, 1.0]
ROBOT_COLOUR = [0.95, 0.55, 0.10, 1.0]
CLOUD_COLOUR = [0.20, 0.60, 0.90, 1.0]

GLB_MAGIC = 0x46546C67  # "glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942


def _sub(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _norm(a: Vec) -> float:
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _add(a: Vec, b: Vec) -> Vec:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _scale(k: float, a: Vec) -> Vec:
    return (k * a[0], k * a[1], k * a[2])


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _vec(p: Sequence[Any]) -> Vec:
    """Three floats from a protocol array."""
    if len(p) != 3:
        raise ValueError(f"not a 3-vector: {p!r}")
    return (float(p[0]), float(p[1]), float(p[2]))


def _unit(a: Vec, what: str) -> Tuple[Vec, float]:
    """a / |a| and |a|, scaled first so that no square overflows;
    ValueError for a zero or non-finite vector."""
    m = max(abs(a[0]), abs(a[1]), abs(a[2]))
    if not math.isfinite(m) or m == 0:
        raise ValueError(f"{what} must be finite and non-zero: {a!r}")
    s = (a[0] / m, a[1] / m, a[2] / m)
    n = _norm(s)
    return (s[0] / n, s[1] / n, s[2] / n), n * m


def _quat(q: Optional[Mapping[str, Any]]) -> Quat:
    """A protocol rotation ({"w", "x", "y", "z"}; None is the identity)
    scaled to unit length, as the daemon stores it; ValueError for a zero
    or non-finite quaternion."""
    if q is None:
        return dict(IDENTITY)
    c = [float(q[k]) for k in ("w", "x", "y", "z")]
    m = max(abs(x) for x in c)
    if not math.isfinite(m) or m == 0:
        raise ValueError(f"a rotation must be a finite non-zero quaternion: {dict(q)!r}")
    c = [x / m for x in c]
    n = math.sqrt(sum(x * x for x in c))
    return {"w": c[0] / n, "x": c[1] / n, "y": c[2] / n, "z": c[3] / n}


def _qmul(a: Mapping[str, float], b: Mapping[str, float]) -> Quat:
    """The Hamilton product a b: the rotation b, then a."""
    return {"w": a["w"] * b["w"] - a["x"] * b["x"] - a["y"] * b["y"] - a["z"] * b["z"],
            "x": a["w"] * b["x"] + a["x"] * b["w"] + a["y"] * b["z"] - a["z"] * b["y"],
            "y": a["w"] * b["y"] - a["x"] * b["z"] + a["y"] * b["w"] + a["z"] * b["x"],
            "z": a["w"] * b["z"] + a["x"] * b["y"] - a["y"] * b["x"] + a["z"] * b["w"]}


def _rotate(q: Mapping[str, float], p: Sequence[float]) -> Vec:
    """p rotated by the unit quaternion q (active: R(q) p)."""
    w, x, y, z = q["w"], q["x"], q["y"], q["z"]
    # p + 2w (q x p) + 2 q x (q x p), with q the vector part
    cx = y * p[2] - z * p[1]
    cy = z * p[0] - x * p[2]
    cz = x * p[1] - y * p[0]
    return (p[0] + 2 * (w * cx + y * cz - z * cy),
            p[1] + 2 * (w * cy + z * cx - x * cz),
            p[2] + 2 * (w * cz + x * cy - y * cx))


def _frame(axis: Vec) -> Tuple[Vec, Vec, Vec]:
    """Unit w along axis, and u, v completing a right-handed frame."""
    n = _norm(axis)
    w = (0.0, 0.0, 1.0) if n == 0 else (axis[0] / n, axis[1] / n, axis[2] / n)
    helper = (1.0, 0.0, 0.0) if abs(w[0]) < 0.9 else (0.0, 1.0, 0.0)
    u = _cross(w, helper)
    un = _norm(u)
    u = (u[0] / un, u[1] / un, u[2] / un)
    v = _cross(w, u)
    return u, v, w


class Tessellation:
    """The daemon's one tessellation (its ``tessellation`` method): unit
    templates that every shape is drawn by, here as in the viewer.  Build it
    with :meth:`of` (from a connected client) or from the method's result."""

    def __init__(self, result: Mapping[str, Any]) -> None:
        r = result["round"]
        self.directions: List[Vec] = [_vec(d) for d in r["directions"]]
        self.ends: List[int] = [int(e) for e in r["ends"]]
        self.round_triangles: List[int] = [int(i) for t in r["triangles"] for i in t]
        self.box_corners: List[Vec] = [_vec(c) for c in result["box"]["corners"]]
        self.box_normals: List[Vec] = [_vec(n) for n in result["box"]["normals"]]
        self.box_triangles: List[int] = [int(i) for t in result["box"]["triangles"] for i in t]
        self.square_corners: List[Vec] = [_vec(c) for c in result["square"]["corners"]]
        self.square_normals: List[Vec] = [_vec(n) for n in result["square"]["normals"]]
        self.square_triangles: List[int] = [int(i) for t in result["square"]["triangles"]
                                            for i in t]
        if len(self.ends) != len(self.directions):
            raise ValueError("a tessellation's round template needs one end per direction")

    @classmethod
    def of(cls, client: Any, **resolution: int) -> "Tessellation":
        """The daemon's templates (``segments``, ``rings`` as its method takes them)."""
        return cls(client.tessellation(**resolution))


def capsule_mesh(tess: Tessellation, a: Vec, b: Vec, r: float) -> Mesh:
    """A capsule of radius r around segment a-b (a sphere when a == b): the
    round template placed in a frame with w along b - a (rows of vertices
    from the pole below a to the pole above b)."""
    u, v, w = _frame(_sub(b, a))
    pos: List[Vec] = []
    nrm: List[Vec] = []
    for d, e in zip(tess.directions, tess.ends):
        n = tuple(d[0] * u[j] + d[1] * v[j] + d[2] * w[j] for j in range(3))
        nn = _norm(n) or 1.0
        n = (n[0] / nn, n[1] / nn, n[2] / nn)
        centre = b if e else a
        nrm.append(n)
        pos.append((centre[0] + r * n[0], centre[1] + r * n[1], centre[2] + r * n[2]))
    return pos, nrm, list(tess.round_triangles)


def box_mesh(tess: Tessellation, center: Sequence[float], half_extents: Sequence[float],
             rotation: Optional[Mapping[str, Any]] = None) -> Mesh:
    """The box center + R(rotation) u, |u_i| <= half_extents_i (rotation
    scaled to a unit quaternion as rp_box_new does; None: the identity): the
    box template's 24 vertices, four per face with the face's unit outward
    normal, and 12 triangles counter-clockwise seen from outside.  A zero
    extent keeps every face: the two across it are the rectangle's two
    sides, the four around it have no area."""
    c = _vec(center)
    h = _vec(half_extents)
    if not all(math.isfinite(x) and x >= 0 for x in h):
        raise ValueError(f"half extents must be finite and >= 0: {list(half_extents)!r}")
    q = _quat(rotation)
    axes = [_rotate(q, e) for e in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]
    units = [_unit(e, "a box axis")[0] for e in axes]  # unit to the last bit, for the normals
    pos: List[Vec] = []
    nrm: List[Vec] = []
    for k, m in zip(tess.box_corners, tess.box_normals):
        pos.append(_add(c, _add(_scale(k[0] * h[0], axes[0]),
                                _add(_scale(k[1] * h[1], axes[1]), _scale(k[2] * h[2], axes[2])))))
        nrm.append(_add(_scale(m[0], units[0]), _add(_scale(m[1], units[1]),
                                                      _scale(m[2], units[2]))))
    return pos, nrm, list(tess.box_triangles)


def halfspace_mesh(tess: Tessellation, normal: Sequence[float], offset: float, size: float,
                   centre: Optional[Sequence[float]] = None) -> Mesh:
    """The half-space {p : normal . p <= offset} as the square template of
    side `size` in its boundary plane, centred at the plane's point nearest
    `centre` (None: the origin), drawn from both sides: vertices 0-3 with
    normal +n and two triangles facing +n (out of the solid), vertices 4-7
    at the same places with normal -n and two triangles facing -n.  A normal
    of any non-zero length is normalised and the offset divided by that
    length (the same solid, as rp_halfspace_new does)."""
    n, length = _unit(_vec(normal), "a half-space's normal")
    d = float(offset) / length
    size = float(size)
    if not math.isfinite(d) or not math.isfinite(size) or size <= 0:
        raise ValueError(f"offset and size must be finite, size > 0: {offset!r}, {size!r}")
    c = (0.0, 0.0, 0.0) if centre is None else _vec(centre)
    above = _dot(n, c) - d
    c0 = _sub(c, _scale(above, n))
    u, v, _ = _frame(n)  # u x v = n
    pos = [_add(c0, _add(_scale(k[0] * size, u), _scale(k[1] * size, v)))
           for k in tess.square_corners]
    nrm = [_scale(m[2], n) for m in tess.square_normals]
    return pos, nrm, list(tess.square_triangles)


def shape_mesh(tess: Tessellation, shape: Mapping[str, Any],
               centre: Optional[Sequence[float]] = None,
               size: float = HALFSPACE_MIN_SIZE) -> Mesh:
    """The mesh of a protocol shape ({"sphere": ...}, {"capsule": ...},
    {"box": ...} or {"halfspace": ...}); a half-space becomes the square of
    side `size` nearest `centre` (halfspace_mesh)."""
    if "sphere" in shape:
        s = shape["sphere"]
        c = _vec(s["center"])
        return capsule_mesh(tess, c, c, float(s["radius"]))
    if "capsule" in shape:
        s = shape["capsule"]
        return capsule_mesh(tess, _vec(s["a"]), _vec(s["b"]), float(s["radius"]))
    if "box" in shape:
        s = shape["box"]
        return box_mesh(tess, s["center"], s["half_extents"], s.get("rotation"))
    if "halfspace" in shape:
        s = shape["halfspace"]
        return halfspace_mesh(tess, s["normal"], s["offset"], size, centre)
    raise ValueError(f"not a shape: {shape!r}")


def shape_bounds(shape: Mapping[str, Any]) -> Optional[Tuple[Vec, Vec]]:
    """The axis-aligned bounds (lo, hi) of a bounded shape; None for a
    half-space."""
    if "halfspace" in shape:
        return None
    if "sphere" in shape:
        s = shape["sphere"]
        ends = [_vec(s["center"])]
    elif "capsule" in shape:
        s = shape["capsule"]
        ends = [_vec(s["a"]), _vec(s["b"])]
    elif "box" in shape:
        s = shape["box"]
        c, h, q = _vec(s["center"]), _vec(s["half_extents"]), _quat(s.get("rotation"))
        axes = [_rotate(q, e) for e in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]
        ext = (sum(abs(axes[i][0]) * h[i] for i in range(3)),
               sum(abs(axes[i][1]) * h[i] for i in range(3)),
               sum(abs(axes[i][2]) * h[i] for i in range(3)))
        return _sub(c, ext), _add(c, ext)
    else:
        raise ValueError(f"not a shape: {shape!r}")
    r = float(s["radius"])
    lo = (min(e[0] for e in ends) - r, min(e[1] for e in ends) - r, min(e[2] for e in ends) - r)
    hi = (max(e[0] for e in ends) + r, max(e[1] for e in ends) + r, max(e[2] for e in ends) + r)
    return lo, hi


def cloud_bounds(centres: Sequence[Sequence[float]],
                 radius: float) -> Optional[Tuple[Vec, Vec]]:
    """The axis-aligned bounds (lo, hi) of a cloud's spheres (their centres
    and radius); None for an empty cloud."""
    if not centres:
        return None
    r = float(radius)
    lo = tuple(min(p[j] for p in centres) - r for j in range(3))
    hi = tuple(max(p[j] for p in centres) + r for j in range(3))
    return (lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2])


def halfspace_square(shapes: Iterable[Mapping[str, Any]],
                     bounds: Iterable[Tuple[Vec, Vec]] = ()) -> Tuple[Vec, float]:
    """Where to_glb draws half-spaces: the centre of the bounding box of the
    bounded shapes and of the boxes in `bounds` (the clouds'; the origin
    when there are none) and the square's side, max(HALFSPACE_MIN_SIZE,
    HALFSPACE_SCALE x that box's diagonal)."""
    lo = [math.inf] * 3
    hi = [-math.inf] * 3
    boxes = [shape_bounds(shape) for shape in shapes] + list(bounds)
    for b in boxes:
        if b is not None:
            lo = [min(lo[j], b[0][j]) for j in range(3)]
            hi = [max(hi[j], b[1][j]) for j in range(3)]
    if lo[0] > hi[0]:
        return (0.0, 0.0, 0.0), HALFSPACE_MIN_SIZE
    centre = ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2)
    diagonal = _norm((hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))
    return centre, max(HALFSPACE_MIN_SIZE, HALFSPACE_SCALE * diagonal)


def place(shape: Mapping[str, Any], pose: Mapping[str, Any]) -> Dict[str, Any]:
    """A link-frame shape moved to world coordinates by a model.fk pose
    ({"translation": [x, y, z], "rotation": {"w", "x", "y", "z"}}): points
    and a box's centre go to R p + t, a box's rotation becomes the pose's
    rotation times the box's (Hamilton product), a half-space's normal turns
    with R and its offset follows the translation."""
    t = _vec(pose["translation"])
    q = pose["rotation"]

    def tf(p: Sequence[float]) -> List[float]:
        r = _rotate(q, p)
        return [r[0] + t[0], r[1] + t[1], r[2] + t[2]]

    if "sphere" in shape:
        s = shape["sphere"]
        return {"sphere": {"center": tf(s["center"]), "radius": s["radius"]}}
    if "capsule" in shape:
        s = shape["capsule"]
        return {"capsule": {"a": tf(s["a"]), "b": tf(s["b"]), "radius": s["radius"]}}
    if "box" in shape:
        s = shape["box"]
        return {"box": {"center": tf(s["center"]), "half_extents": list(s["half_extents"]),
                        "rotation": _qmul(q, s.get("rotation") or IDENTITY)}}
    if "halfspace" in shape:
        # n . p <= d for the link-frame p = R^T (p' - t): (R n) . p' <= d + (R n) . t
        s = shape["halfspace"]
        n = _rotate(q, s["normal"])
        return {"halfspace": {"normal": list(n), "offset": float(s["offset"]) + _dot(n, t)}}
    raise ValueError(f"not a shape: {shape!r}")


def to_glb(tess: Tessellation, shapes: Mapping[str, Mapping[str, Any]],
           robot: Optional[Mapping[str, Mapping[str, Any]]] = None,
           generator: str = "repose",
           clouds: Optional[Mapping[str, Mapping[str, Any]]] = None) -> bytes:
    """A .glb file drawn with the daemon's tessellation `tess`: `shapes`
    ({id: shape}, world coordinates) in the scene
    colour, `robot` ({name: shape}, world coordinates) in the robot colour,
    `clouds` ({name: cloud} as scene.get gives them: "radius", "count",
    "points_f32") as POINTS in the cloud colour.  Each half-space is a
    square in its plane nearest the centre of the other shapes' bounds,
    scene, robot and clouds together, sized to them (halfspace_square)."""
    doc: Dict[str, Any] = {
        "asset": {"version": "2.0", "generator": generator},
        "scene": 0,
        "scenes": [{"nodes": []}],
        "nodes": [], "meshes": [], "accessors": [], "bufferViews": [],
        "materials": [
            {"name": "scene", "pbrMetallicRoughness": {"baseColorFactor": SCENE_COLOUR,
                                                      "metallicFactor": 0.0}},
            {"name": "robot", "pbrMetallicRoughness": {"baseColorFactor": ROBOT_COLOUR,
                                                      "metallicFactor": 0.0}},
            {"name": "cloud", "pbrMetallicRoughness": {"baseColorFactor": CLOUD_COLOUR,
                                                      "metallicFactor": 0.0}},
        ],
        "buffers": [],
    }
    blob = bytearray()
    everything = list(shapes.values()) + list((robot or {}).values())
    centres = {name: cloud_points(c, as_list=True) for name, c in (clouds or {}).items()}
    radii = {name: float(c["radius"]) for name, c in (clouds or {}).items()}
    square_centre, square_size = halfspace_square(
        everything, [b for b in (cloud_bounds(centres[n], radii[n]) for n in centres) if b])

    def view(data: bytes, target: int) -> int:
        while len(blob) % 4:
            blob.append(0)
        doc["bufferViews"].append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(data),
                                   "target": target})
        blob.extend(data)
        return len(doc["bufferViews"]) - 1

    def accessor(v: int, ctype: int, count: int, kind: str, lo: Any = None, hi: Any = None) -> int:
        acc: Dict[str, Any] = {"bufferView": v, "componentType": ctype, "count": count, "type": kind}
        if lo is not None:
            acc["min"], acc["max"] = lo, hi
        doc["accessors"].append(acc)
        return len(doc["accessors"]) - 1

    def add(name: str, shape: Mapping[str, Any], material: int) -> None:
        pos, nrm, idx = shape_mesh(tess, shape, square_centre, square_size)
        # Bounds of the float32 values actually stored (glTF requires them).
        fpos = [struct.unpack("<3f", struct.pack("<3f", *p)) for p in pos]
        lo = [min(p[j] for p in fpos) for j in range(3)]
        hi = [max(p[j] for p in fpos) for j in range(3)]
        pa = accessor(view(b"".join(struct.pack("<3f", *p) for p in pos), 34962), 5126,
                      len(pos), "VEC3", lo, hi)
        na = accessor(view(b"".join(struct.pack("<3f", *n) for n in nrm), 34962), 5126,
                      len(nrm), "VEC3")
        ia = accessor(view(struct.pack(f"<{len(idx)}I", *idx), 34963), 5125, len(idx), "SCALAR",
                      [min(idx)], [max(idx)])
        doc["meshes"].append({"name": name, "primitives": [
            {"attributes": {"POSITION": pa, "NORMAL": na}, "indices": ia, "material": material}]})
        doc["nodes"].append({"name": name, "mesh": len(doc["meshes"]) - 1})
        doc["scenes"][0]["nodes"].append(len(doc["nodes"]) - 1)

    def add_cloud(name: str, pos: List[List[float]], radius: float) -> None:
        node: Dict[str, Any] = {"name": name}
        if pos:  # glTF accessors hold at least one element
            # The centres are float32 already: these are the stored values.
            lo = [min(p[j] for p in pos) for j in range(3)]
            hi = [max(p[j] for p in pos) for j in range(3)]
            pa = accessor(view(b"".join(struct.pack("<3f", *p) for p in pos), 34962), 5126,
                          len(pos), "VEC3", lo, hi)
            doc["meshes"].append({"name": name, "extras": {"radius": radius, "count": len(pos)},
                                  "primitives": [{"attributes": {"POSITION": pa}, "mode": 0,
                                                  "material": 2}]})
            node["mesh"] = len(doc["meshes"]) - 1
        else:
            node["extras"] = {"radius": radius, "count": 0}
        doc["nodes"].append(node)
        doc["scenes"][0]["nodes"].append(len(doc["nodes"]) - 1)

    for sid in sorted(shapes):
        add(sid, shapes[sid], 0)
    for rid in sorted(robot or {}):
        add(rid, (robot or {})[rid], 1)
    for name in sorted(centres):
        add_cloud(name, centres[name], radii[name])
    while len(blob) % 4:
        blob.append(0)
    if blob:
        doc["buffers"].append({"byteLength": len(blob)})
    # glTF arrays, when present, are never empty (an empty scene: no nodes).
    for key in ("nodes", "meshes", "accessors", "bufferViews", "buffers"):
        if not doc[key]:
            del doc[key]
    if not doc["scenes"][0]["nodes"]:
        del doc["scenes"][0]["nodes"]
    js = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    js += b" " * (-len(js) % 4)
    total = 12 + 8 + len(js) + (8 + len(blob) if blob else 0)
    out = struct.pack("<III", GLB_MAGIC, 2, total) + struct.pack("<II", len(js), CHUNK_JSON) + js
    if blob:
        out += struct.pack("<II", len(blob), CHUNK_BIN) + bytes(blob)
    return out


def scene_contents(client: Any, scene: str,
                   attempts: int = 5) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Every shape of a scene in world coordinates ({id: shape}): its own
    shapes, its objects' as ``"name/id"`` and its robot instances' as
    ``"name/<model shape id>"``, and its clouds ({name: {"radius", "count",
    "points_f32"}}, world coordinates already), all at one revision.  A
    scene.get without ids lists objects in their own frames and robots by
    model, joints and base, so a scene with either is read again by ids
    (the daemon places them; a robot's shape ids are its model's, from
    model.get, which cannot change while the robot uses the model); when
    the scene changed in between, the read is repeated (ValueError after
    `attempts`)."""
    models: Dict[str, List[str]] = {}  # model name: its shape ids

    def placed_ids(got: Mapping[str, Any]) -> List[str]:
        ids = list(got["shapes"])
        for name, o in got.get("objects", {}).items():
            ids += [f"{name}/{sid}" for sid in o["shapes"]]
        for name, r in got.get("robots", {}).items():
            if r["model"] not in models:
                models[r["model"]] = [s["id"] for s in client.model_get(r["model"])["shapes"]]
            ids += [f"{name}/{sid}" for sid in models[r["model"]]]
        return ids

    got = client.scene_get(scene)
    for _ in range(attempts):
        if not got.get("objects") and not got.get("robots"):
            return got["shapes"], got.get("clouds", {})
        try:
            world = client.scene_get(scene, ids=placed_ids(got))
        except NotFound as e:
            if e.data.get("kind") == "scene":
                raise
            world = None  # an id (or a robot's model) went in between
            models.clear()
        if world is not None and world["revision"] == got["revision"]:
            return world["shapes"], got.get("clouds", {})
        models.clear()  # a model may have been replaced once no robot used it
        got = client.scene_get(scene)
    if not got.get("objects") and not got.get("robots"):
        return got["shapes"], got.get("clouds", {})
    raise ValueError(f"scene {scene!r} kept changing while it was read")


def scene_shapes(client: Any, scene: str, attempts: int = 5) -> Dict[str, Any]:
    """The shapes of :func:`scene_contents` ({id: shape}, world
    coordinates), without the clouds."""
    return scene_contents(client, scene, attempts)[0]


def export(client: Any, scene: str, model: Optional[str] = None,
           joints: Any = None) -> bytes:
    """The .glb of a scene as the daemon holds it, with a kinematic model's
    shapes posed at `joints` (model.fk) when a model is given.  An object's
    shapes are exported in world coordinates, as ``"name/id"``, a robot
    instance's where its joints and base put them, as ``"name/<model shape
    id>"``, and a cloud as the points of its centres, named after it."""
    shapes, clouds = scene_contents(client, scene)
    robot = None
    if model is not None:
        info = client.model_get(model)
        if not info.get("kinematic"):
            raise ValueError(f"model {model!r} is not kinematic: export needs joints")
        if joints is None:
            joints = info.get("default_positions") or {}
        poses = client.model_fk(model, joints)["links"]
        robot = {f"{model}/{s['id']}": place(s["shape"], poses[s["link"]])
                 for s in info["shapes"]}
    return to_glb(Tessellation.of(client), shapes, robot, clouds=clouds)
