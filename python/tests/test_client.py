# SPDX-License-Identifier: MIT
"""The Python client against the real reposed (started here on a temporary
Unix socket and a TCP port, with and without a token).

Run: REPOSED=build/reposed python3 -m unittest discover -s python/tests
(ctest runs it as `python_client`).  Needs nothing beyond the standard
library; the numpy test runs when numpy is installed.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import repose  # noqa: E402
from repose.wire import CLOUD_JSON_MAX_POINTS, encode_cloud  # noqa: E402

try:
    import numpy  # type: ignore
except ImportError:  # pragma: no cover - numpy is optional
    numpy = None

REPOSED = os.environ.get("REPOSED", os.path.join(ROOT, "build", "reposed"))
ARM_URDF = os.path.join(ROOT, "tests", "data", "arm7.urdf")
ARM_SRDF = os.path.join(ROOT, "tests", "data", "arm7.srdf")


def sphere(x, y, z, r):
    return {"sphere": {"center": [x, y, z], "radius": r}}


def base64_of(values):
    """points_f32 text of float values (little-endian float32)."""
    import base64
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


class Daemon:
    """A reposed on a temporary socket and a free TCP port."""

    def __init__(self, *args: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="repose-py-")
        self.sock = os.path.join(self.dir, "reposed.sock")
        log_path = os.path.join(self.dir, "log")
        # The daemon writes through its own open file and the test reads
        # through another: one shared file offset would let a read's seek
        # send the daemon's next line over its first ones.
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(
                [REPOSED, "--unix", self.sock, "--tcp", "127.0.0.1:0", *args],
                stdout=log, stderr=subprocess.STDOUT)
        self.port = 0
        text = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(log_path) as log:
                text = log.read()
            m = re.search(r"listening on tcp 127\.0\.0\.1:(\d+)", text)
            if m and "ready" in text:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError("reposed did not start: " + text)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls) -> None:
        assert cls.d.stop() == 0

    def client(self, **kw) -> repose.Client:
        c = repose.Client(self.d.sock, **kw)
        self.addCleanup(c.close)
        return c

    def test_every_protocol_method_has_a_python_method(self) -> None:
        c = self.client()
        methods = c.hello()["methods"]
        self.assertIn("scene.put", methods)
        for m in methods:
            name = m.replace(".", "_")
            self.assertTrue(callable(getattr(c, name, None)), f"no Client.{name} for {m}")
            self.assertTrue(getattr(repose.Client, name).__doc__, f"Client.{name} has no docstring")

    def test_hello_and_stats_match_the_protocol_schema(self) -> None:
        # The transcripts replay hello and stats with wildcards ("*"), which
        # keep them out of the schema check: the live replies are checked
        # here, so a new limit or counter cannot miss proto/schemas.
        try:
            import jsonschema  # type: ignore
        except ImportError:
            self.skipTest("python3-jsonschema is not installed")
        with open(os.path.join(ROOT, "proto", "schemas", "protocol.schema.json")) as f:
            schema = json.load(f)
        schema.pop("oneOf")
        c = self.client()
        for method, result in (("hello", c.hello()), ("stats", c.stats())):
            v = jsonschema.Draft202012Validator({**schema, "$ref": "#/$defs/result/" + method})
            errors = [f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in v.iter_errors(result)]
            self.assertEqual(errors, [], method)

    def test_server_and_geometry_methods(self) -> None:
        c = self.client()
        self.assertEqual(c.ping(), {"pong": True})
        h = c.hello()
        self.assertEqual((h["server"], h["protocol"]), ("reposed", 1))
        self.assertIn("requests", c.stats())
        r = c.distance(sphere(0, 0, 0, 0.5), {"capsule": {"a": [2, -1, 0], "b": [2, 1, 0],
                                                          "radius": 0.25}}, witness=True)
        self.assertEqual(r["distance"], 1.25)
        self.assertEqual(r["point_a"], [0.5, 0, 0])
        self.assertEqual(r["normal"], [1, 0, 0])
        self.assertEqual(c.violates_margin(sphere(0, 0, 0, 1), sphere(3, 0, 0, 1), 1.5),
                         {"violates": True, "distance": 1})
        self.assertEqual(c.call("ping"), {"pong": True})

    def test_scene_methods(self) -> None:
        c = self.client()
        r = c.scene_create("py-scene", {"a": sphere(0, 0, 0, 0.5)})
        rev = r["revision"]
        self.assertEqual(r["scene"], "py-scene")
        self.assertIn({"scene": "py-scene", "revision": rev, "shapes": 1},
                      c.scene_list()["scenes"])
        r2 = c.scene_put("py-scene", {"b": sphere(2, 0, 0, 0.5)}, if_revision=rev)
        self.assertGreater(r2["revision"], rev)
        got = c.scene_get("py-scene")
        self.assertEqual(sorted(got["shapes"]), ["a", "b"])
        self.assertEqual(c.scene_get("py-scene", ids=["b"])["shapes"], {"b": sphere(2, 0, 0, 0.5)})
        q = sphere(0.9, 0, 0, 0.1)
        d = c.scene_distance("py-scene", q)
        self.assertAlmostEqual(d["distance"], 0.3, places=12)
        self.assertEqual(d["nearest"], {"query": None, "shape": "a"})
        self.assertEqual(d["revision"], r2["revision"])
        d2 = c.scene_distance("py-scene", shapes={"q": q}, max_distance=1.0)
        self.assertEqual([p["shape"] for p in d2["pairs"]], ["a", "b"])
        chk = c.scene_check("py-scene", 0.5, q, first_only=True)
        self.assertTrue(chk["violates"])
        self.assertEqual(len(chk["pairs"]), 1)
        r3 = c.scene_remove("py-scene", ["a", "zz"])
        self.assertEqual(r3["removed"], 1)
        r4 = c.scene_replace("py-scene", {"c": sphere(5, 5, 5, 1)})
        self.assertEqual(sorted(c.scene_get("py-scene")["shapes"]), ["c"])
        r5 = c.scene_delete("py-scene")
        self.assertTrue(r5["deleted"])
        self.assertGreater(r5["revision"], r4["revision"])

    def test_objects_put_move_get_ignore_and_remove(self) -> None:
        c = self.client()
        top = {"box": {"center": [0, 0, 0.75], "half_extents": [0.5, 0.25, 0.03125]}}
        leg = {"capsule": {"a": [0, 0, 0], "b": [0, 0, 0.75], "radius": 0.0625}}
        post = {"capsule": {"a": [2, 0, 0], "b": [2, 0, 1], "radius": 0.25}}
        rev = c.scene_create("py-obj", {"post": post})["revision"]
        with c.watch("py-obj", timeout=10) as w:
            r = c.scene_put("py-obj", objects={"table": {"pose": repose.pose([1, 0, 0]),
                                                         "shapes": {"top": top, "leg": leg}}},
                            if_revision=rev)
            self.assertEqual(r["scene"], "py-obj")
            # Half a turn about z, and 1 m along y, in one revision.
            moved = c.scene_move("py-obj", {"table": repose.pose([0, 1, 0], (0, 0, 0, 1))},
                                 if_revision=r["revision"])
            self.assertEqual(moved, {"scene": "py-obj", "revision": r["revision"] + 1})
            n1, n2 = next(w), next(w)
            self.assertEqual(n1.params["objects"]["table"]["pose"],
                             {"matrix": [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0]]})
            self.assertEqual(sorted(n1.params["objects"]["table"]["shapes"]), ["leg", "top"])
            self.assertEqual(n2.params["revision"], moved["revision"])
            self.assertEqual(n2.params["moved"],
                             {"table": {"matrix": [[-1, 0, 0, 0], [0, -1, 0, 1], [0, 0, 1, 0]]}})
        got = c.scene_get("py-obj")
        self.assertEqual(got["revision"], moved["revision"])
        self.assertEqual(got["shapes"], {"post": post})  # the scene's own shapes only
        table = got["objects"]["table"]
        self.assertEqual(table["pose"], {"matrix": [[-1, 0, 0, 0], [0, -1, 0, 1], [0, 0, 1, 0]]})
        self.assertEqual(table["shapes"]["leg"], leg)  # in the object's frame
        world = c.scene_get("py-obj", ids=["table/leg", "table/top"])["shapes"]
        self.assertEqual(world["table/leg"],
                         {"capsule": {"a": [0, 1, 0], "b": [0, 1, 0.75], "radius": 0.0625}})
        self.assertEqual(world["table/top"]["box"]["center"], [0, 1, 0.75])
        # The matrix the server wrote moves the object to the same place.
        r2 = c.scene_move("py-obj", {"table": table["pose"]})
        again = c.scene_get("py-obj")
        self.assertEqual(again["objects"], got["objects"])
        self.assertEqual(again["revision"], r2["revision"])
        q = sphere(0, 0, 0.5, 0.125)
        d = c.scene_distance("py-obj", q)
        self.assertEqual((d["distance"], d["nearest"]["shape"]), (0.65625, "table/top"))
        d = c.scene_distance("py-obj", q, ignore=["table"])
        self.assertEqual((d["distance"], d["nearest"]["shape"]), (1.625, "post"))
        d = c.scene_distance("py-obj", q, ignore="table")  # one name
        self.assertEqual(d["nearest"]["shape"], "post")
        q = sphere(0, 1, 0.5, 0.125)
        self.assertTrue(c.scene_check("py-obj", 0.0, q)["violates"])
        self.assertEqual(c.scene_check("py-obj", 0.0, q, ignore=("table",)),
                         {"revision": r2["revision"], "violates": False, "pairs": []})
        # Checks: a one-sphere robot standing in the table's leg.
        c.model_put("py-obj-m", links=[{"id": "s", "frame": 0, "shape": sphere(0, 0, 0, 0.125)}])
        at = [repose.pose([0, 1, 0.5])]
        self.assertTrue(c.check("py-obj-m", scene="py-obj", frames=at)["collision"])
        self.assertFalse(c.check("py-obj-m", scene="py-obj", frames=at,
                                 ignore=["table"])["collision"])
        b = c.check_batch("py-obj-m", scene="py-obj", configurations=[{"frames": at}] * 2,
                          ignore=["table"])
        self.assertEqual([x["collision"] for x in b["results"]], [False, False])
        # Errors: an unknown object, a member id removed directly.
        with self.assertRaises(repose.NotFound) as e:
            c.scene_move("py-obj", {"chair": repose.pose([0, 0, 0])})
        self.assertEqual(e.exception.data, {"kind": "object", "name": "chair"})
        with self.assertRaises(repose.NotFound) as e:
            c.scene_distance("py-obj", q, ignore=["chair"])
        self.assertEqual(e.exception.data["kind"], "object")
        with self.assertRaises(repose.RevisionConflict):
            c.scene_move("py-obj", {"table": {}}, if_revision=rev)
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_remove("py-obj", ["table/leg"])
        self.assertEqual(e.exception.path, "params.ids[0]")
        # Removal by name takes the object and its shapes.
        self.assertEqual(c.scene_remove("py-obj", ["table"])["removed"], 1)
        got = c.scene_get("py-obj")
        self.assertNotIn("objects", got)
        self.assertEqual(got["shapes"], {"post": post})
        with self.assertRaises(repose.NotFound):
            c.scene_get("py-obj", ids=["table/leg"])
        # scene.replace and scene.create take objects too.
        c.scene_replace("py-obj", objects={"o": {"shapes": {"s": sphere(0, 0, 0, 1)}}})
        self.assertEqual(c.scene_get("py-obj")["shapes"], {})
        c.scene_create("py-obj2", objects={"o": {"pose": repose.pose(rotation=[1, 0, 0, 0]),
                                                 "shapes": {"s": sphere(0, 0, 0, 1)}}})
        self.assertEqual(sorted(c.scene_get("py-obj2")["objects"]), ["o"])

    # A two-joint arm in the kinematic JSON form (proto/examples/robots.jsonl).
    ARM_JOINTS = [
        {"name": "j1", "type": "revolute", "parent": "base", "child": "l1",
         "origin": {"xyz": [0, 0, 0.25]}, "axis": [0, 0, 1], "limits": {"lower": -3, "upper": 3}},
        {"name": "j2", "type": "revolute", "parent": "l1", "child": "l2",
         "origin": {"xyz": [0.5, 0, 0]}, "axis": [0, 0, 1], "limits": {"lower": -2, "upper": 2}}]
    ARM_LINKS = [
        {"id": "base#0", "link": "base", "shape": sphere(0, 0, 0, 0.125)},
        {"id": "l1#0", "link": "l1",
         "shape": {"capsule": {"a": [0, 0, 0], "b": [0.5, 0, 0], "radius": 0.0625}}},
        {"id": "l2#0", "link": "l2",
         "shape": {"capsule": {"a": [0.0625, 0, 0], "b": [0.375, 0, 0], "radius": 0.0625}}}]

    def test_robots_put_move_get_ignore_and_remove(self) -> None:
        c = self.client()
        m = "py-rob-arm"
        c.model_put(m, joints=self.ARM_JOINTS, links=self.ARM_LINKS, allow_adjacent=True)
        top = {"box": {"center": [0, 0, 0.5], "half_extents": [0.25, 0.5, 0.03125]}}
        r1_base = repose.pose([0, -0.75, 0])
        rev = c.scene_create(
            "py-rob", objects={"table": {"pose": repose.pose([1, 0, 0]), "shapes": {"top": top}}},
            robots={"r1": {"model": m, "joints": [0, 0], "base": r1_base},
                    "r2": {"model": m, "base": repose.pose([0, 0.75, 0], (0, 0, 0, 1))}})["revision"]
        with c.watch("py-rob", timeout=10) as w:
            # A robot's joints and the table in one revision.
            moved = c.scene_move("py-rob", {"table": repose.pose([1.25, 0, 0])},
                                 robots={"r1": {"joints": [0.5, -0.25]}}, if_revision=rev)
            self.assertEqual(moved, {"scene": "py-rob", "revision": rev + 1})
            n = next(w)
            self.assertEqual(n.params["revision"], moved["revision"])
            self.assertEqual(n.params["moved"], {
                "table": {"matrix": [[1, 0, 0, 1.25], [0, 1, 0, 0], [0, 0, 1, 0]]},
                "r1": {"joints": [0.5, -0.25],
                       "base": {"matrix": [[1, 0, 0, 0], [0, 1, 0, -0.75], [0, 0, 1, 0]]}}})
            # A robot put: scene.changed carries it whole (joints by name here).
            r = c.scene_put("py-rob", robots={"r3": {"model": m, "joints": {"j2": 0.5},
                                                     "base": repose.pose([3, 0, 0])}})
            n = next(w)
            self.assertEqual(n.params["revision"], r["revision"])
            self.assertEqual(n.params["robots"], {"r3": {
                "model": m, "joints": [0, 0.5],
                "base": {"matrix": [[1, 0, 0, 3], [0, 1, 0, 0], [0, 0, 1, 0]]}}})
        got = c.scene_get("py-rob")
        self.assertEqual(got["shapes"], {})
        self.assertEqual(sorted(got["objects"]), ["table"])  # robots are not listed as objects
        self.assertEqual(got["robots"], {
            "r1": {"model": m, "joints": [0.5, -0.25],
                   "base": {"matrix": [[1, 0, 0, 0], [0, 1, 0, -0.75], [0, 0, 1, 0]]}},
            "r2": {"model": m, "joints": [0, 0],
                   "base": {"matrix": [[-1, 0, 0, 0], [0, -1, 0, 0.75], [0, 0, 1, 0]]}},
            "r3": {"model": m, "joints": [0, 0.5],
                   "base": {"matrix": [[1, 0, 0, 3], [0, 1, 0, 0], [0, 0, 1, 0]]}}})
        # World shapes by id: "name/<model shape id>" where FK puts them.
        world = c.scene_get("py-rob", ids=["r1/l1#0", "r2/l1#0"])["shapes"]
        self.assertEqual(world["r2/l1#0"], {"capsule": {"a": [0, 0.75, 0.25],
                                                        "b": [-0.5, 0.75, 0.25],
                                                        "radius": 0.0625}})
        cap = world["r1/l1#0"]["capsule"]
        self.assertEqual(cap["a"], [0, -0.75, 0.25])
        for got_v, want in zip(cap["b"], [0.5 * math.cos(0.5), -0.75 + 0.5 * math.sin(0.5), 0.25]):
            self.assertAlmostEqual(got_v, want, places=12)
        # Moved by base alone, then by joints alone: what is left out stays.
        c.scene_move("py-rob", robots={"r3": {"base": repose.pose([3, 1, 0])}})
        c.scene_move("py-rob", robots={"r3": {"joints": {"j1": 0.25}}})
        self.assertEqual(c.scene_get("py-rob")["robots"]["r3"], {
            "model": m, "joints": [0.25, 0],
            "base": {"matrix": [[1, 0, 0, 3], [0, 1, 0, 1], [0, 0, 1, 0]]}})
        # A check of the arm where r1 stands hits r1 itself; ignoring r1 it is free.
        hit = c.check(m, scene="py-rob", joints=[0.5, -0.25], base=r1_base)
        self.assertTrue(hit["collision"])
        self.assertEqual(hit["closest"]["other"].split("/")[0], "r1")
        free = c.check(m, scene="py-rob", joints=[0.5, -0.25], base=r1_base, ignore=["r1"])
        self.assertEqual((free["collision"], free["valid"]), (False, True))
        self.assertEqual(free["scene_revision"], c.scene_get("py-rob")["revision"])
        probe = sphere(0, -0.75, 0, 0.0625)
        self.assertEqual(c.scene_distance("py-rob", probe)["nearest"]["shape"], "r1/base#0")
        nearest = c.scene_distance("py-rob", probe, ignore="r1")["nearest"]["shape"]
        self.assertFalse(nearest.startswith("r1/"), nearest)
        # The model cannot go, nor be replaced, while robots use it.
        with self.assertRaises(repose.AlreadyExists) as e:
            c.model_delete(m)
        data = e.exception.data
        self.assertEqual((data["kind"], data["name"], data["scene"]), ("model", m, "py-rob"))
        self.assertIn(data["robot"], ("r1", "r2", "r3"))
        self.assertIn(f"used by robot '{data['robot']}' of scene 'py-rob'", str(e.exception))
        with self.assertRaises(repose.AlreadyExists) as e:
            c.model_put(m, joints=self.ARM_JOINTS, links=self.ARM_LINKS)
        self.assertEqual(e.exception.data["scene"], "py-rob")
        # Errors.
        with self.assertRaises(repose.NotFound) as e:
            c.scene_move("py-rob", robots={"r9": {"joints": [0, 0]}})
        self.assertEqual(e.exception.data, {"kind": "robot", "name": "r9"})
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_move("py-rob", robots={"table": {"joints": [0, 0]}})
        self.assertEqual(e.exception.path, "params.robots.table")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_move("py-rob", {"r1": repose.pose([0, 0, 0])})
        self.assertEqual(e.exception.path, "params.objects.r1")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_move("py-rob")
        self.assertEqual(e.exception.path, "params")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_put("py-rob", robots={"r4": {"model": m, "joints": [0, 0, 0]}})
        self.assertEqual(e.exception.path, "params.robots.r4.joints")
        with self.assertRaises(repose.NotFound) as e:
            c.scene_put("py-rob", robots={"r4": {"model": "py-no-model"}})
        self.assertEqual(e.exception.data, {"kind": "model", "name": "py-no-model"})
        c.model_put("py-rob-frames", links=[{"id": "s", "frame": 0, "shape": sphere(0, 0, 0, 1)}])
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_put("py-rob", robots={"r4": {"model": "py-rob-frames"}})
        self.assertEqual(e.exception.path, "params.robots.r4.model")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_remove("py-rob", ["r1/l1#0"])  # a robot's own shape
        self.assertEqual(e.exception.path, "params.ids[0]")
        # Removal by name takes the instance and its shapes.
        self.assertEqual(c.scene_remove("py-rob", ["r1"])["removed"], 1)
        self.assertEqual(sorted(c.scene_get("py-rob")["robots"]), ["r2", "r3"])
        with self.assertRaises(repose.NotFound):
            c.scene_get("py-rob", ids=["r1/l1#0"])
        self.assertEqual(c.scene_remove("py-rob", ["r2", "r3"])["removed"], 2)
        self.assertNotIn("robots", c.scene_get("py-rob"))
        self.assertTrue(c.model_delete(m)["deleted"])
        # scene.replace takes robots too.
        c.model_put(m, joints=self.ARM_JOINTS, links=self.ARM_LINKS, allow_adjacent=True)
        c.scene_replace("py-rob", robots={"only": {"model": m}})
        got = c.scene_get("py-rob")
        self.assertEqual((sorted(got["robots"]), "objects" in got), (["only"], False))

    @unittest.skipUnless(numpy is not None, "numpy is not installed")
    def test_robot_joints_from_numpy(self) -> None:
        c = self.client()
        m = "py-rob-np"
        c.model_put(m, joints=self.ARM_JOINTS, links=self.ARM_LINKS, allow_adjacent=True)
        q = numpy.array([0.1, -0.3])
        c.scene_create("py-rob-np", robots={"r": {"model": m, "joints": q,
                                                  "base": repose.pose(numpy.array([1.0, 0, 0]))}})
        self.assertEqual(c.scene_get("py-rob-np")["robots"]["r"]["joints"], [0.1, -0.3])
        q2 = numpy.linspace(-0.7, 0.9, 2)
        c.scene_move("py-rob-np", robots={"r": {"joints": q2}})
        self.assertEqual(c.scene_get("py-rob-np")["robots"]["r"]["joints"], q2.tolist())
        with self.assertRaisesRegex(ValueError, r"params\.robots\.r\.joints\[1\]"):
            c.scene_move("py-rob-np", robots={"r": {"joints": numpy.array([0.0, numpy.nan])}})

    def test_clouds_put_get_query_ignore_and_remove(self) -> None:
        c = self.client()
        post = {"capsule": {"a": [2, 0, 0], "b": [2, 0, 1], "radius": 0.25}}
        # Points that float32 holds exactly, so the centres compare exactly.
        pts = [[0.5, 0, 0.75], [0.5, 0.125, 0.75], [1, 0, 0.75], [1.0625, 0, 0.75]]
        cam = {"points": pts, "radius": 0.0625}
        self.assertEqual(encode_cloud(cam), cam)  # a short list goes as JSON points
        rev = c.scene_create("py-cloud", {"post": post}, clouds={"cam": cam})["revision"]
        got = c.scene_get("py-cloud")
        self.assertEqual((got["revision"], got["shapes"]), (rev, {"post": post}))
        self.assertEqual(sorted(got["clouds"]), ["cam"])
        stored = got["clouds"]["cam"]
        self.assertEqual((stored["radius"], stored["count"]), (0.0625, 4))
        centres = repose.cloud_points(stored, as_list=True)
        self.assertEqual(sorted(centres), sorted(pts))
        # A query names the sphere it hits "cam/k", k its row in points_f32.
        probe = sphere(1.0625, 0, 1.0, 0.0625)
        k = centres.index([1.0625, 0, 0.75])
        d = c.scene_distance("py-cloud", probe)
        self.assertEqual((d["distance"], d["nearest"]["shape"]), (0.125, f"cam/{k}"))
        chk = c.scene_check("py-cloud", 0.25, probe)
        self.assertEqual([p["shape"] for p in chk["pairs"]],
                         [f"cam/{k}", f"cam/{centres.index([1, 0, 0.75])}"])
        # ignore leaves the whole cloud out, in queries and checks.
        d = c.scene_distance("py-cloud", probe, ignore=["cam"])
        self.assertEqual((d["distance"], d["nearest"]["shape"]), (0.625, "post"))
        self.assertFalse(c.scene_check("py-cloud", 0.25, probe, ignore="cam")["violates"])
        c.model_put("py-cloud-m",
                    links=[{"id": "s", "frame": 0, "shape": sphere(0, 0, 0, 0.0625)}])
        at = [repose.pose([1.0625, 0, 1.0])]
        hit = c.check("py-cloud-m", scene="py-cloud", frames=at, report="closest")
        self.assertEqual((hit["collision"], hit["min_distance"], hit["closest"]["other"]),
                         (False, 0.125, f"cam/{k}"))
        hit = c.check("py-cloud-m", scene="py-cloud", frames=at, margin=0.25)
        self.assertTrue(hit["collision"])
        free = c.check("py-cloud-m", scene="py-cloud", frames=at, margin=0.25, ignore=["cam"])
        self.assertEqual((free["collision"], free["closest"]["other"]), (False, "post"))
        # scene.get's cloud put back as it is gives the same spheres.
        c.scene_put("py-cloud", clouds=got["clouds"])
        self.assertEqual(c.scene_get("py-cloud")["clouds"], got["clouds"])
        # A put replaces the cloud whole (voxels of 0.25 m here: two
        # centroids); scene.changed carries its radius and count.
        with c.watch("py-cloud", timeout=10) as w:
            r = c.scene_put("py-cloud", clouds={"cam": {"points": pts, "radius": 0.0625,
                                                        "voxel": 0.25}})
            n = next(w)
            self.assertEqual(n.params["revision"], r["revision"])
            self.assertEqual(n.params["clouds"], {"cam": {"radius": 0.0625, "count": 2}})
        voxels = repose.cloud_points(c.scene_get("py-cloud")["clouds"]["cam"], as_list=True)
        self.assertEqual(sorted(voxels), [[0.5, 0.0625, 0.75], [1.03125, 0, 0.75]])
        # The daemon's refusals, at their paths.
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_put("py-cloud", clouds={"cam": {"points": pts, "radius": -1}})
        self.assertEqual(e.exception.path, "params.clouds.cam.radius")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_put("py-cloud", clouds={"cam": {**got["clouds"]["cam"], "count": 3}})
        self.assertEqual(e.exception.path, "params.clouds.cam.count")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_put("py-cloud", {"cam/0": sphere(0, 0, 0, 1)})
        self.assertEqual(e.exception.path, "params.shapes.cam/0")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_remove("py-cloud", ["cam/0"])  # one sphere of the cloud
        self.assertEqual(e.exception.path, "params.ids[0]")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_move("py-cloud", {"cam": repose.pose([1, 0, 0])})
        self.assertEqual(e.exception.path, "params.objects.cam")
        # Refused here, before anything is sent.
        with self.assertRaisesRegex(ValueError, r"^scene\.put: params\.clouds\.cam\.points"
                                                r"\[1\]\[2\] is not a finite number"):
            c.scene_put("py-cloud", clouds={"cam": {"points": [[0, 0, 0], [0, 0, math.nan]],
                                                    "radius": 0.1}})
        with self.assertRaisesRegex(ValueError, r"^scene\.put: params\.clouds\.cam\.points"
                                                r"\[1\] has 2 numbers, not 3"):
            c.scene_put("py-cloud", clouds={"cam": {"points": [[0, 0, 0], [0, 0]], "radius": 0.1}})
        with self.assertRaisesRegex(ValueError, "points or points_f32, not both"):
            c.scene_put("py-cloud", clouds={"cam": {**got["clouds"]["cam"], "points": pts}})
        self.assertEqual(c.scene_get("py-cloud")["revision"], r["revision"])  # nothing changed
        # Removal by name takes the cloud and every sphere of it.
        self.assertEqual(c.scene_remove("py-cloud", ["cam"])["removed"], 1)
        self.assertNotIn("clouds", c.scene_get("py-cloud"))
        self.assertEqual(c.scene_distance("py-cloud", probe)["nearest"]["shape"], "post")
        # scene.replace keeps only the clouds it lists (and needs no shapes).
        c.scene_replace("py-cloud", clouds={"a": cam, "b": {"points": [], "radius": 0}})
        got = c.scene_get("py-cloud")
        self.assertEqual((got["shapes"], sorted(got["clouds"])), ({}, ["a", "b"]))
        self.assertEqual(repose.cloud_points(got["clouds"]["b"], as_list=True), [])
        c.scene_replace("py-cloud", clouds={"b": cam})
        self.assertEqual(sorted(c.scene_get("py-cloud")["clouds"]), ["b"])

    def test_a_long_list_of_points_goes_as_float32(self) -> None:
        c = self.client()
        rng = random.Random(7)
        pts = [[rng.uniform(-2, 2), rng.uniform(-2, 2), rng.uniform(0, 2)] for _ in range(2000)]
        short = encode_cloud({"points": pts[:CLOUD_JSON_MAX_POINTS], "radius": 0.01})
        self.assertEqual(sorted(short), ["points", "radius"])
        long = encode_cloud({"points": pts[:CLOUD_JSON_MAX_POINTS + 1], "radius": 0.01})
        self.assertEqual(sorted(long), ["count", "points_f32", "radius"])
        self.assertEqual(long["count"], CLOUD_JSON_MAX_POINTS + 1)
        # Tuples, and a generator of rows, go too.
        c.scene_create("py-cloud-long", clouds={"cam": {"points": (tuple(p) for p in pts),
                                                        "radius": 0.01}})
        got = c.scene_get("py-cloud-long")["clouds"]["cam"]
        self.assertEqual(got["count"], 2000)
        as_f32 = [list(struct.unpack("<3f", struct.pack("<3f", *p))) for p in pts]
        self.assertEqual(sorted(repose.cloud_points(got, as_list=True)), sorted(as_f32))
        # The same points as JSON (in two halves of one request's clouds)
        # give the same float32 centres: the daemon rounds them alike.
        halves = {"a": {"points": pts[:1000], "radius": 0.01},
                  "b": {"points": pts[1000:], "radius": 0.01}}
        c.scene_put("py-cloud-long", clouds=halves)
        both = c.scene_get("py-cloud-long")["clouds"]
        self.assertEqual(sorted(repose.cloud_points(both["a"], as_list=True) +
                                repose.cloud_points(both["b"], as_list=True)), sorted(as_f32))
        # Refused here, naming the value.
        bad = [list(p) for p in pts]
        bad[1500][1] = math.inf
        with self.assertRaisesRegex(ValueError, r"^scene\.put: params\.clouds\.cam\.points"
                                                r"\[1500\]\[1\] is inf, not a finite float32"):
            c.scene_put("py-cloud-long", clouds={"cam": {"points": bad, "radius": 0.01}})
        bad[1500][1] = 1e39
        with self.assertRaisesRegex(ValueError, r"points\[1500\]\[1\] is 1e\+39, beyond float32"):
            c.scene_put("py-cloud-long", clouds={"cam": {"points": bad, "radius": 0.01}})
        bad[1500][1] = "x"
        with self.assertRaisesRegex(ValueError, r"points\[1500\]\[1\] is 'x', not a number"):
            c.scene_put("py-cloud-long", clouds={"cam": {"points": bad, "radius": 0.01}})
        self.assertEqual(c.scene_get("py-cloud-long")["clouds"]["cam"], got)

    def test_cloud_points_reads_a_cloud_without_numpy(self) -> None:
        cloud = {"radius": 0.5, "count": 2,
                 "points_f32": base64_of([0.5, -1, 2, 1e-3, 3, 4])}
        with mock.patch.dict(sys.modules, {"numpy": None}):  # as if numpy were not installed
            milli = struct.unpack("<f", struct.pack("<f", 1e-3))[0]  # 1e-3 in float32
            self.assertEqual(repose.cloud_points(cloud, as_list=True),
                             [[0.5, -1, 2], [milli, 3, 4]])
            with self.assertRaisesRegex(ImportError, "as_list=True"):
                repose.cloud_points(cloud)
            # A cloud as it is put, with rows: rounded to float32.
            self.assertEqual(repose.cloud_points({"points": [[0.1, 0, 0]]}, as_list=True),
                             [[struct.unpack("<f", struct.pack("<f", 0.1))[0], 0, 0]])
            self.assertEqual(repose.cloud_points({"points_f32": "", "count": 0}, as_list=True), [])
        with self.assertRaisesRegex(ValueError, "not base64"):
            repose.cloud_points({"points_f32": "AAAA AAAA"}, as_list=True)
        with self.assertRaisesRegex(ValueError, "not a multiple of 12"):
            repose.cloud_points({"points_f32": "AAAAAAAA"}, as_list=True)
        with self.assertRaisesRegex(ValueError, "holds 2 points, its count says 3"):
            repose.cloud_points({**cloud, "count": 3}, as_list=True)
        with self.assertRaisesRegex(ValueError, "points_f32"):
            repose.cloud_points({"radius": 1}, as_list=True)

    @unittest.skipUnless(numpy is not None, "numpy is not installed")
    def test_clouds_from_numpy_arrays_of_any_dtype_and_layout(self) -> None:
        c = self.client()
        rng = numpy.random.default_rng(11)
        big = rng.uniform(-3, 3, size=(600, 3))
        arrays = {
            "f64": big,
            "f32": big.astype(numpy.float32),
            "fortran": numpy.asfortranarray(big),
            "strided": big[::2, ::-1],  # a view: every other row, columns reversed
            "f16": big.astype(numpy.float16),
            "int": numpy.arange(30, dtype=numpy.int32).reshape(10, 3),
            "big-endian": big.astype(">f8"),
            "empty": numpy.zeros((0, 3)),
        }
        for name, a in arrays.items():
            sent = encode_cloud({"points": a, "radius": 0.02}, name)
            self.assertEqual(sorted(sent), ["count", "points_f32", "radius"], name)
            self.assertEqual(sent["count"], len(a), name)
        c.scene_create("py-cloud-np", clouds={name: {"points": a, "radius": 0.02}
                                              for name, a in arrays.items()})
        got = c.scene_get("py-cloud-np")["clouds"]
        for name, a in arrays.items():
            back = repose.cloud_points(got[name])
            self.assertEqual((back.shape, back.dtype), ((len(a), 3), numpy.float32), name)
            want = a.astype(numpy.float32)
            self.assertEqual(sorted(map(tuple, back.tolist())), sorted(map(tuple, want.tolist())),
                             name)
            self.assertEqual(back.tolist(), repose.cloud_points(got[name], as_list=True), name)
        # The centres read back, put back as an array: the same spheres, in
        # the same order (the order is that of the centres alone).
        back = repose.cloud_points(got["f64"])
        c.scene_put("py-cloud-np", clouds={"again": {"points": back, "radius": 0.02}})
        self.assertEqual(c.scene_get("py-cloud-np")["clouds"]["again"], got["f64"])
        # Refused here, naming the value.
        bad = big.copy()
        bad[42, 2] = numpy.nan
        with self.assertRaisesRegex(ValueError, r"^scene\.put: params\.clouds\.cam\.points"
                                                r"\[42\]\[2\] is nan, not a finite float32"):
            c.scene_put("py-cloud-np", clouds={"cam": {"points": bad, "radius": 0.02}})
        bad[42, 2] = 1e39  # finite in float64, not in float32
        with self.assertRaisesRegex(ValueError, r"points\[42\]\[2\] is 1e\+39, not a finite"):
            c.scene_put("py-cloud-np", clouds={"cam": {"points": bad, "radius": 0.02}})
        with self.assertRaisesRegex(ValueError, r"must be an \(N, 3\) array.*\(600, 2\)"):
            c.scene_put("py-cloud-np", clouds={"cam": {"points": big[:, :2], "radius": 0.02}})
        with self.assertRaisesRegex(ValueError, r"must be an \(N, 3\) array.*\(1800,\)"):
            c.scene_put("py-cloud-np", clouds={"cam": {"points": big.ravel(), "radius": 0.02}})
        self.assertNotIn("cam", c.scene_get("py-cloud-np")["clouds"])

    def test_pose_helper(self) -> None:
        self.assertEqual(repose.pose(), {})
        self.assertEqual(repose.pose([1, 2, 3], (1, 0, 0, 0)),
                         {"translation": [1.0, 2.0, 3.0],
                          "rotation": {"w": 1.0, "x": 0.0, "y": 0.0, "z": 0.0}})
        self.assertEqual(repose.pose(rotation=[0, 0, 0, 1]),
                         {"rotation": {"w": 0.0, "x": 0.0, "y": 0.0, "z": 1.0}})
        with self.assertRaisesRegex(ValueError, "3 numbers"):
            repose.pose([1, 2])
        with self.assertRaisesRegex(ValueError, "quaternion"):
            repose.pose(rotation=[1, 0, 0])
        if numpy is not None:
            self.assertEqual(repose.pose(numpy.array([1.0, 2, 3]), numpy.array([1.0, 0, 0, 0])),
                             repose.pose([1, 2, 3], [1, 0, 0, 0]))

    def test_check_motion_ignores_an_object(self) -> None:
        c = self.client()
        c.load_urdf("py-arm-obj", ARM_URDF, ARM_SRDF)
        dof = len(c.model_get("py-arm-obj")["joints"])
        # A ball object around the arm's base: every state collides with it.
        c.scene_create("py-obj-motion", objects={"ball": {"pose": repose.pose([0, 0, 0.2]),
                                                          "shapes": {"b": sphere(0, 0, 0, 0.3)}}})
        ready = [0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.7, 0.02]
        self.assertEqual(len(ready), dof)
        path = [ready, [0.2] + ready[1:]]
        blocked = c.check_motion("py-arm-obj", path, scene="py-obj-motion")
        self.assertFalse(blocked["valid"])
        self.assertEqual(blocked["first_invalid"]["kind"], "scene")
        free = c.check_motion("py-arm-obj", path, scene="py-obj-motion", ignore=["ball"])
        alone = c.check_motion("py-arm-obj", path)  # no scene at all
        self.assertTrue(alone["valid"])
        self.assertEqual((free["valid"], free["states_checked"]),
                         (True, alone["states_checked"]))
        with self.assertRaises(repose.InvalidParams) as e:
            c.check_motion("py-arm-obj", path, ignore=["ball"])  # no scene
        self.assertEqual(e.exception.path, "params.ignore")

    def test_plan_through_a_gap(self) -> None:
        c = self.client()
        c.model_put("py-puck", joints=[
            {"name": "x", "type": "prismatic", "parent": "base", "child": "mx",
             "axis": [1, 0, 0], "limits": {"lower": -1, "upper": 1}},
            {"name": "y", "type": "prismatic", "parent": "mx", "child": "p",
             "axis": [0, 1, 0], "limits": {"lower": -1, "upper": 1}}],
            links=[{"id": "ball", "link": "p", "shape": sphere(0, 0, 0, 0.05)}])
        box = lambda cy, hy: {"box": {"center": [0, cy, 0], "half_extents": [0.05, hy, 0.2]}}
        c.scene_create("py-wall", shapes={"low": box(-0.35, 0.85), "high": box(0.95, 0.25)})
        start, goal = [-0.8, -0.8], [0.8, -0.8]
        r = c.plan("py-puck", start, goal, scene="py-wall", seed=3)
        self.assertTrue(r["solved"])
        self.assertEqual((r["path"][0], r["path"][-1]), (start, goal))
        self.assertGreaterEqual(len(r["path"]), 3)  # through the gap, not straight
        for a, b in zip(r["path"], r["path"][1:]):
            edge = c.check_motion("py-puck", [a, b], scene="py-wall", mode="certified")
            self.assertTrue(edge["valid"], (a, b))
        self.assertEqual(c.plan("py-puck", start, goal, scene="py-wall", seed=3)["path"],
                         r["path"])
        bad = c.plan("py-puck", start, goals=[[0, -0.5]], scene="py-wall")
        self.assertEqual((bad["solved"], bad["reason"]), (False, "goal_invalid"))
        self.assertEqual(bad["violation"]["other"], "low")
        with self.assertRaises(repose.InvalidParams) as e:
            c.plan("py-puck", start, goal, goals=[goal], scene="py-wall")
        self.assertEqual(e.exception.path, "params.goals")
        if numpy is not None:
            n = c.plan("py-puck", numpy.array(start), goals=numpy.array([goal]), scene="py-wall",
                       seed=3)
            self.assertEqual(numpy.array(n["path"]).shape[1], 2)

    def test_models_urdf_and_checks(self) -> None:
        c = self.client()
        r = c.model_put("py-frames", links=[{"id": "l", "frame": 0, "shape": sphere(0, 0, 0, 0.1)}])
        self.assertEqual(r["model"], "py-frames")
        self.assertEqual(c.model_get("py-frames")["frames"], 1)
        self.assertIn("py-frames", [m["model"] for m in c.model_list()["models"]])
        listed = {m["model"]: m for m in c.model_list()["models"]}
        self.assertEqual((listed["py-frames"]["links"], listed["py-frames"]["shapes"]), (1, 1))
        self.assertTrue(c.model_delete("py-frames")["deleted"])
        arm = c.load_urdf("py-arm", ARM_URDF, ARM_SRDF)
        self.assertEqual(arm["model"], "py-arm")
        info = c.model_get("py-arm")
        # model.list counts links and shapes apart, as model.get lists them:
        # the spherized arm has several shapes on most links.
        listed = {m["model"]: m for m in c.model_list()["models"]}["py-arm"]
        self.assertEqual(listed["links"], len(info["links"]))
        self.assertEqual(listed["shapes"], len(info["shapes"]))
        self.assertGreater(listed["shapes"], listed["links"])
        self.assertTrue(info["kinematic"])
        dof = len(info["joints"])
        self.assertEqual(dof, 8)  # tests/data/arm7.urdf: 7 arm joints and a gripper finger
        fk = c.model_fk("py-arm", [0.0] * dof)
        self.assertIn(info["root"], fk["links"])
        c.scene_create("py-world", {"far": sphere(50, 50, 50, 0.1),
                                    "wall": {"capsule": {"a": [0.6, -1, 0], "b": [0.6, 1, 0],
                                                         "radius": 0.05}}})
        ok = c.check("py-arm", scene="py-world", joints=[0.0] * dof)
        self.assertIn("valid", ok)
        q = [[0.1 * k] * dof for k in range(5)]
        batch = c.check_batch("py-arm", scene="py-world", joints=q, report="first")
        self.assertEqual(len(batch["results"]), 5)
        # The batch agrees with one check per configuration.
        for qk, res in zip(q, batch["results"]):
            self.assertEqual(res["valid"], c.check("py-arm", scene="py-world", joints=qk,
                                                   report="first")["valid"])
        motion = c.check_motion("py-arm", [[0.0] * dof, [0.2] * dof], scene="py-world",
                                resolution=0.01)
        cert = c.check_motion("py-arm", [[0.0] * dof, [0.2] * dof], scene="py-world",
                              mode="certified")
        self.assertIn("valid", motion)
        self.assertIn("valid", cert)

    @unittest.skipUnless(numpy is not None, "numpy is not installed")
    def test_numpy_and_lists_give_the_same_replies(self) -> None:
        c = self.client()
        c.load_urdf("py-arm-np", ARM_URDF, ARM_SRDF)
        dof = len(c.model_get("py-arm-np")["joints"])
        q = numpy.linspace(-1.0, 1.0, 10 * dof).reshape(10, dof)
        a = c.check_batch("py-arm-np", joints=q, report="closest")
        b = c.check_batch("py-arm-np", joints=q.tolist(), report="closest")
        self.assertEqual(a, b)
        m1 = c.check_motion("py-arm-np", q[:3])
        m2 = c.check_motion("py-arm-np", q[:3].tolist())
        self.assertEqual(m1, m2)
        self.assertEqual(c.check("py-arm-np", joints=q[0]), c.check("py-arm-np", joints=list(q[0])))
        self.assertEqual(c.model_fk("py-arm-np", numpy.float64(0.5) * numpy.ones(dof)),
                         c.model_fk("py-arm-np", [0.5] * dof))

    @unittest.skipUnless(numpy is not None, "numpy is not installed")
    def test_numpy_joint_arrays_go_as_f64_and_answer_as_lists(self) -> None:
        # A numpy array of joint values goes as joints_f64 / path_f64 (binary
        # float64); a list as JSON numbers: the same doubles, so the same
        # results, whatever the array's dtype and layout.
        c = self.client()
        c.load_urdf("py-arm-f64", ARM_URDF, ARM_SRDF)
        c.scene_create("py-f64", {"wall": {"box": {"center": [0.45, 0, 0.5],
                                                   "half_extents": [0.05, 0.5, 0.5]}},
                                  "ball": sphere(0.3, 0.3, 0.6, 0.1)})
        dof = len(c.model_get("py-arm-f64")["joints"])
        rng = numpy.random.default_rng(64)
        q = rng.uniform(-1.5, 1.5, size=(60, dof))
        q[:, 3] = rng.uniform(-3.0, -0.1, size=60)  # joint4's range, and beyond
        q[:, 7] = rng.uniform(0, 0.04, size=60)     # the finger
        q[0, 1] = -0.0
        sent = []
        real_call = c._call

        def spy(method, params):
            sent.append((method, sorted(params or {})))
            return real_call(method, params)

        c._call = spy  # type: ignore[method-assign]

        def same(method, binary_key, array, as_list, **kw):
            """The method with the array and with its list (as `joints=`, or
            positional for model_fk and check_motion): the array went in
            binary, the list as JSON, and the results are equal."""
            def run(value):
                if method in ("model_fk", "check_motion"):
                    return getattr(c, method)("py-arm-f64", value, **kw)
                return getattr(c, method)("py-arm-f64", joints=value, **kw)
            a = run(array)
            self.assertIn(binary_key, sent[-1][1], f"{method} sent {sent[-1]}")
            b = run(as_list)
            self.assertNotIn(binary_key, sent[-1][1], f"{method} sent {sent[-1]}")
            self.assertEqual(a, b, method)
            return a

        # check.batch: 2-D rows x dof, every report; some configurations collide.
        for report in ("first", "closest", "all"):
            same("check_batch", "joints_f64", q, q.tolist(), scene="py-f64", report=report)
        results = c.check_batch("py-arm-f64", joints=q, scene="py-f64")["results"]
        self.assertTrue(any(x["collision"] for x in results))
        self.assertTrue(any(not x["collision"] for x in results))
        # float32 (converted exactly), a strided slice, Fortran order, integers.
        q32 = q.astype(numpy.float32)
        same("check_batch", "joints_f64", q32, q32.astype(float).tolist(), scene="py-f64")
        wide = numpy.repeat(q, 2, axis=1)  # every column twice: [:, ::2] is q again
        sliced = wide[::3, ::2]
        self.assertFalse(sliced.flags["C_CONTIGUOUS"])
        same("check_batch", "joints_f64", sliced, q[::3].tolist(), scene="py-f64")
        same("check_batch", "joints_f64", numpy.asfortranarray(q), q.tolist(), scene="py-f64")
        ints = numpy.zeros((3, dof), dtype=numpy.int32)
        ints[:, 3] = -1
        same("check_batch", "joints_f64", ints, ints.tolist())
        # With a group: rows of its joints.
        g = q[:, :7]
        same("check_batch", "joints_f64", g, g.tolist(), scene="py-f64", group="arm7_arm")
        # check, model.fk: 1-D, also float32 and a strided row.
        for k in range(6):
            same("check", "joints_f64", q[k], q[k].tolist(), scene="py-f64", report="all")
            same("check", "joints_f64", g[k], g[k].tolist(), scene="py-f64", group="arm7_arm")
            same("model_fk", "joints_f64", q[k], q[k].tolist())
        same("check", "joints_f64", q32[1], q32[1].astype(float).tolist(), scene="py-f64")
        same("check", "joints_f64", wide[4, ::2], q[4].tolist(), scene="py-f64")
        same("model_fk", "joints_f64", wide[2, ::2], q[2].tolist(),
             base=repose.pose([0.5, 0, 1]))
        # check.motion: 2-D waypoints, both modes, and a group's.
        same("check_motion", "path_f64", q[:3], q[:3].tolist(), scene="py-f64", resolution=0.05)
        same("check_motion", "path_f64", q[:3], q[:3].tolist(), scene="py-f64", mode="certified")
        same("check_motion", "path_f64", g[:3], g[:3].tolist(), scene="py-f64", group="arm7_arm")
        same("check_motion", "path_f64", wide[:4, ::2], q[:4].tolist(), scene="py-f64")
        # Rows of the wrong length are refused, also when their values
        # would make a whole number of rows of the right length (8 rows of
        # 7 values are 7 rows of 8): the client sends the array's row
        # count as params.rows.
        with self.assertRaises(repose.InvalidParams) as e:
            c.check_batch("py-arm-f64", joints=q[:, :5])
        self.assertEqual(e.exception.path, "params.rows")
        self.assertIn("holds 300 values", str(e.exception))
        with self.assertRaises(repose.InvalidParams) as e:
            c.check_batch("py-arm-f64", joints=q[:dof, :dof - 1])
        self.assertEqual(e.exception.path, "params.rows")
        with self.assertRaises(repose.InvalidParams) as e:
            c.check_motion("py-arm-f64", q[:dof, :dof - 1])
        self.assertEqual(e.exception.path, "params.rows")
        with self.assertRaises(repose.InvalidParams) as e:
            c.check_motion("py-arm-f64", q[:1])
        self.assertEqual(e.exception.path, "params.path_f64")
        # NaN never leaves the client.
        bad = q[:4].copy()
        bad[2, 5] = numpy.inf
        with self.assertRaisesRegex(ValueError, r"^check\.batch: params\.joints\[2\]\[5\] is inf"):
            c.check_batch("py-arm-f64", joints=bad)
        with self.assertRaisesRegex(ValueError, r"^check: params\.joints\[5\] is inf"):
            c.check("py-arm-f64", joints=bad[2])
        # Empty arrays, 1-D tables and lists keep the JSON form.
        self.assertEqual(c.check_batch("py-arm-f64", joints=numpy.zeros((0, dof))),
                         {"results": [], "scene_revision": None})
        self.assertIsNone(repose.f64_rows(q[0], 2))
        self.assertIsNone(repose.f64_rows(q.tolist(), 2))
        self.assertIsNone(repose.f64_rows(numpy.array([["a", "b"]]), 2))
        self.assertEqual(repose.f64_rows(numpy.array([[0.5, 0], [0, 0.1]]), 2),
                         "AAAAAAAA4D8AAAAAAAAAAAAAAAAAAAAAmpmZmZmZuT8=")

    def test_joint_lists_need_no_numpy(self) -> None:
        c = self.client()
        c.load_urdf("py-arm-nonp", ARM_URDF, ARM_SRDF)
        dof = len(c.model_get("py-arm-nonp")["joints"])
        rows = [[0.1 * k] * dof for k in range(3)]
        with mock.patch.dict(sys.modules, {"numpy": None}):  # as if numpy were not installed
            self.assertIsNone(repose.f64_rows(rows, 2))
            self.assertEqual(len(c.check_batch("py-arm-nonp", joints=rows)["results"]), 3)
            self.assertIn("valid", c.check_motion("py-arm-nonp", rows))
            self.assertIn("valid", c.check("py-arm-nonp", joints=rows[1]))
            self.assertIn("links", c.model_fk("py-arm-nonp", rows[1]))

    def test_number_tables_are_sent_exactly(self) -> None:
        import random as _random
        rng = _random.Random(3)
        rows = [[rng.uniform(-3, 3) for _ in range(8)] for _ in range(200)]
        rows.append([0, -0.0, 1e-300, 5e-324, 1.7976931348623157e308, 2 ** 60, 0.1, -2.5])
        line = repose.encode_request(1, "check.batch", {"model": "m",
                                                         "joints": repose.number_rows(rows)})
        # Numbers as the daemon reads them: every one a double.
        back = json.loads(line, parse_int=float)["params"]["joints"]
        for r, b in zip(rows, back):
            for x, y in zip(r, b):
                self.assertEqual(float(x), y)
                self.assertEqual(math.copysign(1, x), math.copysign(1, y))
        with self.assertRaisesRegex(ValueError, r"^rows\[0\]\[1\] is inf \(row 0\)"):
            repose.number_rows([[0.0, math.inf]])
        c = self.client()
        c.load_urdf("py-arm-rows", ARM_URDF, ARM_SRDF)
        # The error names the row and the value, before anything is sent.
        bad = [[0.0] * 8 for _ in range(5)]
        bad[3][6] = math.nan
        with self.assertRaises(ValueError) as e:
            c.check_batch("py-arm-rows", joints=bad)
        self.assertEqual(str(e.exception), "check.batch: params.joints[3][6] is nan (row 3): "
                                           "JSON has no NaN or infinity")
        bad[3][6] = 0.0
        bad[4][0] = -math.inf
        with self.assertRaisesRegex(ValueError, r"params\.path\[4\]\[0\] is -inf \(row 4\)"):
            c.check_motion("py-arm-rows", bad)
        # One joint vector, and a shape: the path of the value.
        with self.assertRaisesRegex(ValueError, r"^check: params\.joints\[2\] is not a finite"):
            c.check("py-arm-rows", joints=[0.0, 0.0, math.nan] + [0.0] * 5)
        with self.assertRaisesRegex(ValueError, r"params\.b\.sphere\.radius is not a finite"):
            c.distance(sphere(0, 0, 0, 1), sphere(1, 0, 0, math.inf))
        if numpy is not None:
            arr = numpy.zeros((4, 8))
            arr[2, 5] = numpy.nan
            with self.assertRaisesRegex(ValueError, r"params\.joints\[2\]\[5\] is nan \(row 2\)"):
                c.check_batch("py-arm-rows", joints=arr)
        self.assertEqual(c.ping(), {"pong": True})  # nothing half-sent
        # Rows that are not lists of numbers go as they are (joint names here).
        named = [{"arm7_joint1": 0.5}, {"arm7_joint2": -0.3}]
        self.assertIs(repose.number_rows(named), named)
        self.assertEqual(len(c.check_batch("py-arm-rows", joints=named)["results"]), 2)

    def test_array_like_without_numpy(self) -> None:
        # Anything with tolist() goes, so numpy is optional.
        class Arr:
            def __init__(self, v):
                self.v = v

            def tolist(self):
                return self.v

        c = self.client()
        self.assertEqual(c.distance(sphere(0, 0, 0, 1), {"sphere": {"center": Arr([3, 0, 0]),
                                                                    "radius": 1}})["distance"], 1)

    def test_errors_carry_code_message_path_and_data(self) -> None:
        c = self.client()
        with self.assertRaises(repose.NotFound) as e:
            c.scene_get("py-nope")
        self.assertEqual(e.exception.code, -32001)
        self.assertEqual(e.exception.data["kind"], "scene")
        rev = c.scene_create("py-err")["revision"]
        with self.assertRaises(repose.AlreadyExists):
            c.scene_create("py-err")
        with self.assertRaises(repose.InvalidParams) as e:
            c.scene_put("py-err", {"x": sphere(0, 0, 0, -1)})
        self.assertEqual(e.exception.path, "params.shapes.x.sphere.radius")
        self.assertIn("params.shapes.x.sphere.radius", str(e.exception))
        with self.assertRaises(repose.RevisionConflict) as e:
            c.scene_put("py-err", {"x": sphere(0, 0, 0, 1)}, if_revision=rev + 1000)
        self.assertEqual(e.exception.data["actual"], rev)
        with self.assertRaises(repose.MethodNotFound) as e:
            c.call("py.nope")
        self.assertIsNone(e.exception.suggestion)
        with self.assertRaises(repose.MethodNotFound) as e:
            c.call("scene.lst")
        self.assertEqual(e.exception.data, {"method": "scene.lst", "suggestion": "scene.list"})
        self.assertEqual(e.exception.suggestion, "scene.list")
        self.assertIn("did you mean 'scene.list'?", str(e.exception))
        with self.assertRaises(ValueError):
            c.distance(sphere(0, 0, 0, math.nan), sphere(1, 0, 0, 1))
        # Raw lines for what the client itself never sends.
        c._conn.send(b"{not json\n")
        with self.assertRaises(repose.ParseError) as e:
            c._reply(-1)
        self.assertIn("offset", e.exception.data)
        c._conn.send(b'{"jsonrpc":"2.0","id":999,"method":"ping","extra":1}\n')
        with self.assertRaises(repose.InvalidRequest):
            msg = c._reply(999)
            raise repose.errors.error_from_reply(msg["error"])
        self.assertEqual(c.ping(), {"pong": True})  # the connection is still fine
        with self.assertRaises(repose.ConnectionLost):
            repose.Client(os.path.join(self.d.dir, "missing.sock"))
        self.assertTrue(issubclass(repose.ConnectionLost, OSError))
        self.assertTrue(issubclass(repose.InternalError, repose.ReposeError))
        self.assertTrue(issubclass(repose.StorageError, repose.ReposeError))

    def test_pipelined_replies_come_in_order(self) -> None:
        c = self.client()
        c.scene_create("py-pipe")
        with c.pipeline() as p:
            puts = [p.scene_put("py-pipe", {f"s{k}": sphere(k, 0, 0, 0.1)}) for k in range(50)]
            got = p.scene_get("py-pipe")
        revs = [x.result()["revision"] for x in puts]
        self.assertEqual(revs, sorted(revs))
        self.assertEqual(len(set(revs)), 50)
        self.assertEqual(got.result()["revision"], revs[-1])
        self.assertEqual(len(got.result()["shapes"]), 50)
        with self.assertRaises(repose.NotFound):
            with c.pipeline() as p:
                a = p.ping()
                b = p.scene_get("py-missing")
                cc = p.ping()
        self.assertEqual(a.result(), {"pong": True})
        self.assertIsInstance(b.error, repose.NotFound)
        self.assertEqual(cc.result(), {"pong": True})
        with c.pipeline(raise_errors=False) as p:
            b = p.scene_get("py-missing")
        with self.assertRaises(repose.NotFound):
            b.result()

    def test_low_level_watch_and_unwatch_on_one_connection(self) -> None:
        c = self.client()
        other = self.client()
        c.scene_create("py-low")
        w = c.scene_watch("py-low")["watch"]
        rev = other.scene_put("py-low", {"a": sphere(0, 0, 0, 1)})["revision"]
        # A reply on this connection may come first; the notification is queued.
        self.assertEqual(c.ping(), {"pong": True})
        n = c.next_notification(timeout=10)
        self.assertEqual((n.method, n.params["watch"], n.params["revision"]),
                         ("scene.changed", w, rev))
        self.assertEqual(c.scene_unwatch(w), {"watch": w, "unwatched": True})
        other.scene_put("py-low", {"b": sphere(1, 0, 0, 1)})
        self.assertIsNone(c.next_notification(timeout=0.2))
        with self.assertRaises(repose.NotFound):
            c.scene_unwatch(w)

    def test_a_long_pipeline_does_not_deadlock_on_back_pressure(self) -> None:
        # The daemon stops reading while 64 KiB of replies wait unread; the
        # pipeline's requests (about 400 KB) outgrow the socket buffers.
        d = Daemon("--write-pause-bytes", "65536", "--write-kill-bytes", "16777216")
        try:
            with repose.Client(d.sock, timeout=30) as c:
                c.scene_create("big", {f"s{k}": sphere(k, 0, 0, 0.5) for k in range(10)})
                with c.pipeline() as p:
                    got = [p.scene_get("big") for _ in range(6000)]
                self.assertEqual(len(got[-1].result()["shapes"]), 10)
        finally:
            self.assertEqual(d.stop(), 0)

    def test_watch_delivers_changes_in_order_and_ends(self) -> None:
        c = self.client()
        start = c.scene_create("py-watched")["revision"]
        with c.watch("py-watched", timeout=10) as w:
            self.assertEqual(w.revision, start)
            revs = [c.scene_put("py-watched", {f"w{k}": sphere(k, 0, 0, 0.2)})["revision"]
                    for k in range(20)]
            c.scene_remove("py-watched", ["w0"])
            got = [next(w) for _ in range(21)]
            self.assertEqual([n.params["revision"] for n in got[:20]], revs)
            self.assertTrue(all(n.method == "scene.changed" for n in got))
            self.assertEqual(got[3].params["put"], {"w3": sphere(3, 0, 0, 0.2)})
            self.assertEqual(got[20].params["removed"], ["w0"])
            self.assertEqual(c.stats()["watches"], 1)
        # Closing the watch's connection ends it.
        for _ in range(200):
            if c.stats()["watches"] == 0:
                break
            time.sleep(0.01)
        self.assertEqual(c.stats()["watches"], 0)
        # since replays; a deletion ends the iteration.
        w = c.watch("py-watched", since=revs[9], timeout=10)
        self.addCleanup(w.close)
        c.scene_delete("py-watched")
        seen = list(w)
        self.assertEqual([n.params["revision"] for n in seen[:11]], revs[10:] + [seen[10].params["revision"]])
        self.assertEqual(seen[-1].method, "scene.deleted")

    def test_the_readme_python_examples_run_verbatim(self) -> None:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            text = f.read()
        section = text.split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
        blocks = re.findall(r"```python\n(.*?)```", section, re.S)
        self.assertEqual(len(blocks), 2)
        old_env, old_cwd = os.environ.get("REPOSE_SOCKET"), os.getcwd()
        os.environ["REPOSE_SOCKET"] = self.d.sock  # what Client() connects to
        os.chdir(ROOT)
        try:
            scope: dict = {}
            for b in blocks:
                exec(compile(b, "README.md", "exec"), scope)
            self.assertIn("valid", scope["edge"])
            scope["c"].close()
        finally:
            os.chdir(old_cwd)
            if old_env is None:
                del os.environ["REPOSE_SOCKET"]
            else:
                os.environ["REPOSE_SOCKET"] = old_env

    def test_the_rrt_connect_example_plans_around_the_post(self) -> None:
        for mode in ("discrete", "certified"):
            out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "rrt_connect.py"),
                                  "--unix", self.d.sock, "--mode", mode, "--seed", "2"],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("blocked by the post", out.stdout)
            self.assertRegex(out.stdout, r"fine discrete check of the plan \(resolution 1e-3, "
                                         r"\d+ states\): valid")

    def test_a_reply_that_breaks_the_protocol(self) -> None:
        path = os.path.join(self.d.dir, "fake.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)

        def serve():
            conn, _ = srv.accept()
            conn.recv(1024)
            conn.sendall(b"this is not json\n")
            conn.close()

        t = threading.Thread(target=serve)
        t.start()
        with repose.Client(path, timeout=5) as c:
            with self.assertRaises(repose.ProtocolError):
                c.ping()
        t.join()
        srv.close()

    def test_python_m_repose_ping(self) -> None:
        out = subprocess.run([sys.executable, "-m", "repose", "--unix", self.d.sock, "ping"],
                             capture_output=True, text=True, timeout=30,
                             env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout), {"pong": True})
        out = subprocess.run([sys.executable, "-m", "repose", "--unix", self.d.sock, "scene.get",
                              '{"scene":"py-none"}'], capture_output=True, text=True, timeout=30,
                             env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(out.returncode, 1)
        self.assertIn("error -32001", out.stderr)


    def test_python_m_repose_help_lists_export(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        out = subprocess.run([sys.executable, "-m", "repose", "--help"], capture_output=True,
                             text=True, timeout=30, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("python -m repose export SCENE", out.stdout)
        self.assertRegex(out.stdout, r"\n  export SCENE +write the scene")
        out = subprocess.run([sys.executable, "-m", "repose", "export", "--help"],
                             capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("--model", out.stdout)
        # And what the help promises runs: a scene exported as glTF binary.
        c = self.client()
        c.scene_create("py-help-export", {"s": sphere(0, 0, 0, 0.5)})
        glb = os.path.join(self.d.dir, "help.glb")
        out = subprocess.run([sys.executable, "-m", "repose", "export", "py-help-export",
                              "--unix", self.d.sock, "-o", glb], capture_output=True, text=True,
                             timeout=30, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(glb, "rb") as f:
            self.assertEqual(f.read(4), b"glTF")


class TcpAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="repose-py-tok-")
        cls.token = "py-token-" + str(os.getpid())
        path = os.path.join(cls.tmp, "token")
        with open(path, "w") as f:
            f.write(cls.token + "\n")
        os.chmod(path, 0o600)
        cls.token_path = path
        cls.d = Daemon("--token-file", path, "--max-shapes", "3")

    @classmethod
    def tearDownClass(cls) -> None:
        assert cls.d.stop() == 0

    def _file(self, name: str, text: str, mode: int) -> str:
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def test_tcp_with_a_token_file(self) -> None:
        # token_file= as repose-cli's --token-file: the file's first line.
        with repose.Client(host="127.0.0.1", port=self.d.port, token_file=self.token_path) as c:
            self.assertEqual(c.scene_list(), {"scenes": []})
        crlf = self._file("crlf", self.token + "\r\nnot the token\n", 0o600)
        with repose.Client(host="127.0.0.1", port=self.d.port, token_file=crlf) as c:
            self.assertEqual(c.scene_list(), {"scenes": []})
        wrong = self._file("wrong", "wrong\n", 0o600)
        with self.assertRaises(repose.Unauthorized):
            repose.Client(host="127.0.0.1", port=self.d.port, token_file=wrong)
        # Refused before connecting, as the daemon refuses such a file.
        everyone = self._file("everyone", self.token + "\n", 0o644)
        with self.assertRaisesRegex(ValueError, "world-readable"):
            repose.Client(host="127.0.0.1", port=self.d.port, token_file=everyone)
        empty = self._file("empty", "", 0o600)
        with self.assertRaisesRegex(ValueError, "empty"):
            repose.Client(host="127.0.0.1", port=self.d.port, token_file=empty)
        with self.assertRaises(FileNotFoundError):
            repose.Client(host="127.0.0.1", port=self.d.port,
                          token_file=os.path.join(self.tmp, "missing"))
        with self.assertRaisesRegex(ValueError, "not both"):
            repose.Client(host="127.0.0.1", port=self.d.port, token="x",
                          token_file=self.token_path)

    def test_repose_token_file_over_tcp_only(self) -> None:
        old = os.environ.get("REPOSE_TOKEN_FILE")
        try:
            os.environ["REPOSE_TOKEN_FILE"] = self.token_path
            with repose.Client(host="127.0.0.1", port=self.d.port) as c:
                self.assertEqual(c.scene_list(), {"scenes": []})
            # token= given: the environment's file is not read.
            with self.assertRaises(repose.Unauthorized):
                repose.Client(host="127.0.0.1", port=self.d.port, token="wrong")
            # A Unix socket needs no auth: a missing file there is no error.
            os.environ["REPOSE_TOKEN_FILE"] = os.path.join(self.tmp, "missing")
            with repose.Client(self.d.sock) as c:
                self.assertEqual(c.scene_list(), {"scenes": []})
            with self.assertRaises(FileNotFoundError):
                repose.Client(host="127.0.0.1", port=self.d.port)
        finally:
            if old is None:
                os.environ.pop("REPOSE_TOKEN_FILE", None)
            else:
                os.environ["REPOSE_TOKEN_FILE"] = old

    def test_python_m_repose_token_options(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        env.pop("REPOSE_TOKEN_FILE", None)
        base = [sys.executable, "-m", "repose", "--host", "127.0.0.1", "--port", str(self.d.port)]
        for how in (["--token-file", self.token_path], ["--token", self.token]):
            out = subprocess.run(base + how + ["scene.list"], capture_output=True, text=True,
                                 timeout=30, env=env)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(json.loads(out.stdout), {"scenes": []})
        everyone = self._file("everyone-cli", self.token + "\n", 0o644)
        out = subprocess.run(base + ["--token-file", everyone, "scene.list"], capture_output=True,
                             text=True, timeout=30, env=env)
        self.assertEqual(out.returncode, 2)
        self.assertIn("world-readable", out.stderr)
        out = subprocess.run(base + ["scene.list"], capture_output=True, text=True, timeout=30,
                             env=dict(env, REPOSE_TOKEN_FILE=self.token_path))
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_tcp_with_the_token(self) -> None:
        with repose.Client(host="127.0.0.1", port=self.d.port, token=self.token) as c:
            self.assertEqual(c.scene_list(), {"scenes": []})
            with self.assertRaises(repose.LimitExceeded) as e:
                c.scene_create("py-big", {f"s{k}": sphere(k, 0, 0, 0.1) for k in range(4)})
            self.assertEqual(e.exception.data["limit"], "max_shapes_per_scene")

    def test_tcp_without_or_with_a_wrong_token(self) -> None:
        with repose.Client(host="127.0.0.1", port=self.d.port) as c:
            with self.assertRaises(repose.Unauthorized):
                c.scene_list()
        with self.assertRaises(repose.Unauthorized):
            repose.Client(host="127.0.0.1", port=self.d.port, token="wrong")

    def test_shutting_down_refuses_mutations(self) -> None:
        # A heavy batch runs on a worker while SIGTERM arrives; the mutation
        # queued behind it is then refused with -32006.
        d = Daemon()
        try:
            with repose.Client(d.sock) as c:
                c.load_urdf("arm", ARM_URDF, ARM_SRDF)
                dof = len(c.model_get("arm")["joints"])
                c.scene_create("world", {f"s{k}": sphere(0.3 + k % 10 * 0.05, k // 10 * 0.05 - 2.5,
                                                         0.4, 0.02) for k in range(1000)})
                q = [[(k % 97) * 0.01 - 0.5] * dof for k in range(20000)]
                c._conn.send(repose.encode_request(1001, "check.batch",
                                                   {"model": "arm", "scene": "world", "joints": q})
                             + repose.encode_request(1002, "scene.create", {"scene": "late"}))
                time.sleep(0.05)
                d.proc.send_signal(signal.SIGTERM)
                self.assertIn("result", c._reply(1001))
                err = repose.errors.error_from_reply(c._reply(1002)["error"])
                self.assertIsInstance(err, repose.ShuttingDown)
                self.assertEqual(err.code, -32006)
        finally:
            self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
