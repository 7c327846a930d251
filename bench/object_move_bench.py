#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What moving an object costs next to a query (issue 23, objects with
poses): a scene of 100,000 small random spheres and capsules holding one
10-shape object; `scene.move` of the object (nudged by <= 5 mm per axis and
a small turn) then a `scene.distance` of one random sphere, against the
query alone.  One request in flight, over the Unix socket of a reposed this
script starts, a fresh one for each phase.

    python3 bench/object_move_bench.py [--reposed build/release/reposed] [--seconds 3]

Prints, for `ping`, the query alone, move then query (two round trips),
and move and query as one JSON-RPC batch (one line, one round trip; the
query sees the move): the medians of the round trips, and the daemon's own mean handler times from `stats`
(`requests.time_us_by_method`, one call in 8 sampled).  The round trips
are mostly the transport's (compare with ping); the handler times say what
the server spends.  Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import rpc_util  # noqa: E402  (the scripts' shared connection and daemon start)


def phase(args, kind: str):
    proc, sock, _ = rpc_util.start(args.reposed, log=subprocess.DEVNULL)
    try:
        conn = rpc_util.Conn(sock)

        call = conn.result
        rng = random.Random(3)

        def point():
            return [rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-0.5, 1.5)]

        call("scene.create", {"scene": "big"})
        chunk = 10000
        for c in range(0, args.shapes, chunk):
            shapes = {}
            for i in range(c, min(c + chunk, args.shapes)):
                p = point()
                if i % 2:
                    shapes[f"s{i}"] = {"sphere": {"center": p, "radius": 0.005}}
                else:
                    q = [p[0] + 0.01, p[1], p[2]]
                    shapes[f"s{i}"] = {"capsule": {"a": p, "b": q, "radius": 0.005}}
            call("scene.put", {"scene": "big", "shapes": shapes})
        call("scene.put", {"scene": "big", "objects": {"part": {"shapes": {
            f"p{k}": {"sphere": {"center": [0.02 * k, 0, 0], "radius": 0.01}}
            for k in range(10)}}}})

        def query():
            return "scene.distance", {"scene": "big", "shapes": {"q": {"sphere": {
                "center": point(), "radius": 0.01}}}}

        def move():
            t = [rng.uniform(-0.005, 0.005) for _ in range(3)]
            v = [1.0] + [rng.uniform(-0.005, 0.005) for _ in range(3)]
            n = math.sqrt(sum(x * x for x in v))
            return "scene.move", {"scene": "big", "objects": {"part": {
                "translation": t, "rotation": {"w": v[0] / n, "x": v[1] / n, "y": v[2] / n,
                                               "z": v[3] / n}}}}

        for _ in range(20):  # warm-up: the first query after the puts builds the tree
            call(*query())
        lat = []
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            todo = {"ping": [("ping", {})], "query": [query()], "move": [move(), query()],
                    "batch": [move(), query()]}[kind]
            t = time.perf_counter()
            if kind == "batch":
                conn.batch(todo)
            else:
                for m, p in todo:
                    call(m, p)
            lat.append(time.perf_counter() - t)
        lat.sort()
        by = call("stats", {})["requests"]["time_us_by_method"]
        return lat[len(lat) // 2] * 1e6, by
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reposed", default=os.path.join(ROOT, "build", "release", "reposed"))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--shapes", type=int, default=100000)
    args = ap.parse_args()
    ping, _ = phase(args, "ping")
    q_rt, q_by = phase(args, "query")
    m_rt, m_by = phase(args, "move")
    b_rt, _ = phase(args, "batch")
    q_srv = q_by["scene.distance"]
    mq_srv = m_by["scene.move"] + m_by["scene.distance"]
    print(f"object_move_bench: a 10-shape object in {args.shapes} shapes; medians of round "
          f"trips and mean handler times, us")
    print(f"  ping {ping:.1f} | query alone {q_rt:.1f} (server {q_srv:.1f}) | move + query "
          f"{m_rt:.1f} (server: move {m_by['scene.move']:.1f} + query "
          f"{m_by['scene.distance']:.1f})")
    print(f"  ratio (move + query) / query: round trips {m_rt / q_rt:.2f}, server "
          f"{mq_srv / q_srv:.2f}")
    print(f"  move and query as one batch [move, query]: round trip {b_rt:.1f}, ratio to the "
          f"query alone {b_rt / q_rt:.2f}")


if __name__ == "__main__":
    main()
