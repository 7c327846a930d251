#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a depth camera's frame costs (issue 23, point clouds): a synthetic
640x480 frame (307,200 points on a floor, a table and boxes on it, 2 mm of
noise) replaced into a scene as `points_f32` with a voxel, then one
`scene.distance` query, one request in flight, over the Unix socket of a
reposed this script starts (in-memory store, default threads).

    python3 bench/cloud_bench.py [--reposed build/release/reposed] [--frames 20] [--voxel 0.01]

Prints, as medians over the frames (each frame's points shifted a little,
so every replace builds a new cloud): the client's encoding (float32 bytes
to base64 and the JSON line), the put's round trip, the query's, and the
end-to-end time from the line's first byte sent to the query's reply;
then the spheres kept and the store's bytes per sphere (stats
memory.store_bytes with the cloud less without it).  Figures only: nothing
is asserted.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import socket
import statistics
import struct
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W, H = 640, 480


def frame(rng: random.Random) -> list[float]:
    """Points of surfaces a camera above a table sees: the table top
    (1.2 x 0.8 m at 0.75 m), three boxes on it, the floor around it
    (3 x 3 m), in proportion to their apparent areas, with 2 mm of noise."""
    boxes = [((0.1, 0.1, 0.75), (0.1, 0.15, 0.1)), ((-0.3, -0.2, 0.75), (0.05, 0.05, 0.2)),
             ((0.35, -0.15, 0.75), (0.12, 0.08, 0.05))]
    out: list[float] = []
    n = W * H
    for _ in range(n):
        r = rng.random()
        if r < 0.45:  # floor
            x, y, z = rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5), 0.0
        elif r < 0.8:  # table top
            x, y, z = rng.uniform(-0.6, 0.6), rng.uniform(-0.4, 0.4), 0.75
        else:  # a box: top or a side
            (cx, cy, cz), (hx, hy, hz) = boxes[rng.randrange(3)]
            face = rng.randrange(3)
            if face == 0:
                x, y, z = cx + rng.uniform(-hx, hx), cy + rng.uniform(-hy, hy), cz + 2 * hz
            elif face == 1:
                x, y, z = cx + hx, cy + rng.uniform(-hy, hy), cz + rng.uniform(0, 2 * hz)
            else:
                x, y, z = cx + rng.uniform(-hx, hx), cy - hy, cz + rng.uniform(0, 2 * hz)
        out += (x + rng.gauss(0, 0.002), y + rng.gauss(0, 0.002), z + rng.gauss(0, 0.002))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reposed", default=os.path.join(ROOT, "build", "release", "reposed"))
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--voxel", type=float, default=0.01)
    ap.add_argument("--radius", type=float, default=0.01)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="cloud-bench-")
    sock = os.path.join(d, "reposed.sock")
    proc = subprocess.Popen([args.reposed, "--unix", sock, "--tcp", "none"],
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        f = s.makefile("rwb")
        ids = iter(range(1, 1 << 62))

        def line(method: str, params: dict) -> bytes:
            return (json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": method,
                                "params": params}, separators=(",", ":")) + "\n").encode()

        def reply() -> dict:
            r = json.loads(f.readline())
            if "error" in r:
                raise SystemExit(f"error: {r['error']}")
            return r["result"]

        f.write(line("scene.create", {"scene": "cell"}))
        f.flush()
        reply()
        f.write(line("stats", {}))
        f.flush()
        empty = reply()["memory"]["store_bytes"]
        rng = random.Random(7)
        base = frame(rng)
        raw = struct.pack("<%df" % len(base), *base)
        query = line("scene.distance", {"scene": "cell", "shape": {
            "sphere": {"center": [0.0, 0.0, 1.2], "radius": 0.05}}})
        enc, put, q, e2e = [], [], [], []
        count = 0
        for i in range(args.frames):
            # A new frame: the same surfaces a little shifted (new bytes).
            shifted = bytearray(raw)
            struct.pack_into("<f", shifted, 0, base[0] + 1e-4 * i)
            t0 = time.perf_counter()
            text = base64.b64encode(bytes(shifted)).decode()
            put_line = line("scene.put", {"scene": "cell", "clouds": {"cam": {
                "points_f32": text, "radius": args.radius, "voxel": args.voxel}}})
            t1 = time.perf_counter()
            f.write(put_line)
            f.flush()
            reply()
            t2 = time.perf_counter()
            f.write(query)
            f.flush()
            reply()
            t3 = time.perf_counter()
            enc.append(t1 - t0)
            put.append(t2 - t1)
            q.append(t3 - t2)
            e2e.append(t3 - t1)
        f.write(line("scene.get", {"scene": "cell"}))
        f.flush()
        count = reply()["clouds"]["cam"]["count"]
        f.write(line("stats", {}))
        f.flush()
        full = reply()["memory"]["store_bytes"]
        ms = lambda xs: 1e3 * statistics.median(xs)  # noqa: E731
        print(f"points per frame          {len(base) // 3}")
        print(f"voxel, radius             {args.voxel} m, {args.radius} m")
        print(f"spheres kept              {count}")
        print(f"client encode (median)    {ms(enc):.1f} ms (base64 + JSON line, {len(put_line)} bytes)")
        print(f"put round trip (median)   {ms(put):.1f} ms")
        print(f"query round trip (median) {ms(q):.2f} ms")
        print(f"put + query (median)      {ms(e2e):.1f} ms (min {1e3 * min(e2e):.1f})")
        print(f"store bytes per sphere    {(full - empty) / max(count, 1):.1f}")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
