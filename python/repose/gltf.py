# SPDX-License-Identifier: MIT
"""Scenes as glTF 2.0 binary (.glb), so that any glTF viewer shows what the
daemon holds: each shape tessellated (spheres as UV spheres, capsules as a
cylinder with two hemispheres), one node and one mesh per shape, named by
its id; scene shapes in one colour and robot links (posed with model.fk) in
another.  Positions are world coordinates in metres (glTF's unit), normals
unit length, indices 32-bit.  Standard library only.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

Vec = Tuple[float, float, float]
Mesh = Tuple[List[Vec], List[Vec], List[int]]  # positions, normals, triangle indices

SCENE_COLOUR = [0.62, 0.64, 0.68, 1.0]
ROBOT_COLOUR = [0.95, 0.55, 0.10, 1.0]

GLB_MAGIC = 0x46546C67  # "glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942


def _sub(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _norm(a: Vec) -> float:
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


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


def capsule_mesh(a: Vec, b: Vec, r: float, segments: int = 24, rings: int = 8) -> Mesh:
    """A capsule of radius r around segment a-b (a sphere when a == b): rows
    of `segments` vertices from the pole below a to the pole above b."""
    u, v, w = _frame(_sub(b, a))
    rows: List[Tuple[Vec, float, float]] = []  # (centre, cos(lat) scale, sin(lat))
    for i in range(rings + 1):  # the hemisphere at a: latitude -90..0
        lat = -math.pi / 2 + (math.pi / 2) * i / rings
        rows.append((a, math.cos(lat), math.sin(lat)))
    for i in range(rings + 1):  # the hemisphere at b: latitude 0..90
        lat = (math.pi / 2) * i / rings
        rows.append((b, math.cos(lat), math.sin(lat)))
    pos: List[Vec] = []
    nrm: List[Vec] = []
    for centre, cl, sl in rows:
        for k in range(segments):
            t = 2 * math.pi * k / segments
            ct, st = math.cos(t), math.sin(t)
            n = tuple(cl * (ct * u[j] + st * v[j]) + sl * w[j] for j in range(3))
            nn = _norm(n) or 1.0
            n = (n[0] / nn, n[1] / nn, n[2] / nn)
            nrm.append(n)
            pos.append((centre[0] + r * n[0], centre[1] + r * n[1], centre[2] + r * n[2]))
    idx: List[int] = []
    for i in range(len(rows) - 1):
        for k in range(segments):
            p0 = i * segments + k
            p1 = i * segments + (k + 1) % segments
            q0, q1 = p0 + segments, p1 + segments
            idx += [p0, p1, q1, p0, q1, q0]
    return pos, nrm, idx


def shape_mesh(shape: Mapping[str, Any]) -> Mesh:
    """The mesh of a protocol shape ({"sphere": ...} or {"capsule": ...})."""
    if "sphere" in shape:
        s = shape["sphere"]
        c = tuple(float(x) for x in s["center"])
        return capsule_mesh(c, c, float(s["radius"]))  # type: ignore[arg-type]
    if "capsule" in shape:
        s = shape["capsule"]
        return capsule_mesh(tuple(float(x) for x in s["a"]),  # type: ignore[arg-type]
                            tuple(float(x) for x in s["b"]), float(s["radius"]))
    raise ValueError(f"not a shape: {shape!r}")


def _rotate(q: Mapping[str, float], p: Sequence[float]) -> Vec:
    w, x, y, z = q["w"], q["x"], q["y"], q["z"]
    # p + 2w (q x p) + 2 q x (q x p), with q the vector part
    cx = y * p[2] - z * p[1]
    cy = z * p[0] - x * p[2]
    cz = x * p[1] - y * p[0]
    return (p[0] + 2 * (w * cx + y * cz - z * cy),
            p[1] + 2 * (w * cy + z * cx - x * cz),
            p[2] + 2 * (w * cz + x * cy - y * cx))


def place(shape: Mapping[str, Any], pose: Mapping[str, Any]) -> Dict[str, Any]:
    """A link-frame shape moved to world coordinates by a model.fk pose."""
    t = pose["translation"]
    q = pose["rotation"]

    def tf(p: Sequence[float]) -> List[float]:
        r = _rotate(q, p)
        return [r[0] + t[0], r[1] + t[1], r[2] + t[2]]

    if "sphere" in shape:
        s = shape["sphere"]
        return {"sphere": {"center": tf(s["center"]), "radius": s["radius"]}}
    s = shape["capsule"]
    return {"capsule": {"a": tf(s["a"]), "b": tf(s["b"]), "radius": s["radius"]}}


def to_glb(shapes: Mapping[str, Mapping[str, Any]],
           robot: Optional[Mapping[str, Mapping[str, Any]]] = None,
           generator: str = "repose") -> bytes:
    """A .glb file: `shapes` ({id: shape}, world coordinates) in the scene
    colour, `robot` ({name: shape}, world coordinates) in the robot colour."""
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
        ],
        "buffers": [],
    }
    blob = bytearray()

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
        pos, nrm, idx = shape_mesh(shape)
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

    for sid in sorted(shapes):
        add(sid, shapes[sid], 0)
    for rid in sorted(robot or {}):
        add(rid, (robot or {})[rid], 1)
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


def export(client: Any, scene: str, model: Optional[str] = None,
           joints: Any = None) -> bytes:
    """The .glb of a scene as the daemon holds it, with a kinematic model's
    shapes posed at `joints` (model.fk) when a model is given."""
    shapes = client.scene_get(scene)["shapes"]
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
    return to_glb(shapes, robot)
