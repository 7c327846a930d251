# SPDX-License-Identifier: MIT
"""Compares sphere covers of a URDF's collision meshes, link by link:
how much of each mesh a cover leaves out, and how far it reaches beyond.

    /usr/bin/python3 bench/spherize_compare.py MESH.urdf PACKAGE_DIR A.urdf [B.urdf ...]

MESH.urdf names the meshes (OBJ or ASCII/binary STL, package:// resolved
under PACKAGE_DIR as DIR/NAME/rest); each A.urdf, B.urdf is the same
robot with <sphere> collisions (e.g. repose-spherize's output and a
hand-made spherized URDF).  Per link and cover: spheres; "missed", the
share of surface points (a 10-step barycentric grid on every triangle)
outside every sphere by more than 1e-9 m, and the largest distance by
which one is outside; "over", the largest and the mean distance from the
cover's boundary (192 lattice points a sphere, those inside no other
sphere of the link) to the mesh, counting only points outside the solid
the mesh bounds (ray parity), as rp_spherize estimates it.  Needs numpy
(Debian python3-numpy).  A benchmark, not a test.
"""
import math
import os
import struct
import sys
import xml.etree.ElementTree as ET

import numpy as np


def rpy_matrix(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def origin_of(el):
    o = el.find("origin")
    xyz = [float(v) for v in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()]
    rpy = [float(v) for v in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
    return np.array(xyz), rpy_matrix(*rpy)


def load_mesh(path):
    data = open(path, "rb").read()
    if path.lower().endswith(".obj"):
        vs, tris = [], []
        for line in data.decode(errors="replace").splitlines():
            w = line.split()
            if not w:
                continue
            if w[0] == "v":
                vs.append([float(x) for x in w[1:4]])
            elif w[0] == "f":
                idx = [int(x.split("/")[0]) for x in w[1:]]
                idx = [i - 1 if i > 0 else len(vs) + i for i in idx]
                for k in range(1, len(idx) - 1):
                    tris.append([vs[idx[0]], vs[idx[k]], vs[idx[k + 1]]])
        return np.array(tris, dtype=float)
    if len(data) >= 84 and 84 + 50 * struct.unpack("<I", data[80:84])[0] == len(data):
        n = struct.unpack("<I", data[80:84])[0]
        return np.array([struct.unpack("<12f", data[84 + 50 * i:84 + 50 * i + 48])[3:] for i in range(n)],
                        dtype=float).reshape(-1, 3, 3)
    vs = [[float(x) for x in l.split()[1:4]] for l in data.decode().splitlines()
          if l.strip().startswith("vertex")]
    return np.array(vs, dtype=float).reshape(-1, 3, 3)


def resolve(uri, pkg, urdf_dir):
    if uri.startswith("package://"):
        return os.path.join(pkg, uri[len("package://"):])
    return uri if os.path.isabs(uri) else os.path.join(urdf_dir, uri)


def link_meshes(urdf, pkg):
    out = {}
    for link in ET.parse(urdf).getroot().findall("link"):
        for col in link.findall("collision"):
            m = col.find("geometry/mesh")
            if m is None:
                continue
            t, R = origin_of(col)
            s = np.array([float(v) for v in m.get("scale", "1 1 1").split()])
            tri = load_mesh(resolve(m.get("filename"), pkg, os.path.dirname(urdf))) * s
            out.setdefault(link.get("name"), []).append(tri @ R.T + t)
    return {k: np.concatenate(v) for k, v in out.items()}


def link_spheres(urdf):
    out = {}
    for link in ET.parse(urdf).getroot().findall("link"):
        for col in link.findall("collision"):
            sp = col.find("geometry/sphere")
            if sp is not None:
                t, _ = origin_of(col)
                out.setdefault(link.get("name"), []).append((t, float(sp.get("radius"))))
    return out


def point_tri_dist(p, tri):
    """Distances from points p (n,3) to the nearest of triangles tri (m,3,3)."""
    best = np.full(len(p), np.inf)
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    for i in range(0, len(tri), 256):
        A, B, C = a[i:i + 256], b[i:i + 256], c[i:i + 256]
        ab, ac = B - A, C - A
        n = np.cross(ab, ac)
        nn = np.einsum("ij,ij->i", n, n)
        ap = p[:, None, :] - A[None]
        t = np.einsum("pmj,mj->pm", ap, n) / np.where(nn > 0, nn, 1)
        q = p[:, None, :] - t[..., None] * n[None]
        d = np.full(t.shape, np.inf)
        v0, v1 = ab[None], ac[None]
        v2 = q - A[None]
        d00, d01, d11 = (v0 * v0).sum(-1), (v0 * v1).sum(-1), (v1 * v1).sum(-1)
        d20, d21 = (v2 * v0).sum(-1), (v2 * v1).sum(-1)
        den = d00 * d11 - d01 * d01
        with np.errstate(divide="ignore", invalid="ignore"):
            v = (d11 * d20 - d01 * d21) / den
            w = (d00 * d21 - d01 * d20) / den
        inside = (v >= 0) & (w >= 0) & (v + w <= 1) & (nn[None] > 0)
        d = np.where(inside, np.abs(t) * np.sqrt(nn)[None], d)
        for e0, e1 in ((A, B), (B, C), (C, A)):
            e = e1 - e0
            ee = np.einsum("ij,ij->i", e, e)
            s = np.clip(np.einsum("pmj,mj->pm", p[:, None, :] - e0[None], e) / np.where(ee > 0, ee, 1), 0, 1)
            x = e0[None] + s[..., None] * e[None]
            d = np.minimum(d, np.linalg.norm(p[:, None, :] - x, axis=-1))
        best = np.minimum(best, d.min(axis=1))
    return best


def inside_solid(p, tri):
    """Ray parity, a majority of three skew directions."""
    votes = np.zeros(len(p), dtype=int)
    for d in (np.array([0.577, 0.5774, 0.5771]), np.array([-0.2673, 0.8018, -0.5345]),
              np.array([0.8165, -0.4082, -0.4083])):
        a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
        e1, e2 = b - a, c - a
        pv = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, pv)
        ok = det != 0
        inv = np.where(ok, 1 / np.where(ok, det, 1), 0)
        tv = p[:, None, :] - a[None]
        u = np.einsum("pmj,mj->pm", tv, pv) * inv
        qv = np.cross(tv, e1[None])
        v = (qv @ d) * inv
        t = np.einsum("pmj,mj->pm", qv, e2) * inv
        hits = (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0) & ok[None]
        votes += hits.sum(axis=1) & 1
    return votes >= 2


def lattice(n=192):
    g = math.pi * (3 - math.sqrt(5))
    z = 1 - (2 * np.arange(n) + 1) / n
    r = np.sqrt(1 - z * z)
    return np.stack([r * np.cos(g * np.arange(n)), r * np.sin(g * np.arange(n)), z], axis=1)


def measure(tri, spheres):
    k = 10
    bary = np.array([(i / k, j / k) for i in range(k + 1) for j in range(k + 1 - i)])
    pts = (tri[:, 0][:, None] + bary[None, :, 0, None] * (tri[:, 1] - tri[:, 0])[:, None]
           + bary[None, :, 1, None] * (tri[:, 2] - tri[:, 0])[:, None]).reshape(-1, 3)
    C = np.array([c for c, _ in spheres])
    R = np.array([r for _, r in spheres])
    gap = (np.linalg.norm(pts[:, None] - C[None], axis=-1) - R[None]).min(axis=1)
    missed = float((gap > 1e-9).mean())
    worst_gap = float(max(gap.max(), 0.0))
    L = lattice()
    bpts = (C[:, None] + R[:, None, None] * L[None]).reshape(-1, 3)
    owner = np.repeat(np.arange(len(C)), len(L))
    dd = np.linalg.norm(bpts[:, None] - C[None], axis=-1) - R[None]
    dd[np.arange(len(bpts)), owner] = 1.0
    boundary = bpts[(dd >= 0).all(axis=1)]
    d = np.zeros(1)
    if len(boundary):
        d = point_tri_dist(boundary, tri)
        d = d[~inside_solid(boundary, tri)]
        if len(d) == 0:
            d = np.zeros(1)
    return len(spheres), missed, worst_gap, float(d.max()), float(d.mean())


def main():
    mesh_urdf, pkg, covers = sys.argv[1], sys.argv[2], sys.argv[3:]
    meshes = link_meshes(mesh_urdf, pkg)
    sets = [(os.path.basename(c), link_spheres(c)) for c in covers]
    print(f"{'link':18s} {'tris':>5s}  " + "  ".join(
        f"{n[:22]:>22s}: spheres missed(max mm) over max/mean mm" for n, _ in sets))
    tot = [[0, 0.0, 0.0, []] for _ in sets]
    for link, tri in meshes.items():
        row = f"{link:18s} {len(tri):5d}  "
        for i, (_, sp) in enumerate(sets):
            if link not in sp:
                row += f"{'-':>60s}  "
                continue
            n, miss, gap, omax, omean = measure(tri, sp[link])
            tot[i][0] += n
            tot[i][1] = max(tot[i][1], gap)
            tot[i][2] = max(tot[i][2], omax)
            tot[i][3].append(omean)
            row += f"{n:>24d} {100 * miss:5.1f}% ({1000 * gap:5.1f})  {1000 * omax:6.1f}/{1000 * omean:5.1f}    "
        print(row)
    for (name, _), t in zip(sets, tot):
        print(f"{name}: {t[0]} spheres; worst miss {1000 * t[1]:.1f} mm; overshoot max {1000 * t[2]:.1f} mm, "
              f"mean of link means {1000 * np.mean(t[3]):.1f} mm")


if __name__ == "__main__":
    main()
