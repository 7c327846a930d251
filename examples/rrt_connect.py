#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""RRT-Connect in pure Python, with reposed doing every collision check.

Plans the test arm (tests/data/arm7.urdf, 8 joints) from one side of a post
to the other, under a lamp and in front of a shelf: the straight joint-space
line hits the post, so the planner has to go around it.  Each tree edge is checked with one check.motion
request (the daemon interpolates, samples or proves the segment); the plan
found is shortcut, then checked again with a fine discrete check.motion
(resolution 1e-3) before it is printed; then the daemon plans the same
problem itself (`plan`) and both times are printed.  Exit 0 with valid
plans, 1 if no plan was found, 3 if the daemon could not be reached.

    python3 examples/rrt_connect.py [--unix /tmp/reposed.sock] [--seed 1] [--mode certified]

Run it from the repository with reposed running (bash scripts/run.sh); it
finds the repose package in python/ when it is not installed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from typing import List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import repose
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import repose

Q = List[float]
START = [1.2, 0.6, 0.0, -1.2, 0.0, 1.8, 0.785, 0.02]
GOAL = [-1.2, 0.6, 0.0, -1.2, 0.0, 1.8, 0.785, 0.02]
# A post in front of the arm, a lamp above it and a shelf behind.
CELL = {
    "post": {"capsule": {"a": [0.65, 0.0, 0.0], "b": [0.65, 0.0, 0.7], "radius": 0.1}},
    "lamp": {"sphere": {"center": [0.45, 0.0, 0.95], "radius": 0.12}},
    "shelf": {"capsule": {"a": [-0.2, 0.55, 0.75], "b": [-0.2, -0.55, 0.75], "radius": 0.04}},
}


class Planner:
    def __init__(self, c: repose.Client, model: str, scene: str, mode: str, step: float,
                 rng: random.Random) -> None:
        self.c, self.model, self.scene, self.mode, self.step, self.rng = c, model, scene, mode, step, rng
        info = c.model_get(model)
        self.lo = [info["limits"][j]["lower"] for j in info["joints"]]
        self.hi = [info["limits"][j]["upper"] for j in info["joints"]]
        self.calls = 0
        self.check_s = 0.0

    def edge_ok(self, a: Q, b: Q) -> bool:
        """One check.motion request: the whole segment a -> b."""
        t = time.perf_counter()
        r = self.c.check_motion(self.model, [a, b], scene=self.scene, mode=self.mode)
        self.check_s += time.perf_counter() - t
        self.calls += 1
        return r["valid"]

    def sample(self) -> Q:
        return [self.rng.uniform(l, h) for l, h in zip(self.lo, self.hi)]

    def toward(self, a: Q, b: Q) -> Q:
        """b, or the point `step` from a on the way to it (max-norm)."""
        d = max(abs(y - x) for x, y in zip(a, b))
        if d <= self.step:
            return list(b)
        s = self.step / d
        return [x + s * (y - x) for x, y in zip(a, b)]

    @staticmethod
    def nearest(tree: List[Tuple[Q, int]], q: Q) -> int:
        return min(range(len(tree)), key=lambda i: sum((x - y) ** 2 for x, y in zip(tree[i][0], q)))

    def extend(self, tree: List[Tuple[Q, int]], q: Q) -> Optional[int]:
        """Adds the step from the nearest node toward q, if its edge is free."""
        i = self.nearest(tree, q)
        new = self.toward(tree[i][0], q)
        if self.edge_ok(tree[i][0], new):
            tree.append((new, i))
            return len(tree) - 1
        return None

    def connect(self, tree: List[Tuple[Q, int]], q: Q) -> Optional[int]:
        """Steps from tree toward q until it gets there (the index) or is blocked."""
        while True:
            k = self.extend(tree, q)
            if k is None:
                return None
            if tree[k][0] == q:
                return k

    @staticmethod
    def branch(tree: List[Tuple[Q, int]], k: int) -> List[Q]:
        out = []
        while k >= 0:
            out.append(tree[k][0])
            k = tree[k][1]
        return out

    def plan(self, start: Q, goal: Q, iters: int) -> Optional[List[Q]]:
        a: List[Tuple[Q, int]] = [(start, -1)]
        b: List[Tuple[Q, int]] = [(goal, -1)]
        for it in range(iters):
            k = self.extend(a, self.sample())
            if k is not None:
                j = self.connect(b, a[k][0])
                if j is not None:
                    path = self.branch(a, k)[::-1] + self.branch(b, j)[1:]
                    return path if path[0] == start else path[::-1]
            a, b = b, a
        return None

    def shortcut(self, path: List[Q], tries: int) -> List[Q]:
        for _ in range(tries):
            if len(path) < 3:
                break
            i = self.rng.randrange(len(path) - 2)
            j = self.rng.randrange(i + 2, len(path))
            if self.edge_ok(path[i], path[j]):
                path = path[:i + 1] + path[j:]
        return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--unix", default=None, help="reposed's socket (default /tmp/reposed.sock)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mode", choices=["discrete", "certified"], default="discrete",
                    help="how check.motion checks each edge (default discrete)")
    ap.add_argument("--step", type=float, default=0.4, help="largest joint step of an edge, rad")
    ap.add_argument("--iterations", type=int, default=5000)
    args = ap.parse_args()
    try:
        c = repose.Client(args.unix)
    except repose.ConnectionLost as e:
        print(f"rrt_connect: {e} (is reposed running? bash scripts/run.sh)", file=sys.stderr)
        return 3
    with c:
        c.load_urdf("rrt-arm", os.path.join(ROOT, "tests/data/arm7.urdf"),
                    os.path.join(ROOT, "tests/data/arm7.srdf"))
        c.scene_replace("rrt-cell", CELL, create=True)
        p = Planner(c, "rrt-arm", "rrt-cell", args.mode, args.step, random.Random(args.seed))
        straight = p.edge_ok(START, GOAL)
        print(f"straight line start -> goal: {'free' if straight else 'blocked by the post'}")
        t0 = time.perf_counter()
        path = p.plan(START, GOAL, args.iterations)
        if path is None:
            print(f"no plan in {args.iterations} iterations", file=sys.stderr)
            return 1
        found = len(path)
        path = p.shortcut(path, 100)
        total = time.perf_counter() - t0
        print(f"plan: {found} waypoints, {len(path)} after shortcutting; "
              f"{p.calls} check.motion calls, {p.check_s:.3f} s of {total:.3f} s in them")
        for q in path:
            print("  [" + ", ".join(f"{x:.4f}" for x in q) + "]")
        final = c.check_motion("rrt-arm", path, scene="rrt-cell", resolution=1e-3)
        print(f"fine discrete check of the plan (resolution 1e-3, "
              f"{final['states_checked']} states): {'valid' if final['valid'] else 'INVALID'}")
        # The same problem planned by the daemon itself (`plan`: RRT-Connect
        # on a worker, each edge checked in the same mode), round trip
        # included.
        t1 = time.perf_counter()
        daemon = c.plan("rrt-arm", START, GOAL, scene="rrt-cell", edges=args.mode,
                        seed=args.seed, timeout_ms=5000)
        plan_s = time.perf_counter() - t1
        daemon_ok = daemon["solved"]
        if daemon_ok:
            check = c.check_motion("rrt-arm", daemon["path"], scene="rrt-cell", resolution=1e-3)
            daemon_ok = check["valid"]
            print(f"reposed plan: {len(daemon['path'])} waypoints in {plan_s:.4f} s "
                  f"({daemon['stats']['ms'] / 1e3:.4f} s in the daemon); fine check "
                  f"{'valid' if check['valid'] else 'INVALID'}; this script took "
                  f"{total / plan_s:.0f}x as long")
        else:
            print(f"reposed plan: not solved ({daemon['reason']})", file=sys.stderr)
        return 0 if final["valid"] and daemon_ok else 1


if __name__ == "__main__":
    sys.exit(main())
