#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates tests/data/mesh_arm: a 7-joint arm whose collision geometry is
triangle meshes, laid out as the ROS package mesh_arm_description.

    python3 scripts/make-mesh-arm.py [OUT-DIR]

OUT-DIR defaults to tests/data/mesh_arm/mesh_arm_description next to this
script's repository.  Standard library only, and deterministic: every
coordinate is rounded to a micrometre before it is written, so running it
again gives the same bytes (the test mesh_arm_generated checks that the
committed files are what this script writes).

The meshes are closed triangle meshes made here (no CAD): capsule-like
rounded cylinders, boxes with rounded edges and an elbow (a tube bent by 90
degrees with round ends), in the formats a URDF meets: binary and ASCII STL,
Wavefront OBJ and Collada (one in millimetres with <unit meter="0.001">).
One binary STL is in millimetres and referenced with scale="0.001 0.001
0.001"; one mesh is named by a path relative to the URDF's directory
(../meshes/tool.stl), the rest by package:// URIs.
"""
import math
import os
import struct
import sys

PKG = "mesh_arm_description"


def r6(v):
    """Rounded to a micrometre (in the file's unit), and -0 made 0."""
    v = round(v, 6)
    return 0.0 if v == 0 else v


def fmt(v):
    """A coordinate as text: at most 6 decimals, no trailing zeros."""
    s = "%.6f" % r6(v)
    s = s.rstrip("0").rstrip(".")
    return "0" if s in ("", "-0") else s


# ---- meshes: (vertices [(x, y, z)], triangles [(i, j, k)]), outward normals ----


def tube(centres, frames, radius, seg):
    """A closed tube through ring centres (with frames (u, v, t): two unit
    vectors spanning the ring's plane and its tangent), radius `radius`,
    `seg` vertices per ring, closed by hemispheres at both ends."""
    caps = max(4, seg // 4)
    verts, tris = [], []
    rings = []  # (centre, u, v, ring radius)
    c0, (u0, v0, t0) = centres[0], frames[0]
    c1, (u1, v1, t1) = centres[-1], frames[-1]
    for k in range(1, caps):  # start cap: from near the pole to the equator
        a = math.pi / 2 * (1 - k / caps)
        off = -radius * math.sin(a)
        rings.append(((c0[0] + t0[0] * off, c0[1] + t0[1] * off, c0[2] + t0[2] * off),
                      u0, v0, radius * math.cos(a)))
    for c, (u, v, _t) in zip(centres, frames):
        rings.append((c, u, v, radius))
    for k in range(1, caps):  # end cap: from the equator to near the pole
        a = math.pi / 2 * k / caps
        off = radius * math.sin(a)
        rings.append(((c1[0] + t1[0] * off, c1[1] + t1[1] * off, c1[2] + t1[2] * off),
                      u1, v1, radius * math.cos(a)))
    verts.append(tuple(c0[i] - t0[i] * radius for i in range(3)))  # start pole
    for c, u, v, rr in rings:
        for j in range(seg):
            a = 2 * math.pi * j / seg
            ca, sa = math.cos(a), math.sin(a)
            verts.append(tuple(c[i] + rr * (ca * u[i] + sa * v[i]) for i in range(3)))
    verts.append(tuple(c1[i] + t1[i] * radius for i in range(3)))  # end pole
    last = len(verts) - 1
    n = len(rings)

    def at(r, j):
        return 1 + r * seg + j % seg

    for j in range(seg):  # (u, v, t) is right-handed: u x v = t
        tris.append((0, at(0, j + 1), at(0, j)))
    for r in range(n - 1):
        for j in range(seg):
            a, b = at(r, j), at(r, j + 1)
            c, d = at(r + 1, j), at(r + 1, j + 1)
            tris.append((a, b, d))
            tris.append((a, d, c))
    for j in range(seg):
        tris.append((last, at(n - 1, j), at(n - 1, j + 1)))
    return verts, tris


def capsule(radius, length, seg=32, rows=4):
    """A rounded cylinder along z from 0 to `length` (the flat part), with
    hemispherical ends beyond."""
    centres = [(0.0, 0.0, length * i / rows) for i in range(rows + 1)]
    frames = [((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))] * (rows + 1)
    return tube(centres, frames, radius, seg)


def elbow(radius, bend, seg=28, steps=16, straight=0.04):
    """A tube that rises along z by `straight`, bends by 90 degrees towards
    +x on an arc of radius `bend`, and goes on along +x by `straight`."""
    centres, frames = [], []
    centres.append((0.0, 0.0, 0.0))
    frames.append(((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
    for k in range(steps + 1):
        a = math.pi / 2 * k / steps
        # Arc centre at (bend, 0, straight); tangent turns from +z to +x.
        c = (bend - bend * math.cos(a), 0.0, straight + bend * math.sin(a))
        t = (math.sin(a), 0.0, math.cos(a))
        u = (math.cos(a), 0.0, -math.sin(a))
        centres.append(c)
        frames.append((u, (0.0, 1.0, 0.0), t))
    end = centres[-1]
    centres.append((end[0] + straight, end[1], end[2]))
    frames.append(frames[-1])
    return tube(centres, frames, radius, seg)


def rounded_box(hx, hy, hz, r, n=12):
    """A box of half extents hx, hy, hz centred at 0 whose edges and corners
    are rounded with radius r (every point of the cube grid of n x n cells
    per face is pushed onto the box shrunk by r, plus r along the way)."""
    verts, index, tris = [], {}, []
    inner = (hx - r, hy - r, hz - r)

    def vertex(g):
        if g in index:
            return index[g]
        p = [g[i] / n * 2 - 1 for i in range(3)]  # on the cube [-1, 1]^3
        half = (hx, hy, hz)
        q = [p[i] * half[i] for i in range(3)]
        cl = [max(-inner[i], min(inner[i], q[i])) for i in range(3)]
        d = [q[i] - cl[i] for i in range(3)]
        ln = math.sqrt(sum(x * x for x in d))
        out = tuple(cl[i] + r * d[i] / ln for i in range(3)) if ln > 0 else tuple(q)
        index[g] = len(verts)
        verts.append(out)
        return index[g]

    # Each face: axis `a` fixed at 0 or n, the other two (b, c) run over the grid.
    for a in range(3):
        b, c = (a + 1) % 3, (a + 2) % 3
        for side in (0, n):
            for i in range(n):
                for j in range(n):
                    g = []
                    for di, dj in ((0, 0), (1, 0), (1, 1), (0, 1)):
                        k = [0, 0, 0]
                        k[a], k[b], k[c] = side, i + di, j + dj
                        g.append(vertex(tuple(k)))
                    if side == n:  # outward +a: b x c = a
                        tris.append((g[0], g[1], g[2]))
                        tris.append((g[0], g[2], g[3]))
                    else:
                        tris.append((g[0], g[2], g[1]))
                        tris.append((g[0], g[3], g[2]))
    return verts, tris


def moved(mesh, dx=0.0, dy=0.0, dz=0.0, s=1.0):
    verts, tris = mesh
    return [((x + dx) * s, (y + dy) * s, (z + dz) * s) for x, y, z in verts], tris


def rounded(mesh):
    verts, tris = mesh
    return [tuple(r6(c) for c in v) for v in verts], tris


# ---- writers ----------------------------------------------------------------------


def normal(verts, t):
    a, b, c = (verts[i] for i in t)
    u = [b[i] - a[i] for i in range(3)]
    v = [c[i] - a[i] for i in range(3)]
    n = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    ln = math.sqrt(sum(x * x for x in n)) or 1.0
    return tuple(r6(x / ln) for x in n)


def write_stl_binary(path, mesh, name):
    verts, tris = mesh
    header = ("%s: generated by scripts/make-mesh-arm.py" % name).encode()[:80].ljust(80, b" ")
    out = [header, struct.pack("<I", len(tris))]
    for t in tris:
        out.append(struct.pack("<3f", *normal(verts, t)))
        for i in t:
            out.append(struct.pack("<3f", *verts[i]))
        out.append(b"\0\0")
    with open(path, "wb") as f:
        f.write(b"".join(out))


def write_stl_ascii(path, mesh, name):
    verts, tris = mesh
    lines = ["solid %s" % name]
    for t in tris:
        lines.append("facet normal %s" % " ".join(fmt(x) for x in normal(verts, t)))
        lines.append("outer loop")
        for i in t:
            lines.append("vertex %s" % " ".join(fmt(x) for x in verts[i]))
        lines.append("endloop")
        lines.append("endfacet")
    lines.append("endsolid %s" % name)
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def write_obj(path, mesh, name):
    verts, tris = mesh
    lines = ["# %s: generated by scripts/make-mesh-arm.py (metres)" % name, "o %s" % name]
    lines += ["v %s" % " ".join(fmt(x) for x in v) for v in verts]
    lines += ["f %d %d %d" % (a + 1, b + 1, c + 1) for a, b, c in tris]
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def write_dae(path, mesh, name, unit_mm):
    verts, tris = mesh
    unit = ('<unit name="millimeter" meter="0.001"/>' if unit_mm
            else '<unit name="meter" meter="1"/>')
    pos = " ".join(fmt(c) for v in verts for c in v)
    idx = " ".join("%d %d %d" % t for t in tris)
    text = f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset>
    <contributor><authoring_tool>scripts/make-mesh-arm.py</authoring_tool></contributor>
    <created>2024-01-01T00:00:00</created>
    <modified>2024-01-01T00:00:00</modified>
    {unit}
    <up_axis>Z_UP</up_axis>
  </asset>
  <library_geometries>
    <geometry id="{name}-mesh" name="{name}">
      <mesh>
        <source id="{name}-positions">
          <float_array id="{name}-positions-array" count="{3 * len(verts)}">{pos}</float_array>
          <technique_common>
            <accessor source="#{name}-positions-array" count="{len(verts)}" stride="3">
              <param name="X" type="float"/>
              <param name="Y" type="float"/>
              <param name="Z" type="float"/>
            </accessor>
          </technique_common>
        </source>
        <vertices id="{name}-vertices">
          <input semantic="POSITION" source="#{name}-positions"/>
        </vertices>
        <triangles count="{len(tris)}">
          <input semantic="VERTEX" source="#{name}-vertices" offset="0"/>
          <p>{idx}</p>
        </triangles>
      </mesh>
    </geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="scene" name="scene">
      <node id="{name}" name="{name}" type="NODE">
        <instance_geometry url="#{name}-mesh"/>
      </node>
    </visual_scene>
  </library_visual_scenes>
  <scene>
    <instance_visual_scene url="#scene"/>
  </scene>
</COLLADA>
"""
    with open(path, "w", newline="\n") as f:
        f.write(text)


# ---- the robot -----------------------------------------------------------------------

LINKS = [
    # name, mesh file, format, mesh (metres), file unit, filename as written, scale attr
    ("base", "base.stl", "stl-bin", lambda: capsule(0.085, 0.17, seg=40, rows=6),
     1.0, "package", None),
    ("link1", "link1.stl", "stl-ascii", lambda: capsule(0.065, 0.1, seg=32, rows=4), 1.0,
     "package", None),
    ("link2", "link2.obj", "obj", lambda: capsule(0.06, 0.3, seg=28, rows=8), 1.0, "package",
     None),
    ("link3", "link3.dae", "dae-m", lambda: elbow(0.055, 0.06), 1.0, "package", None),
    ("link4", "link4_mm.stl", "stl-bin", lambda: capsule(0.055, 0.26, seg=32, rows=8), 1000.0,
     "package", "0.001 0.001 0.001"),
    ("link5", "link5.dae", "dae-mm", lambda: moved(rounded_box(0.05, 0.05, 0.07, 0.02, n=14),
                                                    dz=0.06), 1000.0, "package", None),
    ("link6", "link6.obj", "obj", lambda: elbow(0.045, 0.05, seg=24, steps=12), 1.0, "package",
     None),
    ("link7", "link7.stl", "stl-ascii", lambda: moved(rounded_box(0.045, 0.045, 0.03, 0.012,
                                                                  n=10), dz=0.03), 1.0, "package",
     None),
    ("tool", "tool.stl", "stl-bin", lambda: moved(rounded_box(0.03, 0.07, 0.04, 0.01, n=12),
                                                  dz=0.04), 1.0, "relative", None),
]

# name, parent, child, xyz, axis, lower, upper
JOINTS = [
    ("joint1", "base", "link1", (0, 0, 0.28), (0, 0, 1), -2.8973, 2.8973),
    ("joint2", "link1", "link2", (0, 0, 0.16), (0, 1, 0), -1.7628, 1.7628),
    ("joint3", "link2", "link3", (0, 0, 0.32), (0, 0, 1), -2.8973, 2.8973),
    ("joint4", "link3", "link4", (0.14, 0, 0.14), (0, 1, 0), -3.0718, -0.0698),
    ("joint5", "link4", "link5", (0, 0, 0.28), (0, 0, 1), -2.8973, 2.8973),
    ("joint6", "link5", "link6", (0, 0, 0.14), (0, 1, 0), -0.0175, 3.7525),
    ("joint7", "link6", "link7", (0.11, 0, 0.1), (1, 0, 0), -2.8973, 2.8973),
]
TOOL = ("tool_joint", "link7", "tool", (0, 0, 0.06))

# A collision origin per link (the meshes are placed in the link frame).
ORIGINS = {
    "base": "0 0 0.085",
    "link1": "0 0 0",
    "link2": "0 0 0",
    "link3": "0 0 0.02",
    "link4": "0 0 0",
    "link5": "0 0 0",
    "link6": "0 0 0",
    "link7": "0 0 0",
    "tool": "0 0 0",
}

READY = [0, -0.3, 0, -1.5, 0, 1.2, 0.785398]
HOME = [0, 0, 0, -1.5708, 0, 1.5708, 0]


def uri_of(file, style):
    if style == "relative":
        return "../meshes/" + file
    return "package://%s/meshes/%s" % (PKG, file)


def write_urdf(path):
    L = []
    L.append('<?xml version="1.0" encoding="utf-8"?>')
    L.append("<!--")
    L.append("  mesh_arm: a 7-joint arm whose collision geometry is triangle meshes, for")
    L.append("  repose's tests.  Generated by scripts/make-mesh-arm.py; do not edit.")
    L.append("  The meshes are in ../meshes: binary and ASCII STL, OBJ and Collada; link4's")
    L.append("  is in millimetres (scale 0.001), link5's Collada declares millimetres with")
    L.append("  <unit>, and the tool's is named relative to this file.")
    L.append("-->")
    L.append('<robot name="mesh_arm">')
    L.append('  <material name="grey">')
    L.append('    <color rgba="0.7 0.7 0.7 1"/>')
    L.append("  </material>")
    for name, file, _kind, _mk, _unit, style, scale in LINKS:
        uri = uri_of(file, style)
        sc = ' scale="%s"' % scale if scale else ""
        L.append("")
        L.append('  <link name="%s">' % name)
        L.append("    <visual>")
        L.append('      <origin xyz="%s" rpy="0 0 0"/>' % ORIGINS[name])
        L.append('      <geometry><mesh filename="%s"%s/></geometry>' % (uri, sc))
        L.append('      <material name="grey"/>')
        L.append("    </visual>")
        L.append("    <inertial>")
        L.append('      <origin xyz="0 0 0.05" rpy="0 0 0"/>')
        L.append('      <mass value="1.5"/>')
        L.append('      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>')
        L.append("    </inertial>")
        L.append("    <!-- collision: the same mesh -->")
        L.append("    <collision>")
        L.append('      <origin xyz="%s" rpy="0 0 0"/>' % ORIGINS[name])
        L.append("      <geometry>")
        L.append('        <mesh filename="%s"%s/>' % (uri, sc))
        L.append("      </geometry>")
        L.append("    </collision>")
        L.append("  </link>")
    for jn, parent, child, xyz, axis, lo, hi in JOINTS:
        L.append("")
        L.append('  <joint name="%s" type="revolute">' % jn)
        L.append('    <parent link="%s"/>' % parent)
        L.append('    <child link="%s"/>' % child)
        L.append('    <origin xyz="%s" rpy="0 0 0"/>' % " ".join(fmt(v) for v in xyz))
        L.append('    <axis xyz="%s"/>' % " ".join(str(v) for v in axis))
        L.append('    <limit lower="%s" upper="%s" effort="87" velocity="2.175"/>' % (lo, hi))
        L.append("  </joint>")
    jn, parent, child, xyz = TOOL
    L.append("")
    L.append('  <joint name="%s" type="fixed">' % jn)
    L.append('    <parent link="%s"/>' % parent)
    L.append('    <child link="%s"/>' % child)
    L.append('    <origin xyz="%s" rpy="0 0 0"/>' % " ".join(fmt(v) for v in xyz))
    L.append("  </joint>")
    L.append("</robot>")
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(L) + "\n")


def write_srdf(path):
    arm = [j[0] for j in JOINTS]
    L = ['<?xml version="1.0" encoding="utf-8"?>',
         "<!-- mesh_arm's semantic description (MoveIt SRDF).  Generated by",
         "     scripts/make-mesh-arm.py; do not edit.  repose reads only the",
         "     <disable_collisions> pairs. -->",
         '<robot name="mesh_arm">',
         '  <group name="arm">',
         '    <chain base_link="base" tip_link="tool"/>',
         "  </group>",
         '  <group name="wrist">']
    L += ['    <joint name="%s"/>' % j for j in arm[4:]]
    L += ["  </group>",
          '  <group name="arm_and_wrist">',
          '    <group name="arm"/>',
          '    <group name="wrist"/>',
          "  </group>"]
    for state, values in (("ready", READY), ("home", HOME)):
        L.append('  <group_state name="%s" group="arm">' % state)
        L += ['    <joint name="%s" value="%s"/>' % (j, v) for j, v in zip(arm, values)]
        L.append("  </group_state>")
    L.append('  <end_effector name="tool_ee" parent_link="link7" group="wrist"/>')
    pairs = [(j[1], j[2]) for j in JOINTS] + [(TOOL[1], TOOL[2])]
    L += ['  <disable_collisions link1="%s" link2="%s" reason="Adjacent"/>' % p for p in pairs]
    L.append("</robot>")
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(L) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "tests", "data", "mesh_arm", PKG)
    out = os.path.normpath(sys.argv[1] if len(sys.argv) > 1 else default)
    for sub in ("urdf", "srdf", "meshes"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    with open(os.path.join(out, "package.xml"), "w", newline="\n") as f:
        f.write('<?xml version="1.0"?>\n<package format="2">\n'
                "  <name>%s</name>\n  <version>0.1.0</version>\n"
                "  <description>mesh_arm, a test robot with mesh collisions (generated by\n"
                "  repose's scripts/make-mesh-arm.py)</description>\n"
                '  <maintainer email="repose@example.invalid">repose</maintainer>\n'
                "  <license>MIT</license>\n</package>\n" % PKG)
    total = 0
    for name, file, kind, make, unit, _style, _scale in LINKS:
        mesh = rounded(moved(make(), s=unit))
        path = os.path.join(out, "meshes", file)
        if kind == "stl-bin":
            write_stl_binary(path, mesh, name)
        elif kind == "stl-ascii":
            write_stl_ascii(path, mesh, name)
        elif kind == "obj":
            write_obj(path, mesh, name)
        else:
            write_dae(path, mesh, name, kind == "dae-mm")
        total += len(mesh[1])
        print("%-6s %-14s %5d triangles" % (name, file, len(mesh[1])), file=sys.stderr)
    write_urdf(os.path.join(out, "urdf", "mesh_arm.urdf"))
    write_srdf(os.path.join(out, "srdf", "mesh_arm.srdf"))
    print("%d triangles in all, into %s" % (total, out), file=sys.stderr)


if __name__ == "__main__":
    main()
