# SPDX-License-Identifier: MIT
"""glTF export (repose.gltf, python -m repose export): the .glb structure
(header, chunk lengths and padding, accessor and buffer-view bounds, index
ranges, POSITION min/max) and the geometry (every vertex on its shape's
surface), against the real daemon for the scene and the robot."""

from __future__ import annotations

import json
import math
import os
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
            for j in range(3):
                assert acc["min"][j] == min(q[j] for q in pos), "POSITION min is not the minimum"
                assert acc["max"][j] == max(q[j] for q in pos), "POSITION max is not the maximum"
            nrm = read(p["attributes"]["NORMAL"])
            assert len(nrm) == len(pos)
            assert all(abs(math.sqrt(sum(c * c for c in q)) - 1) < 1e-5 for q in nrm)
            idx = read(p["indices"])
            assert len(idx) % 3 == 0 and idx, "indices are not whole triangles"
            assert max(idx) < len(pos), "an index past the vertices"
            assert 0 <= p["material"] < len(doc["materials"])
    for n in doc.get("nodes", []):
        assert 0 <= n["mesh"] < len(doc["meshes"])
    for i in doc["scenes"][doc["scene"]].get("nodes", []):
        assert 0 <= i < len(doc["nodes"])
    return doc, read


def seg_dist(p, a, b):
    ab = [b[j] - a[j] for j in range(3)]
    ap = [p[j] - a[j] for j in range(3)]
    den = sum(x * x for x in ab)
    t = 0.0 if den == 0 else max(0.0, min(1.0, sum(ap[j] * ab[j] for j in range(3)) / den))
    return math.sqrt(sum((ap[j] - t * ab[j]) ** 2 for j in range(3)))


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

    def test_the_checker_catches_broken_files(self) -> None:
        good = gltf.to_glb({"s": self.shapes["ball"]})
        parse_glb(good)
        bad_len = good[:8] + struct.pack("<I", len(good) + 4) + good[12:]
        with self.assertRaises(AssertionError):
            parse_glb(bad_len)
        with self.assertRaises(AssertionError):
            parse_glb(good[:-4])


if __name__ == "__main__":
    unittest.main()
