# SPDX-License-Identifier: MIT
"""The viewer under load (a benchmark, not a test), in headless Chromium
(Debian's chromium, software WebGL: SwiftShader on the CPU):

  1. a scene of N shapes (default 100,000: spheres, capsules and boxes in
     thirds, scattered in a 20 m cube) and a robot instance: the time from a
     click on the scene to every shape drawn, and frames per second with
     every frame rendered (the page's own requestAnimationFrame count over
     4 s), idle and while the camera turns;
  2. the robot instance moved 100 times a second over the Unix socket for
     5 s: the frames per second meanwhile, how many of the revisions the
     page drew, and how long after the last move its final state was drawn.

    python3 bench/viewer_bench.py build/release/reposed [N]
"""
import math
import os
import random
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import test_viewer as tv  # noqa: E402
from http_daemon import Daemon  # noqa: E402


def shapes(n, rng):
    out = {}
    for i in range(n):
        c = [rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(0, 20)]
        r = rng.uniform(0.02, 0.1)
        if i % 3 == 0:
            out[f"s{i}"] = {"sphere": {"center": c, "radius": r}}
        elif i % 3 == 1:
            out[f"c{i}"] = {"capsule": {"a": c, "b": [c[0] + 0.2, c[1], c[2] + 0.1], "radius": r}}
        else:
            out[f"b{i}"] = {"box": {"center": c, "half_extents": [r, r, 2 * r]}}
    return out


def main():
    reposed = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rng = random.Random(7)
    tmp = tempfile.mkdtemp(prefix="repose-viewer-bench-")
    d = Daemon(reposed, tmp)
    tv.ok(d, "model.put", tv.ARM)
    tv.ok(d, "scene.create", {"scene": "big", "robots": {"r1": {"model": "arm"}}})
    all_shapes = shapes(n, rng)
    keys = list(all_shapes)
    for k in range(0, n, 20_000):
        tv.ok(d, "scene.put", {"scene": "big", "shapes": {i: all_shapes[i] for i in keys[k:k + 20_000]}})
    drv = tv.browser()
    try:
        drv.get(f"http://127.0.0.1:{d.port}/")
        tv.wait(drv, "connected", lambda s: s["connection"] == "connected" and "big" in s["scenes"])
        t0 = time.time()
        drv.execute_script("document.querySelector('#scenes li[data-scene=\"big\"]').click()")
        s = tv.wait(drv, "loaded", lambda s: s["loaded"], timeout=300)
        load = time.time() - t0
        print(f"scene of {n} shapes + a robot: drawn {load:.2f} s after the click "
              f"({s['counts']}); detail {s['detail']} {s['drawn']} on {s['renderer']}")
        idle = drv.execute_async_script("window.reposeViewer.measureFps(4000).then(arguments[0])")
        print(f"every frame rendered, camera still: {idle['fps']:.1f} frames/s "
              f"({idle['frames']} in {idle['ms']:.0f} ms)")
        drv.execute_script("window.__spin = setInterval(() => window.reposeViewer.turn(0.02), 16)")
        turning = drv.execute_async_script("window.reposeViewer.measureFps(4000).then(arguments[0])")
        drv.execute_script("clearInterval(window.__spin)")
        print(f"every frame rendered, camera turning: {turning['fps']:.1f} frames/s")

        # 100 moves a second for 5 s.
        before = tv.state(drv)["updates"]
        stop = threading.Event()
        revs = []

        def mover():
            k = 0
            nxt = time.time()
            while not stop.is_set():
                q = [1.5 * math.sin(k / 20), 1.0 * math.cos(k / 15)]
                revs.append(tv.ok(d, "scene.move", {"scene": "big", "robots": {"r1": {"joints": q}}})["revision"])
                k += 1
                nxt += 0.01
                time.sleep(max(0.0, nxt - time.time()))

        th = threading.Thread(target=mover)
        th.start()
        during = drv.execute_async_script("window.reposeViewer.measureFps(5000).then(arguments[0])")
        stop.set()
        th.join()
        t_last = time.time()
        last = revs[-1]
        want = tv.ok(d, "scene.get", {"scene": "big", "ids": ["r1/l2#0"]})["shapes"]["r1/l2#0"]
        while True:
            got = drv.execute_script("return window.reposeViewer.shape('r1/l2#0')")
            if tv.state(drv)["revision"] >= last and tv.close(got, want):
                break
            if time.time() - t_last > 30:
                raise SystemExit("the last move was never drawn")
            time.sleep(0.002)
        settle = time.time() - t_last
        s = tv.state(drv)
        print(f"{len(revs)} moves in 5 s ({len(revs) / 5:.0f}/s): {during['fps']:.1f} frames/s "
              f"meanwhile, {s['updates'] - before} changes applied, the last drawn "
              f"{settle * 1000:.0f} ms after it was acknowledged (last move-to-draw "
              f"{s['lastUpdateMs']:.0f} ms)")
    finally:
        drv.quit()
    d.stop()


if __name__ == "__main__":
    main()
