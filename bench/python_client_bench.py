#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python client's costs against a running reposed (issue 11):

- single `check` round trips per second over the Unix socket (one in flight);
- `check_batch` of 1000 configurations end to end (Python encoding, the
  daemon's work, decoding), from a list and from a numpy array when numpy
  is installed: the median of 30;
- the same 1000 configurations as 1000 pipelined `check` calls.

    python3 bench/python_client_bench.py [--unix /tmp/reposed.sock] [--shapes N]

Uses the test arm (tests/data/arm7.urdf) and a table scene: a capsule
along the table's edge, plus N - 1 small spheres and capsules on the
table in front of the robot (default N = 100, fixed seed; --shapes 1 is
the single capsule earlier notes measured); prints medians.  With numpy,
check_batch sends the array as `joints_f64` (base64 float64), the list as
JSON numbers.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import repose  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--unix", default=None)
    ap.add_argument("--shapes", type=int, default=100)
    a = ap.parse_args()
    c = repose.Client(a.unix)
    c.load_urdf("bench-arm", os.path.join(ROOT, "tests/data/arm7.urdf"),
                os.path.join(ROOT, "tests/data/arm7.srdf"))
    shapes = {"top": {"capsule": {"a": [0.5, -0.6, 0.1], "b": [0.5, 0.6, 0.1], "radius": 0.05}}}
    srng = random.Random(7)
    for i in range(a.shapes - 1):
        x, y, z = srng.uniform(0.3, 1.0), srng.uniform(-0.7, 0.7), srng.uniform(0.0, 0.3)
        r = srng.uniform(0.01, 0.05)
        if i % 2:
            shapes[f"s{i}"] = {"sphere": {"center": [x, y, z], "radius": r}}
        else:
            shapes[f"s{i}"] = {"capsule": {"a": [x, y, z], "b": [x + srng.uniform(-0.1, 0.1),
                                                                  y + srng.uniform(-0.1, 0.1), z],
                                           "radius": r}}
    c.scene_replace("bench-table", shapes, create=True)
    print(f"scene: {len(shapes)} shapes")
    info = c.model_get("bench-arm")
    lim = [info["limits"][j] for j in info["joints"]]
    rng = random.Random(1)
    qs = [[rng.uniform(l["lower"], l["upper"]) for l in lim] for _ in range(1000)]

    n = 3000
    t = time.perf_counter()
    for k in range(n):
        c.check("bench-arm", scene="bench-table", joints=qs[k % 1000], report="first")
    dt = time.perf_counter() - t
    print(f"check round trips: {n / dt:.0f}/s ({1e6 * dt / n:.1f} us each, one in flight)")

    def median_ms(f, reps=30):
        f()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(times)

    ms = median_ms(lambda: c.check_batch("bench-arm", scene="bench-table", joints=qs,
                                         report="first"))
    print(f"check_batch of 1000 (list): {ms:.2f} ms median end to end")
    if numpy is not None:
        arr = numpy.array(qs)
        ms = median_ms(lambda: c.check_batch("bench-arm", scene="bench-table", joints=arr,
                                             report="first"))
        print(f"check_batch of 1000 (numpy): {ms:.2f} ms median end to end")

    def pipelined():
        with c.pipeline() as p:
            for q in qs:
                p.check("bench-arm", scene="bench-table", joints=q, report="first")

    ms = median_ms(pipelined, reps=10)
    print(f"1000 pipelined check calls: {ms:.2f} ms median")
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
