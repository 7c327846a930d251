# SPDX-License-Identifier: MIT
"""Client.load_urdf with <mesh> collisions against the real reposed: the
client finds the files (package://, ROS_PACKAGE_PATH, relative, file://),
reads them and sends them base64 in model.put's ``meshes``; the daemon
covers each link's meshes with spheres.

A tiny robot is written here into a ROS-like package folder
(tmp/pkgs/my_robot/{meshes,urdf}): an ASCII STL, a binary STL, an OBJ and
a Collada file, with origins, a scale, a relative path and a <visual> mesh
that must not be sent.  The test checks that every vertex of every scaled,
placed mesh lies in one of its link's spheres.

Run: REPOSED=build/reposed python3 -m unittest discover -s python/tests
(ctest runs the directory as `python_client`).
"""

from __future__ import annotations

import base64
import math
import os
import pathlib
import shutil
import struct
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import repose  # noqa: E402
from repose.meshes import collision_meshes  # noqa: E402
from test_client import ARM_SRDF, ARM_URDF, Daemon  # noqa: E402

# ---- the meshes: vertices and triangles, written in four formats -------------------

# A unit cube about the origin (binary STL).
BOX_V = [(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
BOX_T = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
         (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
# A tetrahedron (ASCII STL).
TET_V = [(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)]
TET_T = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
# An octahedron (OBJ).
OCT_V = [(0.05, 0, 0), (-0.05, 0, 0), (0, 0.05, 0), (0, -0.05, 0), (0, 0, 0.05), (0, 0, -0.05)]
OCT_T = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
# A square pyramid (Collada).
PYR_V = [(-0.04, -0.04, 0), (0.04, -0.04, 0), (0.04, 0.04, 0), (-0.04, 0.04, 0), (0, 0, 0.1)]
PYR_T = [(0, 2, 1), (0, 3, 2), (0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)]


def ascii_stl(v, t) -> bytes:
    lines = ["solid tet"]
    for a, b, c in t:
        lines += ["  facet normal 0 0 0", "    outer loop"]
        lines += [f"      vertex {v[i][0]!r} {v[i][1]!r} {v[i][2]!r}" for i in (a, b, c)]
        lines += ["    endloop", "  endfacet"]
    return ("\n".join(lines + ["endsolid tet"]) + "\n").encode()


def binary_stl(v, t) -> bytes:
    out = bytearray(b"binary STL written by test_meshes.py".ljust(80, b" "))
    out += struct.pack("<I", len(t))
    for tri in t:
        out += struct.pack("<3f", 0, 0, 0)
        for i in tri:
            out += struct.pack("<3f", *v[i])
        out += struct.pack("<H", 0)
    return bytes(out)


def obj(v, t) -> bytes:
    lines = ["# octahedron"] + [f"v {x!r} {y!r} {z!r}" for x, y, z in v]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in t]
    return ("\n".join(lines) + "\n").encode()


def collada(v, t) -> bytes:
    pos = " ".join(repr(float(c)) for p in v for c in p)
    idx = " ".join(str(i) for tri in t for i in tri)
    return f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="meter" meter="1"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries>
    <geometry id="pyr" name="pyr"><mesh>
      <source id="pyr-pos">
        <float_array id="pyr-pos-array" count="{3 * len(v)}">{pos}</float_array>
        <technique_common><accessor source="#pyr-pos-array" count="{len(v)}" stride="3">
          <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
        </accessor></technique_common>
      </source>
      <vertices id="pyr-vtx"><input semantic="POSITION" source="#pyr-pos"/></vertices>
      <triangles count="{len(t)}"><input semantic="VERTEX" source="#pyr-vtx" offset="0"/>
        <p>{idx}</p></triangles>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="scene"><node id="pyr-node" name="pyr"><instance_geometry url="#pyr"/></node>
    </visual_scene>
  </library_visual_scenes>
  <scene><instance_visual_scene url="#scene"/></scene>
</COLLADA>
""".encode()


# Each link's collision meshes: (filename as the URDF writes it, vertices,
# scale, origin xyz, origin rpy).
BOX_URI = "package://my_robot/meshes/box.stl"
TET_URI = "package://my_robot/meshes/tet.stl"
OCT_URI = "package://my_robot/meshes/octa.obj"
PYR_URI = "../meshes/pyr.dae"
VISUAL_URI = "package://my_robot/meshes/visual_only.dae"  # no such file: never looked for
MESH_LINKS = {
    "base": [(BOX_URI, BOX_V, (0.1, 0.2, 0.3), (0, 0, 0.15), (0, 0, 0.3))],
    "upper": [(TET_URI, TET_V, (1, 1, 1), (0.02, 0, 0.05), (0.1, 0.2, 0.3)),
              (OCT_URI, OCT_V, (1, 1, 2), (0, 0, 0.25), (math.pi / 2, 0, 0))],
    "lower": [(PYR_URI, PYR_V, (1, 1, 1), (0, 0, 0.05), (0, 0, 0)),
              (TET_URI, TET_V, (2, 2, 2), (0, 0, 0), (0, math.pi, 0))],
}


def origin_xml(xyz, rpy) -> str:
    return f'<origin xyz="{" ".join(map(repr, xyz))}" rpy="{" ".join(map(repr, rpy))}"/>'


def robot_urdf(mesh_links=MESH_LINKS, name="my_robot") -> str:
    """The URDF of the test robot: base -> upper -> lower -> tool (a sphere).
    One mesh element is written with single quotes, the base also has a
    <visual> mesh."""
    links = []
    for link, meshes in mesh_links.items():
        parts = []
        if link == "base":
            parts.append(f'<visual><geometry><mesh filename="{VISUAL_URI}"/></geometry></visual>')
        for k, (uri, _, scale, xyz, rpy) in enumerate(meshes):
            sc = " ".join(map(repr, scale))
            mesh = (f"<mesh filename='{uri}' scale='{sc}'/>" if k % 2 else
                    f'<mesh filename="{uri}" scale="{sc}"/>')
            parts.append(f"<collision>{origin_xml(xyz, rpy)}<geometry>{mesh}</geometry>"
                         "</collision>")
        links.append(f'  <link name="{link}">\n    ' + "\n    ".join(parts) + "\n  </link>")
    links.append('  <link name="tool"><collision><geometry><sphere radius="0.02"/></geometry>'
                 '</collision></link>')
    joints = []
    chain = list(mesh_links) + ["tool"]
    for k, (parent, child) in enumerate(zip(chain, chain[1:])):
        joints.append(f'  <joint name="j{k}" type="revolute"><parent link="{parent}"/>'
                      f'<child link="{child}"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>'
                      f'<limit lower="-2" upper="2" effort="1" velocity="1"/></joint>')
    return (f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(links + joints) +
            "\n</robot>\n")


def rpy_matrix(r, p, y):
    """URDF's R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), \
        math.cos(y), math.sin(y)
    return [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr]]


def f32(x: float) -> float:
    """x as a mesh file holds it: the readers (assimp) keep float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def placed(vertices, scale, xyz, rpy):
    """The vertices (as float32, what the daemon reads) scaled, then moved
    by the collision origin: where they are in the link frame."""
    m = rpy_matrix(*rpy)
    out = []
    for v in vertices:
        s = [f32(v[i]) * scale[i] for i in range(3)]
        out.append(tuple(sum(m[r][c] * s[c] for c in range(3)) + xyz[r] for r in range(3)))
    return out


class MeshRobotTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.d = Daemon()
        cls.tmp = tempfile.mkdtemp(prefix="repose-py-meshes-")
        cls.pkgs = os.path.join(cls.tmp, "pkgs")
        pkg = os.path.join(cls.pkgs, "my_robot")
        os.makedirs(os.path.join(pkg, "meshes"))
        os.makedirs(os.path.join(pkg, "urdf"))
        files = {"box.stl": binary_stl(BOX_V, BOX_T), "tet.stl": ascii_stl(TET_V, TET_T),
                 "octa.obj": obj(OCT_V, OCT_T), "pyr.dae": collada(PYR_V, PYR_T)}
        cls.bytes = {}
        for name, data in files.items():
            with open(os.path.join(pkg, "meshes", name), "wb") as f:
                f.write(data)
            cls.bytes[name] = data
        cls.urdf = os.path.join(pkg, "urdf", "my_robot.urdf")
        with open(cls.urdf, "w", encoding="utf-8") as f:
            f.write(robot_urdf())

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert cls.d.stop() == 0

    def setUp(self) -> None:
        # Each test sets ROS_PACKAGE_PATH itself, or has none.
        env = mock.patch.dict(os.environ)
        env.start()
        self.addCleanup(env.stop)
        os.environ.pop("ROS_PACKAGE_PATH", None)

    def client(self) -> repose.Client:
        c = repose.Client(self.d.sock, timeout=60)
        self.addCleanup(c.close)
        return c

    def spy(self, c: repose.Client) -> mock.MagicMock:
        """Records every request the client sends: (method, params)."""
        s = mock.patch.object(c, "_call", wraps=c._call)
        self.addCleanup(s.stop)
        return s.start()

    def write_urdf(self, text: str, where: str) -> str:
        path = os.path.join(self.tmp, where)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def assert_covered(self, info, mesh_links=MESH_LINKS, max_spheres=None) -> None:
        """model.get of the robot: a cover per mesh link, spheres LINK#sK that
        hold every vertex of the link's scaled, placed meshes."""
        covers = {m["link"]: m for m in info["mesh_covers"]}
        self.assertEqual(set(covers), set(mesh_links))
        for link, meshes in mesh_links.items():
            spheres = [s for s in info["shapes"] if s["link"] == link]
            self.assertTrue(spheres, link)
            for k, s in enumerate(spheres):
                self.assertEqual(s["id"], f"{link}#s{k}")
                self.assertIn("sphere", s["shape"])
            self.assertEqual(covers[link]["spheres"], len(spheres))
            if max_spheres is not None:
                self.assertLessEqual(len(spheres), max_spheres, link)
            balls = [(s["shape"]["sphere"]["center"], s["shape"]["sphere"]["radius"])
                     for s in spheres]
            overshoot = covers[link]["overshoot"]
            self.assertGreaterEqual(overshoot, 0)
            n = 0
            for _, vertices, scale, xyz, rpy in meshes:
                for v in placed(vertices, scale, xyz, rpy):
                    n += 1
                    self.assertTrue(any(math.dist(v, c) <= r + 1e-9 for c, r in balls),
                                    f"{link}: vertex {v} is in no sphere of {balls}")
            self.assertGreater(n, 0)
        # The tool's sphere is no mesh: its shape is as the URDF gives it.
        self.assertEqual([s["id"] for s in info["shapes"] if s["link"] == "tool"], ["tool#0"])

    # ---- the tests -------------------------------------------------------------------------

    def test_collision_meshes_of_four_formats_are_sent_and_covered(self) -> None:
        c = self.client()
        sent = self.spy(c)
        opened = []
        real_open = open

        def counting_open(path, *a, **kw):
            opened.append(os.path.realpath(path))
            return real_open(path, *a, **kw)

        with mock.patch("repose.meshes.open", counting_open, create=True):
            r = c.load_urdf("py-mesh-robot", pathlib.Path(self.urdf),
                            package_path=[pathlib.Path(self.pkgs)])
        self.assertEqual(r["model"], "py-mesh-robot")
        # One model.put; the collisions' files under their names as written,
        # each read once (tet.stl serves two links), no <visual> mesh.
        self.assertEqual([call.args[0] for call in sent.call_args_list], ["model.put"])
        params = sent.call_args.args[1]
        self.assertEqual(set(params["meshes"]), {BOX_URI, TET_URI, OCT_URI, PYR_URI})
        self.assertNotIn(VISUAL_URI, params["meshes"])
        for uri, name in ((BOX_URI, "box.stl"), (TET_URI, "tet.stl"), (OCT_URI, "octa.obj"),
                          (PYR_URI, "pyr.dae")):
            self.assertEqual(base64.b64decode(params["meshes"][uri]), self.bytes[name], uri)
        meshes_opened = [p for p in opened if "/meshes/" in p]
        self.assertEqual(len(meshes_opened), 4)
        self.assertEqual(len(set(meshes_opened)), 4)
        self.assertNotIn("spherize", params)  # none given: the daemon's default
        with open(self.urdf, encoding="utf-8") as f:
            self.assertEqual(params["urdf"], f.read())
        info = c.model_get("py-mesh-robot")
        self.assert_covered(info)
        tri = {m["link"]: m["triangles"] for m in info["mesh_covers"]}
        self.assertEqual(tri, {"base": len(BOX_T), "upper": len(TET_T) + len(OCT_T),
                               "lower": len(PYR_T) + len(TET_T)})
        # The model checks like any other (the links are far from this scene).
        dof = len(info["joints"])
        self.assertEqual(dof, 3)
        self.assertIn("valid", c.check("py-mesh-robot", joints=[0.0] * dof))

    def test_spherize_max_spheres_bounds_the_spheres_of_each_link(self) -> None:
        c = self.client()
        sent = self.spy(c)
        c.load_urdf("py-mesh-2", self.urdf, package_path=self.pkgs,  # one dir, as a str
                    spherize={"max_spheres": 2})
        self.assertEqual(sent.call_args.args[1]["spherize"], {"max_spheres": 2})
        info = c.model_get("py-mesh-2")
        self.assert_covered(info, max_spheres=2)
        self.assertTrue(all(m["spheres"] <= 2 for m in info["mesh_covers"]))
        # max_overshoot passes through too (and may use more spheres).
        c.load_urdf("py-mesh-2", self.urdf, package_path=self.pkgs,
                    spherize={"max_spheres": 64, "max_overshoot": 0.01})
        self.assert_covered(c.model_get("py-mesh-2"), max_spheres=64)

    def test_a_bad_spherize_is_the_daemons_error_with_its_path(self) -> None:
        c = self.client()
        with self.assertRaises(repose.InvalidParams) as e:
            c.load_urdf("py-mesh-bad", self.urdf, package_path=[self.pkgs],
                        spherize={"max_spheres": 0})
        self.assertEqual(e.exception.code, -32602)
        self.assertEqual(e.exception.path, "params.spherize.max_spheres")
        self.assertIn("params.spherize.max_spheres", str(e.exception))
        with self.assertRaises(repose.InvalidParams) as e:
            c.load_urdf("py-mesh-bad", self.urdf, package_path=[self.pkgs],
                        spherize={"max_overshoot": -1})
        self.assertEqual(e.exception.path, "params.spherize.max_overshoot")
        with self.assertRaises(repose.NotFound):
            c.model_get("py-mesh-bad")  # nothing was stored

    def test_ros_package_path_is_honoured(self) -> None:
        c = self.client()
        # An entry holding the package ...
        os.environ["ROS_PACKAGE_PATH"] = os.pathsep.join(
            [os.path.join(self.tmp, "nowhere"), "", self.pkgs])
        c.load_urdf("py-mesh-ros", self.urdf)
        self.assert_covered(c.model_get("py-mesh-ros"))
        # ... or the package's own folder (named as the package).
        os.environ["ROS_PACKAGE_PATH"] = os.path.join(self.pkgs, "my_robot")
        c.load_urdf("py-mesh-ros", self.urdf)
        self.assert_covered(c.model_get("py-mesh-ros"))
        # package_path comes first: a decoy package there wins.
        decoy = os.path.join(self.tmp, "decoy")
        os.makedirs(os.path.join(decoy, "my_robot", "meshes"), exist_ok=True)
        for name in ("box.stl", "tet.stl", "octa.obj"):
            shutil.copy(os.path.join(self.pkgs, "my_robot", "meshes", name),
                        os.path.join(decoy, "my_robot", "meshes", name))
        with open(os.path.join(decoy, "my_robot", "meshes", "tet.stl"), "wb") as f:
            f.write(ascii_stl([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 2)]))
        os.environ["ROS_PACKAGE_PATH"] = self.pkgs
        sent = self.spy(c)
        c.load_urdf("py-mesh-ros", self.urdf, package_path=[decoy])
        self.assertIn(b"vertex 1 0 0", base64.b64decode(sent.call_args.args[1]["meshes"][TET_URI]))

    def test_a_missing_package_fails_before_anything_is_sent(self) -> None:
        c = self.client()
        links = {"base": MESH_LINKS["base"],
                 "upper": [("package://other_robot/meshes/arm.stl", TET_V, (1, 1, 1), (0, 0, 0),
                            (0, 0, 0))]}
        path = self.write_urdf(robot_urdf(links), "missing/robot.urdf")
        sent = self.spy(c)
        nowhere = os.path.join(self.tmp, "nowhere")
        os.environ["ROS_PACKAGE_PATH"] = nowhere
        with self.assertRaises(repose.MeshNotFound) as e:
            c.load_urdf("py-mesh-missing", path, package_path=[self.pkgs])
        err = e.exception
        self.assertIsInstance(err, FileNotFoundError)
        self.assertEqual(err.uri, "package://other_robot/meshes/arm.stl")
        self.assertEqual(err.link, "upper")
        self.assertEqual(err.tried, [self.pkgs, nowhere])
        text = str(err)
        for part in ("'package://other_robot/meshes/arm.stl'", "'upper'", self.pkgs, nowhere,
                     "ROS_PACKAGE_PATH"):
            self.assertIn(part, text)
        # With no directory at all, the message says where to give them.
        del os.environ["ROS_PACKAGE_PATH"]
        with self.assertRaises(repose.MeshNotFound) as e:
            c.load_urdf("py-mesh-missing", path)
        self.assertEqual(e.exception.tried, [])
        self.assertIn("package_path", str(e.exception))
        self.assertEqual(sent.call_count, 0)  # nothing was sent
        with self.assertRaises(repose.NotFound):
            c.model_get("py-mesh-missing")

    def test_relative_file_and_absolute_paths(self) -> None:
        c = self.client()
        meshes = os.path.join(self.pkgs, "my_robot", "meshes")
        # From another working directory: ../meshes/pyr.dae is the URDF's
        # folder's, not the process's.
        old = os.getcwd()
        os.chdir(self.tmp)
        self.addCleanup(os.chdir, old)
        rel = os.path.relpath(self.urdf, self.tmp)
        c.load_urdf("py-mesh-rel", rel, package_path=[os.path.relpath(self.pkgs, self.tmp)])
        self.assert_covered(c.model_get("py-mesh-rel"))
        # file:///abs, an absolute path, and a path relative to a URDF
        # elsewhere; package_path is not needed for any of them.
        def named(uri, link, k):  # MESH_LINKS[link][k] under another filename
            return (uri,) + MESH_LINKS[link][k][1:]

        links = {"base": [named("file://" + os.path.join(meshes, "box.stl"), "base", 0)],
                 "upper": [named(os.path.join(meshes, "tet.stl"), "upper", 0),
                           named("file://localhost" + os.path.join(meshes, "octa.obj"), "upper",
                                 1)],
                 "lower": [named("../pkgs/my_robot/meshes/pyr.dae", "lower", 0)]}
        path = self.write_urdf(robot_urdf(links), "elsewhere/robot.urdf")
        sent = self.spy(c)
        c.load_urdf("py-mesh-rel", path)
        self.assertEqual(set(sent.call_args.args[1]["meshes"]), {m[0] for ms in links.values()
                                                                 for m in ms})
        self.assert_covered(c.model_get("py-mesh-rel"), links)
        # A relative file that is not there names the URDF's folder.
        links["lower"] = [named("meshes/pyr.dae", "lower", 0)]
        path = self.write_urdf(robot_urdf(links), "elsewhere/robot2.urdf")
        with self.assertRaises(repose.MeshNotFound) as e:
            c.load_urdf("py-mesh-rel", path)
        self.assertEqual((e.exception.uri, e.exception.link), ("meshes/pyr.dae", "lower"))
        self.assertIn(os.path.join(self.tmp, "elsewhere"), str(e.exception))

    def test_namespaces_and_quotes(self) -> None:
        # A default namespace on <robot> and single-quoted attributes.
        text = robot_urdf().replace('<robot name="my_robot">',
                                    "<robot xmlns='http://www.ros.org' name='my_robot'>")
        self.assertEqual(collision_meshes(text),
                         [(link, m[0]) for link, ms in MESH_LINKS.items() for m in ms])
        prefixed = ('<u:robot xmlns:u="urn:x" name="r"><u:link name="a"><u:visual><u:geometry>'
                    '<u:mesh filename="v.stl"/></u:geometry></u:visual><u:collision><u:geometry>'
                    "<u:mesh filename='c.stl'/></u:geometry></u:collision></u:link></u:robot>")
        self.assertEqual(collision_meshes(prefixed), [("a", "c.stl")])
        self.assertEqual(collision_meshes("<robot><link"), [])  # the daemon says what is wrong
        path = self.write_urdf(text, "ns/my_robot/urdf/robot.urdf")
        # The relative ../meshes path is this URDF's: give the files there.
        shutil.copytree(os.path.join(self.pkgs, "my_robot", "meshes"),
                        os.path.join(self.tmp, "ns", "my_robot", "meshes"))
        c = self.client()
        c.load_urdf("py-mesh-ns", path, package_path=[os.path.join(self.tmp, "ns")])
        self.assert_covered(c.model_get("py-mesh-ns"))

    def test_a_urdf_without_meshes_sends_no_meshes(self) -> None:
        c = self.client()
        sent = self.spy(c)
        c.load_urdf("py-mesh-none", ARM_URDF, ARM_SRDF, allow_adjacent=True)
        params = sent.call_args.args[1]
        self.assertEqual(set(params), {"model", "urdf", "srdf", "allow_adjacent"})
        self.assertNotIn("mesh_covers", c.model_get("py-mesh-none"))
        # A URDF that is not XML goes as it is: the daemon names the fault.
        path = self.write_urdf("<robot name='x'><link name='a'>", "broken/robot.urdf")
        with self.assertRaises(repose.InvalidParams) as e:
            c.load_urdf("py-mesh-none", path)
        self.assertTrue(e.exception.path.startswith("params.urdf"), e.exception.path)

    def test_meshes_given_by_the_caller_are_sent_as_given(self) -> None:
        c = self.client()
        sent = self.spy(c)
        own = base64.b64encode(self.bytes["box.stl"]).decode()
        c.load_urdf("py-mesh-own", self.urdf, package_path=[self.pkgs], meshes={BOX_URI: own})
        self.assertEqual(sent.call_args.args[1]["meshes"][BOX_URI], own)
        self.assertEqual(len(sent.call_args.args[1]["meshes"]), 4)
        # A file no collision names is the daemon's refusal, at its path.
        with self.assertRaises(repose.InvalidParams) as e:
            c.load_urdf("py-mesh-own", self.urdf, package_path=[self.pkgs],
                        meshes={"package://my_robot/meshes/visual_only.dae": own})
        self.assertEqual(e.exception.path,
                         "params.meshes.package://my_robot/meshes/visual_only.dae")

    def test_the_spherized_arm_is_drawn(self) -> None:
        """tests/data/mesh_arm, covered, at its "ready" state, as a .glb a
        viewer opens (REPOSE_ARTIFACT_DIR when set, else a scratch folder):
        one mesh node per sphere of each covered link."""
        from repose import gltf
        from test_gltf import parse_glb
        pkg = os.path.join(ROOT, "tests", "data", "mesh_arm")
        desc = os.path.join(pkg, "mesh_arm_description")
        c = self.client()
        c.load_urdf("py-mesh-arm", os.path.join(desc, "urdf", "mesh_arm.urdf"),
                    os.path.join(desc, "srdf", "mesh_arm.srdf"), package_path=[pkg])
        info = c.model_get("py-mesh-arm")
        spheres = sum(cv["spheres"] for cv in info["mesh_covers"])
        c.call("scene.create", {"scene": "py-mesh-arm"})
        data = gltf.export(c, "py-mesh-arm", model="py-mesh-arm", joints="ready")
        doc, _ = parse_glb(data)
        names = [n.get("name", "") for n in doc.get("nodes", [])]
        self.assertEqual(sum("#s" in n for n in names), spheres)
        out = os.environ.get("REPOSE_ARTIFACT_DIR") or self.tmp
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "mesh_arm_spheres.glb"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    unittest.main()
