# SPDX-License-Identifier: MIT
"""glTF export (repose.gltf, python -m repose export): the .glb structure
(header, chunk lengths and padding, accessor and buffer-view bounds, index
ranges, POSITION min/max) and the geometry (every vertex on its shape's
surface), against the real daemon for the scene and the robot.  Boxes and
half-spaces are checked on hand-made shapes (their meshes, place and
to_glb): every box vertex on the box's surface, its corners, outward unit
normals, counter-clockwise winding, flat boxes; a half-space's square in its
plane, its size and centre, both sides.  Point clouds are POINTS
primitives of their centres, bit for bit and in sphere order."""

from __future__ import annotations

import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import repose  # noqa: E402
from repose import gltf  # noqa: E402
from test_client import ARM_SRDF, ARM_URDF, Daemon  # noqa: E402

SIZE = {5126: 4, 5125: 4}
COMPONENTS = {"SCALAR": 1, "VEC3": 3}


def parse_glb(data: bytes):
    """Checks the container and every reference; returns (doc, accessor
    reader).  Raises AssertionError on the first problem."""
    assert len(data) >= 20, "shorter than a header and a chunk"
    magic, version, total = struct.unpack_from("<III", data, 0)
    assert magic == 0x46546C67, "magic is not glTF"
    assert version == 2, f"version {version}"
    assert total == len(data), f"header length {total}, file {len(data)}"
    off, chunks = 12, []
    while off < len(data):
        clen, ctype = struct.unpack_from("<II", data, off)
        assert clen % 4 == 0, "chunk length not a multiple of 4"
        assert off + 8 + clen <= len(data), "chunk past the end"
        chunks.append((ctype, data[off + 8:off + 8 + clen]))
        off += 8 + clen
    assert off == len(data), "trailing bytes"
    assert chunks[0][0] == 0x4E4F534A, "first chunk is not JSON"
    doc = json.loads(chunks[0][1].decode("utf-8"))
    assert doc["asset"]["version"] == "2.0"
    binary = b""
    if len(chunks) > 1:
        assert chunks[1][0] == 0x004E4942, "second chunk is not BIN"
        binary = chunks[1][1]
        assert len(chunks) == 2
    if "buffers" in doc:
        assert len(doc["buffers"]) == 1 and doc["buffers"][0]["byteLength"] <= len(binary)
        assert len(binary) - doc["buffers"][0]["byteLength"] < 4, "BIN padding over 3 bytes"
    for v in doc.get("bufferViews", []):
        assert v["buffer"] == 0
        assert v["byteOffset"] % 4 == 0
        assert v["byteOffset"] + v["byteLength"] <= doc["buffers"][0]["byteLength"]

    def read(i: int):
        a = doc["accessors"][i]
        v = doc["bufferViews"][a["bufferView"]]
        n = COMPONENTS[a["type"]]
        need = a["count"] * n * SIZE[a["componentType"]]
        assert need <= v["byteLength"], f"accessor {i} runs past its view"
        fmt = "<" + ("f" if a["componentType"] == 5126 else "I") * (a["count"] * n)
        flat = struct.unpack_from(fmt, binary, v["byteOffset"])
        return [flat[k:k + n] for k in range(0, len(flat), n)] if n > 1 else list(flat)

    for m in doc.get("meshes", []):
        for p in m["primitives"]:
            pos = read(p["attributes"]["POSITION"])
            acc = doc["accessors"][p["attributes"]["POSITION"]]
            assert acc["count"] >= 1, "an accessor with no element"
            for j in range(3):
                assert acc["min"][j] == min(q[j] for q in pos), "POSITION min is not the minimum"
                assert acc["max"][j] == max(q[j] for q in pos), "POSITION max is not the maximum"
            assert 0 <= p["material"] < len(doc["materials"])
            if p.get("mode", 4) == 0:  # POINTS: positions alone
                assert "indices" not in p and "NORMAL" not in p["attributes"]
                continue
            assert p.get("mode", 4) == 4, "neither triangles nor points"
            nrm = read(p["attributes"]["NORMAL"])
            assert len(nrm) == len(pos)
            assert all(abs(math.sqrt(sum(c * c for c in q)) - 1) < 1e-5 for q in nrm)
            idx = read(p["indices"])
            assert len(idx) % 3 == 0 and idx, "indices are not whole triangles"
            assert max(idx) < len(pos), "an index past the vertices"
    for n in doc.get("nodes", []):
        if "mesh" in n:  # a node without one is an empty cloud
            assert 0 <= n["mesh"] < len(doc["meshes"]), "a node's mesh is missing"
    for i in doc["scenes"][doc["scene"]].get("nodes", []):
        assert 0 <= i < len(doc["nodes"])
    return doc, read


def seg_dist(p, a, b):
    ab = [b[j] - a[j] for j in range(3)]
    ap = [p[j] - a[j] for j in range(3)]
    den = sum(x * x for x in ab)
    t = 0.0 if den == 0 else max(0.0, min(1.0, sum(ap[j] * ab[j] for j in range(3)) / den))
    return math.sqrt(sum((ap[j] - t * ab[j]) ** 2 for j in range(3)))


TESS = None  # the daemon's tessellation (setUpModule)


def setUpModule() -> None:
    global TESS
    d = Daemon()
    try:
        with repose.Client(d.sock) as c:
            TESS = gltf.Tessellation.of(c)
    finally:
        assert d.stop() == 0


class GltfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.d = Daemon()
        cls.c = repose.Client(cls.d.sock)
        cls.c.load_urdf("arm", ARM_URDF, ARM_SRDF)
        cls.shapes = {
            "ball": {"sphere": {"center": [0.4, -0.2, 0.3], "radius": 0.05}},
            "post": {"capsule": {"a": [0.6, 0, 0], "b": [0.6, 0, 0.7], "radius": 0.1}},
            "tilted": {"capsule": {"a": [-0.3, 0.2, 0.1], "b": [0.1, 0.5, 0.9], "radius": 0.03}},
            "far": {"sphere": {"center": [1e4, -2e4, 3e3], "radius": 2.0}},
        }
        cls.c.scene_create("cell", cls.shapes)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.c.close()
        assert cls.d.stop() == 0

    def test_scene_and_robot_export_is_valid_and_on_the_surfaces(self) -> None:
        q = [0.3, -0.5, 0.1, -2.0, 0.2, 1.6, 0.7, 0.02]
        data = gltf.export(self.c, "cell", "arm", q)
        doc, read = parse_glb(data)
        names = [n["name"] for n in doc["nodes"]]
        info = self.c.model_get("arm")
        self.assertEqual(names[:4], sorted(self.shapes))
        self.assertEqual(sorted(names[4:]), sorted(f"arm/{s['id']}" for s in info["shapes"]))
        poses = self.c.model_fk("arm", q)["links"]
        world = dict(self.shapes)
        for s in info["shapes"]:
            world[f"arm/{s['id']}"] = gltf.place(s["shape"], poses[s["link"]])
        for n in doc["nodes"]:
            prim = doc["meshes"][n["mesh"]]["primitives"][0]
            self.assertEqual(prim["material"], 1 if n["name"].startswith("arm/") else 0)
            shape = world[n["name"]]
            body = shape.get("sphere") or shape["capsule"]
            a = body.get("center") or body["a"]
            b = body.get("center") or body["b"]
            r = body["radius"]
            scale = max(1.0, max(abs(x) for x in a + b))
            for p in read(prim["attributes"]["POSITION"]):
                # float32 positions: within a few ulps of the surface
                self.assertAlmostEqual(seg_dist(p, a, b), r, delta=1e-6 * scale + 1e-6,
                                       msg=n["name"])

    def test_a_robot_link_is_where_model_fk_puts_it(self) -> None:
        # A shape of the base link, posed at the identity, keeps its coordinates.
        info = self.c.model_get("arm")
        base = [s for s in info["shapes"] if s["link"] == info["root"]][0]
        poses = self.c.model_fk("arm", [0.0] * len(info["joints"]))["links"]
        self.assertEqual(gltf.place(base["shape"], poses[info["root"]]), base["shape"])
        # A quarter turn about z maps x to y.
        turned = gltf.place({"sphere": {"center": [1, 0, 0], "radius": 1}},
                            {"translation": [0, 0, 1], "rotation": {"w": math.sqrt(0.5), "x": 0,
                                                                    "y": 0, "z": math.sqrt(0.5)}})
        c = turned["sphere"]["center"]
        self.assertAlmostEqual(c[0], 0, places=12)
        self.assertAlmostEqual(c[1], 1, places=12)
        self.assertAlmostEqual(c[2], 1, places=12)

    def test_objects_are_exported_in_world_coordinates(self) -> None:
        leg = {"capsule": {"a": [0, 0, 0], "b": [0, 0, 0.75], "radius": 0.0625}}
        self.c.scene_create("objs", {"own": {"sphere": {"center": [3, 0, 0], "radius": 0.5}}},
                            objects={"table": {"pose": repose.pose([1, 2, 0], (0, 0, 0, 1)),
                                               "shapes": {"leg": leg}}})
        world = gltf.scene_shapes(self.c, "objs")
        self.assertEqual(sorted(world), ["own", "table/leg"])
        self.assertEqual(world["table/leg"]["capsule"]["a"], [1, 2, 0])
        doc, read = parse_glb(gltf.export(self.c, "objs"))
        nodes = {n["name"]: n for n in doc["nodes"]}
        self.assertEqual(sorted(nodes), ["own", "table/leg"])
        prim = doc["meshes"][nodes["table/leg"]["mesh"]]["primitives"][0]
        for p in read(prim["attributes"]["POSITION"]):
            self.assertAlmostEqual(seg_dist(p, [1, 2, 0], [1, 2, 0.75]), 0.0625, delta=1e-6)

    def test_robot_instances_are_exported_where_their_joints_put_them(self) -> None:
        q = [0.3, -0.5, 0.1, -2.0, 0.2, 1.6, 0.7, 0.02]
        base = repose.pose([0.5, -1, 0], (0, 0, 0, 1))
        leg = {"capsule": {"a": [0, 0, 0], "b": [0, 0, 0.75], "radius": 0.0625}}
        self.c.scene_create("robs", {"own": {"sphere": {"center": [3, 0, 0], "radius": 0.5}}},
                            objects={"table": {"pose": repose.pose([1, 2, 0]),
                                               "shapes": {"leg": leg}}},
                            robots={"r": {"model": "arm", "joints": q, "base": base}})
        info = self.c.model_get("arm")
        poses = self.c.model_fk("arm", q, base=base)["links"]
        want = {f"r/{s['id']}": gltf.place(s["shape"], poses[s["link"]]) for s in info["shapes"]}
        world = gltf.scene_shapes(self.c, "robs")
        self.assertEqual(sorted(world), sorted(["own", "table/leg", *want]))
        for sid, shape in want.items():
            kind = next(iter(shape))
            for key, v in shape[kind].items():
                if isinstance(v, list):
                    for x, y in zip(world[sid][kind][key], v):
                        self.assertAlmostEqual(x, y, places=9, msg=sid)
        doc, read = parse_glb(gltf.export(self.c, "robs"))
        nodes = {n["name"]: n for n in doc["nodes"]}
        self.assertEqual(sorted(nodes), sorted(world))
        for sid, shape in want.items():
            body = shape.get("sphere") or shape["capsule"]
            a = body.get("center") or body["a"]
            b = body.get("center") or body["b"]
            prim = doc["meshes"][nodes[sid]["mesh"]]["primitives"][0]
            self.assertEqual(prim["material"], 0)  # a scene shape like any other
            for p in read(prim["attributes"]["POSITION"]):
                self.assertAlmostEqual(seg_dist(p, a, b), body["radius"], delta=1e-5, msg=sid)
        # Robots alone (no objects) are placed too.
        self.c.scene_create("robs-only", robots={"r": {"model": "arm"}})
        self.assertEqual(len(gltf.scene_shapes(self.c, "robs-only")), len(info["shapes"]))
        self.c.scene_delete("robs")
        self.c.scene_delete("robs-only")

    def test_an_empty_scene_is_a_valid_file_with_no_nodes(self) -> None:
        self.c.scene_create("empty")
        doc, _ = parse_glb(gltf.export(self.c, "empty"))
        self.assertNotIn("nodes", doc)
        self.assertNotIn("buffers", doc)

    def test_the_command_writes_the_file(self) -> None:
        out = os.path.join(tempfile.mkdtemp(), "cell.glb")
        r = subprocess.run([sys.executable, "-m", "repose", "export", "cell", "--model", "arm",
                            "--joints", "[0,0,0,-1.5,0,1.5,0.7,0.02]", "-o", out,
                            "--unix", self.d.sock],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            doc, _ = parse_glb(f.read())
        self.assertEqual(len(doc["nodes"]), 4 + len(self.c.model_get("arm")["shapes"]))
        r = subprocess.run([sys.executable, "-m", "repose", "export", "nope", "-o", out,
                            "--unix", self.d.sock], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(r.returncode, 1)
        self.assertIn("code -32001", r.stderr)

    def test_clouds_are_points_at_their_centres(self) -> None:
        rng = random.Random(5)
        pts = [[rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0, 2)] for _ in range(300)]
        own = {"sphere": {"center": [3, 0, 0], "radius": 0.5}}
        self.c.scene_create("clouds", {"own": own},
                            clouds={"cam": {"points": pts, "radius": 0.01},
                                    "coarse": {"points": pts, "radius": 0.05, "voxel": 0.25},
                                    "none": {"points": [], "radius": 0.01}})
        clouds = self.c.scene_get("clouds")["clouds"]
        self.assertEqual(gltf.scene_contents(self.c, "clouds"), ({"own": own}, clouds))
        data = gltf.export(self.c, "clouds")
        doc, read = parse_glb(data)
        # Scene shapes, then one node per cloud named after it, sorted.
        self.assertEqual([n["name"] for n in doc["nodes"]], ["own", "cam", "coarse", "none"])
        self.assertEqual(doc["materials"][2]["name"], "cloud")
        nodes = {n["name"]: n for n in doc["nodes"]}
        for name in ("cam", "coarse"):
            mesh = doc["meshes"][nodes[name]["mesh"]]
            self.assertEqual(mesh["name"], name)
            count = clouds[name]["count"]
            self.assertEqual(mesh["extras"], {"radius": clouds[name]["radius"], "count": count})
            (prim,) = mesh["primitives"]
            self.assertEqual((prim["mode"], prim["material"], sorted(prim["attributes"])),
                             (0, 2, ["POSITION"]))
            acc = doc["accessors"][prim["attributes"]["POSITION"]]
            self.assertEqual((acc["count"], acc["type"], acc["componentType"]),
                             (count, "VEC3", 5126))
            self.assertEqual(doc["bufferViews"][acc["bufferView"]]["byteLength"], 12 * count)
            # Vertex k is sphere name/k: the centres as stored, bit for bit.
            centres = repose.cloud_points(clouds[name], as_list=True)
            self.assertEqual([list(p) for p in read(prim["attributes"]["POSITION"])], centres)
            self.assertEqual(acc["min"], [min(p[j] for p in centres) for j in range(3)])
            self.assertEqual(acc["max"], [max(p[j] for p in centres) for j in range(3)])
        self.assertEqual(clouds["cam"]["count"], 300)
        self.assertLess(clouds["coarse"]["count"], 300)
        # An empty cloud: a node without a mesh (glTF has no empty accessor).
        self.assertEqual(nodes["none"], {"name": "none", "extras": {"radius": 0.01, "count": 0}})
        # The buffer holds every view, each on a 4-byte boundary.
        end = max(v["byteOffset"] + v["byteLength"] for v in doc["bufferViews"])
        self.assertEqual(doc["buffers"][0]["byteLength"], end + (-end % 4))
        # The command line writes the same file.
        out = os.path.join(tempfile.mkdtemp(), "clouds.glb")
        r = subprocess.run([sys.executable, "-m", "repose", "export", "clouds", "-o", out,
                            "--unix", self.d.sock], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), data)
        self.c.scene_delete("clouds")

    def test_a_halfspace_is_drawn_around_the_clouds_too(self) -> None:
        cloud = {"radius": 0.5, "points": [[10, 20, 0], [14, 20, 3]]}
        self.assertEqual(gltf.cloud_bounds(cloud["points"], 0.5), ((9.5, 19.5, -0.5),
                                                                   (14.5, 20.5, 3.5)))
        self.assertIsNone(gltf.cloud_bounds([], 0.5))
        floor = {"halfspace": {"normal": [0, 0, 1], "offset": -1}}
        doc, read = parse_glb(gltf.to_glb(TESS, {"floor": floor}, clouds={"c": cloud}))
        self.assertEqual([n["name"] for n in doc["nodes"]], ["floor", "c"])
        centre, size = gltf.halfspace_square([floor], [gltf.cloud_bounds(cloud["points"], 0.5)])
        self.assertEqual(centre, (12.0, 20.0, 1.5))
        self.assertEqual(size, gltf.HALFSPACE_SCALE * math.sqrt(5 * 5 + 1 * 1 + 4 * 4))
        square = read(doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"])
        mid = [sum(p[j] for p in square[:4]) / 4 for j in range(3)]
        for got, want in zip(mid, [12.0, 20.0, -1.0]):  # under the cloud, in the plane
            self.assertAlmostEqual(got, want, delta=1e-5)  # float32 corners
        # A cloud given as it is put (points rows) is drawn from them.
        prim = doc["meshes"][1]["primitives"][0]
        self.assertEqual(read(prim["attributes"]["POSITION"]), [(10, 20, 0), (14, 20, 3)])

    def test_the_checker_catches_broken_files(self) -> None:
        good = gltf.to_glb(TESS, {"s": self.shapes["ball"]})
        parse_glb(good)
        bad_len = good[:8] + struct.pack("<I", len(good) + 4) + good[12:]
        with self.assertRaises(AssertionError):
            parse_glb(bad_len)
        with self.assertRaises(AssertionError):
            parse_glb(good[:-4])


def quat(axis, angle):
    """The unit quaternion of a rotation by angle about axis."""
    n = math.sqrt(sum(a * a for a in axis))
    s = math.sin(angle / 2) / n
    return {"w": math.cos(angle / 2), "x": axis[0] * s, "y": axis[1] * s, "z": axis[2] * s}


def matrix(q):
    """R(q) for a unit Hamilton quaternion (active rotation), rows."""
    w, x, y, z = q["w"], q["x"], q["y"], q["z"]
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def apply(m, p):
    return [sum(m[i][j] * p[j] for j in range(3)) for i in range(3)]


def conj(q):
    return {"w": q["w"], "x": -q["x"], "y": -q["y"], "z": -q["z"]}


def sub(a, b):
    return [a[j] - b[j] for j in range(3)]


def dot(a, b):
    return sum(a[j] * b[j] for j in range(3))


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def length(a):
    return math.sqrt(dot(a, a))


def corners(center, h, q):
    """center + R(q) (+-h0, +-h1, +-h2): the box's eight corners."""
    m = matrix(q)
    return [[center[j] + apply(m, [sx * h[0], sy * h[1], sz * h[2]])[j] for j in range(3)]
            for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]


def distinct(points, tol=1e-12):
    out = []
    for p in points:
        if all(max(abs(p[j] - o[j]) for j in range(3)) > tol for o in out):
            out.append(p)
    return out


IDENTITY = {"w": 1.0, "x": 0.0, "y": 0.0, "z": 0.0}


def boxes():
    """(center, half_extents, rotation) of solid, flat, thin and point boxes,
    rotated and not, and 30 random ones."""
    out = [([0.3, -1.2, 2.0], [0.5, 0.2, 0.1], quat([1, 2, 3], 0.7)),
           ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], IDENTITY),
           ([5.0, 5.0, -3.0], [0.4, 0.0, 0.25], quat([0, 1, 1], 2.5)),
           ([1.0, 2.0, 3.0], [0.0, 0.3, 0.0], quat([1, 0, 0], -1.1)),
           ([-2.0, 0.5, 0.0], [0.0, 0.0, 0.0], quat([0, 0, 1], 0.3)),
           ([0.0, 0.0, 1.0], [2.0, 0.5, 0.05], quat([0.3, -0.2, 1], math.pi))]
    rng = random.Random(20240611)
    for _ in range(30):
        h = [rng.choice([0.0, rng.uniform(0.001, 2.0)]) for _ in range(3)]
        out.append(([rng.uniform(-10, 10) for _ in range(3)], h,
                    quat([rng.gauss(0, 1) for _ in range(3)], rng.uniform(-math.pi, math.pi))))
    return out


class BoxAndHalfspaceTest(unittest.TestCase):
    """The new kinds on hand-made shapes: the daemon need not store them."""

    def check_winding(self, pos, nrm, idx):
        """Every triangle's three normals agree and its edges' cross product,
        when it has an area, points along them; returns the unit cross
        products of the triangles with an area."""
        faces = []
        for t in range(0, len(idx), 3):
            a, b, c = (idx[t + k] for k in range(3))
            self.assertEqual(nrm[a], nrm[b])
            self.assertEqual(nrm[a], nrm[c])
            n = cross(sub(pos[b], pos[a]), sub(pos[c], pos[a]))
            if length(n) > 1e-12:
                n = [x / length(n) for x in n]
                for j in range(3):
                    self.assertAlmostEqual(n[j], nrm[a][j], delta=1e-9)
                faces.append(n)
        return faces

    def test_box_vertices_lie_on_the_box_surface(self) -> None:
        for center, h, q in boxes():
            pos, nrm, idx = gltf.box_mesh(TESS, center, h, q)
            self.assertEqual((len(pos), len(nrm), len(idx)), (24, 24, 36))
            self.assertEqual(sorted(set(idx)), list(range(24)))
            back = matrix(conj(q))  # R(q)^-1
            for p in pos:
                u = apply(back, sub(p, center))
                for i in range(3):
                    if h[i] == 0:
                        self.assertLessEqual(abs(u[i]), 1e-12, (center, h, q))
                        continue
                    self.assertLessEqual(abs(u[i]) / h[i], 1 + 1e-9, (center, h, q))
                if any(h):
                    top = max(abs(u[i]) / h[i] for i in range(3) if h[i] > 0)
                    self.assertAlmostEqual(top, 1.0, delta=1e-9, msg=(center, h, q))

    def test_box_corners_are_center_plus_or_minus_rotated_extents(self) -> None:
        for center, h, q in boxes():
            pos, _, _ = gltf.box_mesh(TESS, center, h, q)
            want = distinct(corners(center, h, q))
            got = distinct(pos)
            self.assertEqual(len(got), len(want), (center, h, q))
            self.assertEqual(len(got), 2 ** sum(1 for x in h if x > 0))
            for p in got:
                self.assertTrue(any(max(abs(p[j] - c[j]) for j in range(3)) <= 1e-12
                                    for c in want), (p, center, h, q))

    def test_box_normals_are_unit_outward_and_the_faces_counter_clockwise(self) -> None:
        for center, h, q in boxes():
            pos, nrm, idx = gltf.box_mesh(TESS, center, h, q)
            cols = [[row[i] for row in matrix(q)] for i in range(3)]
            for p, n in zip(pos, nrm):
                self.assertTrue(all(math.isfinite(x) for x in n))
                self.assertAlmostEqual(length(n), 1.0, delta=1e-12)
                self.assertGreaterEqual(dot(n, sub(p, center)), -1e-12)
                # a face normal is +-axis i, and the face lies at u_i = +-h_i
                i = max(range(3), key=lambda k: abs(dot(n, cols[k])))
                self.assertAlmostEqual(abs(dot(n, cols[i])), 1.0, delta=1e-12)
                self.assertAlmostEqual(dot(n, sub(p, center)), h[i], delta=1e-12)
            faces = self.check_winding(pos, nrm, idx)
            # six faces with an area for a solid box, the two sides of a
            # rectangle, none for a segment or a point
            zero = sum(1 for x in h if x == 0)
            self.assertEqual(len(faces), {0: 12, 1: 4, 2: 0, 3: 0}[zero], (center, h, q))
            if zero == 1:  # a flat box: both sides drawn, facing opposite ways
                j = h.index(0.0)
                sides = sorted(round(dot(f, cols[j])) for f in faces)
                self.assertEqual(sides, [-1, -1, 1, 1])

    def test_a_box_without_rotation_is_axis_aligned(self) -> None:
        shape = {"box": {"center": [1, 2, 3], "half_extents": [0.5, 0.25, 0.125]}}
        pos, nrm, idx = gltf.shape_mesh(TESS, shape)
        self.assertEqual(sorted(list(p) for p in distinct(pos)),
                         sorted(corners([1, 2, 3], [0.5, 0.25, 0.125], IDENTITY)))
        self.assertEqual((pos, nrm, idx), gltf.box_mesh(TESS, [1, 2, 3], [0.5, 0.25, 0.125], IDENTITY))
        self.assertEqual(sorted(set(nrm)), sorted({(s * (i == 0), s * (i == 1), s * (i == 2))
                                                    for i in range(3) for s in (-1.0, 1.0)}))
        # and the capsules' winding is the same: counter-clockwise from outside
        pos, nrm, idx = gltf.capsule_mesh(TESS, (0.1, 0.2, 0.3), (0.5, -0.2, 0.9), 0.2)
        for t in range(0, len(idx), 3):
            a, b, c = (idx[t + k] for k in range(3))
            n = cross(sub(pos[b], pos[a]), sub(pos[c], pos[a]))
            self.assertGreaterEqual(dot(n, nrm[a]), 0.0)

    def test_meshes_are_the_daemons_templates_placed(self) -> None:
        """One tessellation: the vertex and triangle counts are the
        templates' whatever the resolution asked of the daemon, and the
        capsule's vertex k lies along template direction k."""
        d = Daemon()
        try:
            with repose.Client(d.sock) as c:
                coarse = gltf.Tessellation.of(c, segments=8, rings=2)
                with self.assertRaises(repose.InvalidParams):
                    c.tessellation(segments=2)
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertEqual(len(coarse.directions), 8 * 2 * 3)
        for tess in (TESS, coarse):
            pos, nrm, idx = gltf.capsule_mesh(tess, (0.0, 0.0, 0.0), (0.0, 0.0, 2.0), 0.5)
            self.assertEqual((len(pos), len(idx)), (len(tess.directions),
                                                    len(tess.round_triangles)))
            for p, dvec, e in zip(pos, tess.directions, tess.ends):
                # w = +z here: a point's height tells its end and latitude
                self.assertAlmostEqual(p[2], 2.0 * e + 0.5 * dvec[2], delta=1e-12)
        self.assertLess(len(gltf.capsule_mesh(coarse, (0, 0, 0), (1, 0, 0), 1)[0]),
                        len(gltf.capsule_mesh(TESS, (0, 0, 0), (1, 0, 0), 1)[0]))

    def test_bad_shapes_are_refused(self) -> None:
        with self.assertRaises(ValueError):
            gltf.box_mesh(TESS, [0, 0, 0], [1, -0.1, 1])
        with self.assertRaises(ValueError):
            gltf.box_mesh(TESS, [0, 0, 0], [1, 1, 1], {"w": 0, "x": 0, "y": 0, "z": 0})
        with self.assertRaises(ValueError):
            gltf.halfspace_mesh(TESS, [0, 0, 0], 1.0, 10.0)
        with self.assertRaises(ValueError):
            gltf.halfspace_mesh(TESS, [0, 0, 1], 1.0, 0.0)
        with self.assertRaises(ValueError):
            gltf.shape_mesh(TESS, {"cone": {}})
        with self.assertRaises(ValueError):
            gltf.place({"cone": {}}, {"translation": [0, 0, 0], "rotation": IDENTITY})

    def test_a_halfspace_is_a_two_sided_square_in_its_plane(self) -> None:
        cases = [([0, 0, 1], 0.0, 10.0, None),
                 ([0, 0, 2], 1.0, 10.0, [3, 4, 5]),  # normalised: z <= 0.5
                 ([1, -2, 0.5], -0.7, 3.5, [0.2, -0.1, 4.0]),
                 ([-1, 0, 0], 0.25, 40.0, [10, -20, 30]),
                 ([0.3, 0.3, -0.9], 2.0, 12.5, [-1, -1, -1])]
        for normal, offset, size, centre in cases:
            ln = length(normal)
            n, d = [x / ln for x in normal], offset / ln
            pos, nrm, idx = gltf.halfspace_mesh(TESS, normal, offset, size, centre)
            self.assertEqual((len(pos), len(nrm), len(idx)), (8, 8, 12))
            for p in pos:
                self.assertAlmostEqual(dot(n, p), d, delta=1e-9)
            c = centre or [0.0, 0.0, 0.0]
            foot = [c[j] - (dot(n, c) - d) * n[j] for j in range(3)]
            square = pos[:4]
            self.assertEqual(pos[4:], square)  # the same square from below
            mid = [sum(p[j] for p in square) / 4 for j in range(3)]
            for j in range(3):
                self.assertAlmostEqual(mid[j], foot[j], delta=1e-9)
            for k in range(4):  # sides `size`, diagonals size * sqrt(2): a square
                self.assertAlmostEqual(length(sub(square[(k + 1) % 4], square[k])), size,
                                       delta=1e-9 * size)
            for k in range(2):
                self.assertAlmostEqual(length(sub(square[k + 2], square[k])),
                                       size * math.sqrt(2), delta=1e-9 * size)
            for k, m in enumerate(nrm):
                for j in range(3):
                    self.assertAlmostEqual(m[j], n[j] if k < 4 else -n[j], delta=1e-15)
            faces = self.check_winding(pos, nrm, idx)
            self.assertEqual(sorted(round(dot(f, n)) for f in faces), [-1, -1, 1, 1])
        # shape_mesh passes the centre and size along
        self.assertEqual(gltf.shape_mesh(TESS, {"halfspace": {"normal": [0, 1, 0], "offset": 2}},
                                         [1, 1, 1], 7.0),
                         gltf.halfspace_mesh(TESS, [0, 1, 0], 2, 7.0, [1, 1, 1]))

    def test_place_moves_a_rotated_box_like_its_corners(self) -> None:
        box = {"box": {"center": [0.1, -0.3, 0.45], "half_extents": [0.2, 0.05, 0.3],
                       "rotation": quat([1, -1, 2], 0.9)}}
        pose = {"translation": [1.5, -0.5, 0.8], "rotation": quat([0.2, 1, -0.4], -2.2)}
        placed = gltf.place(box, pose)
        r = placed["box"]["rotation"]
        self.assertAlmostEqual(sum(r[k] ** 2 for k in "wxyz"), 1.0, delta=1e-14)
        self.assertEqual(placed["box"]["half_extents"], box["box"]["half_extents"])
        m = matrix(pose["rotation"])
        t = pose["translation"]
        want = [[apply(m, c)[j] + t[j] for j in range(3)]
                for c in corners(box["box"]["center"], box["box"]["half_extents"],
                                 box["box"]["rotation"])]
        got = distinct(gltf.shape_mesh(TESS, placed)[0])
        self.assertEqual(len(got), 8)
        for p in got:
            self.assertTrue(any(max(abs(p[j] - c[j]) for j in range(3)) <= 1e-12 for c in want))
        # a box link without a rotation turns with the pose
        bare = gltf.place({"box": {"center": [0, 0, 0], "half_extents": [1, 1, 1]}}, pose)
        self.assertEqual(bare["box"]["rotation"], pose["rotation"])
        # a half-space (never a link, but place takes it): its plane's points
        # go to the placed plane, inside stays inside
        hs = {"halfspace": {"normal": [0, 0.6, 0.8], "offset": 0.5}}
        moved = gltf.place(hs, pose)["halfspace"]
        for p, side in (([0, 0.3, 0.4], 0.0), ([0, 0, -1], -1.3), ([1, 1, 1], 0.9)):
            q = [apply(m, p)[j] + t[j] for j in range(3)]
            self.assertAlmostEqual(dot(moved["normal"], q) - moved["offset"], side, delta=1e-12)

    def test_a_glb_with_boxes_and_halfspaces_is_valid(self) -> None:
        crate = {"box": {"center": [-1.0, 1.0, 0.5], "half_extents": [0.5, 0.25, 0.5],
                         "rotation": quat([0, 0, 1], 0.4)}}
        sheet = {"box": {"center": [0.5, 0.5, 1.0], "half_extents": [0.3, 0.0, 0.2],
                         "rotation": IDENTITY}}
        ball = {"sphere": {"center": [3.0, 0.0, 1.0], "radius": 0.5}}
        floor = {"halfspace": {"normal": [0, 0, 1], "offset": 0.0}}
        wall = {"halfspace": {"normal": [-2, 0, 0], "offset": -8.0}}  # x >= 4
        link = {"box": {"center": [0.0, 0.0, 2.0], "half_extents": [0.1, 0.1, 0.2],
                        "rotation": quat([1, 0, 0], 0.3)}}
        shapes = {"crate": crate, "sheet": sheet, "ball": ball, "floor": floor, "wall": wall}
        doc, read = parse_glb(gltf.to_glb(TESS, shapes, {"arm/hand": link}))
        self.assertEqual([n["name"] for n in doc["nodes"]], sorted(shapes) + ["arm/hand"])
        # the bounded shapes' bounds, by hand
        pts = [c for s in (crate, sheet, link) for c in corners(
            s["box"]["center"], s["box"]["half_extents"], s["box"]["rotation"])]
        pts += [[3.0 + dx, dy, 1.0 + dz] for dx, dy, dz in
                ((0.5, 0.5, 0.5), (-0.5, -0.5, -0.5))]
        lo = [min(p[j] for p in pts) for j in range(3)]
        hi = [max(p[j] for p in pts) for j in range(3)]
        centre = [(lo[j] + hi[j]) / 2 for j in range(3)]
        size = max(10.0, 4 * length(sub(hi, lo)))
        self.assertGreater(size, 10.0)
        meshes = {n["name"]: doc["meshes"][n["mesh"]]["primitives"][0] for n in doc["nodes"]}
        for name, n, d in (("floor", [0, 0, 1], 0.0), ("wall", [-1, 0, 0], -4.0)):
            prim = meshes[name]
            self.assertEqual(prim["material"], 0)
            pos = read(prim["attributes"]["POSITION"])
            nrm = read(prim["attributes"]["NORMAL"])
            scale = size + max(abs(x) for x in centre)
            for p in pos:
                self.assertAlmostEqual(dot(n, p), d, delta=1e-6 * scale)
            foot = [centre[j] - (dot(n, centre) - d) * n[j] for j in range(3)]
            mid = [sum(p[j] for p in pos[:4]) / 4 for j in range(3)]
            for j in range(3):
                self.assertAlmostEqual(mid[j], foot[j], delta=1e-6 * scale)
            self.assertAlmostEqual(length(sub(pos[1], pos[0])), size, delta=1e-6 * scale)
            self.assertEqual(sorted(round(dot(m, n)) for m in nrm), [-1] * 4 + [1] * 4)
        for name, shape, material in (("crate", crate, 0), ("sheet", sheet, 0),
                                      ("arm/hand", link, 1)):
            prim = meshes[name]
            self.assertEqual(prim["material"], material)
            want = gltf.shape_mesh(TESS, shape)
            got = read(prim["attributes"]["POSITION"])
            self.assertEqual(len(got), 24)
            for p, w in zip(got, want[0]):
                for j in range(3):
                    self.assertAlmostEqual(p[j], w[j], delta=1e-6)
            self.assertEqual(read(prim["indices"]), want[2])
        # a half-space alone: 10 m, under the origin
        doc, read = parse_glb(gltf.to_glb(TESS, {"floor": {"halfspace": {"normal": [0, 0, 1],
                                                                   "offset": -1.0}}}))
        pos = read(doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"])
        self.assertEqual(sorted({tuple(p) for p in pos}),
                         sorted({(x, y, -1.0) for x in (-5.0, 5.0) for y in (-5.0, 5.0)}))


if __name__ == "__main__":
    unittest.main()
