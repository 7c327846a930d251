#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What moving a robot instance costs (issue 23, robots in scenes): the
test arm (tests/data/arm7.urdf, 57 shapes, 8 joints) placed in a scene of
10,000 small random spheres, then `scene.move` of its joints, one request
in flight, over the Unix socket of a reposed this script starts.

    python3 bench/robot_move_bench.py [--reposed build/release/reposed] [--seconds 2]

Prints the medians of the round trips of: `ping` (the transport's share),
moves by small joint steps (each joint +-0.01 rad, then +-0.05 rad, a
robot process following its trajectory), and moves to random joint
vectors (every link jumps).  A move's server time is about its round trip
less the ping's; the daemon's own figure is printed too: the median of
`stats` `latency_us` (from parse to reply written, sampled one line in 8;
the upper edge of its histogram bucket, so up to 9% high) over a fresh
daemon's moves of each kind.  Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import rpc_util  # noqa: E402  (the scripts' shared connection and daemon start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reposed", default=os.path.join(ROOT, "build", "release", "reposed"))
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--shapes", type=int, default=10000)
    args = ap.parse_args()
    rows = []
    for kind in ("ping", "small", "larger", "jumps"):
        rows.append(run_phase(args, kind))
    print(f"robot_move_bench: arm7 ({rows[0][2]} joints) in {args.shapes} spheres; medians, us "
          f"(round trip / server)")
    names = ("ping", "move, steps of 0.01 rad", "steps of 0.05 rad", "random joint vectors")
    print("  " + " | ".join(f"{n} {rt:.1f} / {srv:.1f}" for n, (rt, srv, _) in zip(names, rows)))


def run_phase(args, kind: str):
    """Round-trip median and the daemon's own p50 for one kind of request,
    on a fresh daemon (its latency histogram then holds that kind only,
    beside a handful of setup lines)."""
    proc, sock, _ = rpc_util.start(args.reposed, log=subprocess.DEVNULL)
    try:
        conn = rpc_util.Conn(sock)

        call = conn.result
        rng = random.Random(2)
        data = os.path.join(ROOT, "tests", "data")
        with open(os.path.join(data, "arm7.urdf")) as u, open(os.path.join(data, "arm7.srdf")) as r:
            call("model.put", {"model": "arm7", "urdf": u.read(), "srdf": r.read()})
        dof = len(call("model.get", {"model": "arm7"})["joints"])
        call("scene.create", {"scene": "big"})
        shapes = {f"s{i}": {"sphere": {"center": [rng.uniform(-2, 2), rng.uniform(-2, 2),
                                                  rng.uniform(-0.5, 2)], "radius": 0.01}}
                  for i in range(args.shapes)}
        call("scene.put", {"scene": "big", "shapes": shapes})
        call("scene.put", {"scene": "big", "robots": {"other": {
            "model": "arm7", "base": {"translation": [1, 0, 0]}}}})

        q = [0.0] * dof

        def step(size: float):
            def run():
                for k in range(dof):
                    q[k] += rng.uniform(-size, size)
                return "scene.move", {"scene": "big", "robots": {"other": {"joints": list(q)}}}
            return run

        run = {"ping": lambda: ("ping", {}), "small": step(0.01), "larger": step(0.05),
               "jumps": lambda: ("scene.move", {"scene": "big", "robots": {"other": {
                   "joints": [rng.uniform(-1, 1) for _ in range(dof)]}}})}[kind]
        lat = []
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            params = run()
            t = time.perf_counter()
            call(*params)
            lat.append(time.perf_counter() - t)
        lat.sort()
        server = call("stats", {})["latency_us"]["p50"]
        return lat[len(lat) // 2] * 1e6, server, dof
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
