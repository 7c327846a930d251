# SPDX-License-Identifier: MIT
"""The viewer at GET / of reposed --http, in a real browser (Debian's
chromium, headless, driven by python3-selenium through chromedriver).

  - the page loads (the embedded three.js, nothing from elsewhere) and
    connects over /ws; the scene list shows the daemon's scenes;
  - a click opens a scene of known content: the page's hook
    (window.reposeViewer.state()) reports every shape drawn, by kind and by
    owner (the scene's own, an object's, a robot instance's, a cloud), each
    where scene.get over the socket puts it;
  - a robot instance moved over the socket is redrawn where its new joints
    put it, within 1 s (the figure is printed);
  - a scene opens while its robot moves 100 times a second, and the page
    then shows the robot's last state;
  - a model picked in the list with its joints set gets checked: the page's
    violating pairs are the socket's `check` at those joints, and the scene
    shape they hit is drawn in the violation colour; at joints clear of
    everything there are none;
  - hovering a shape shows its id;
  - a daemon with a token: the page asks for it, then shows the scenes;
  - a screenshot of the open scene is saved (the CI artifact; with
    REPOSE_VIEWER_SCREENSHOT, also there: docs/viewer.png is made so).

Usage: test_viewer.py REPOSED ARTIFACT_DIR.  Skips (exit 77) when chromium,
chromedriver or selenium is missing, unless REPOSE_REQUIRE_BROWSER is set
(as .ci/run sets it): then that fails."""
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_daemon import Daemon, fail, run  # noqa: E402
import http_daemon  # noqa: E402

NAME = "test_viewer"
http_daemon.NAME = NAME
SKIP = 77

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select
except ImportError:
    print(f"{NAME}: {'FAIL' if os.environ.get('REPOSE_REQUIRE_BROWSER') else 'SKIP'}: "
          "python3-selenium is not installed")
    sys.exit(1 if os.environ.get("REPOSE_REQUIRE_BROWSER") else SKIP)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

# The two-joint arm of proto/examples/robots.jsonl (its first line puts it).
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
with open(os.path.join(ROOT, "proto", "examples", "robots.jsonl")) as f:
    ARM = json.loads(f.readline())["params"]
ARM_LINKS = ARM["links"]

# The scene the page must draw: 5 shapes of its own, an object of 2, a robot
# instance of 3 (the arm's), a cloud of 5 points.
SHAPES = {
    "floor": {"halfspace": {"normal": [0, 0, 1], "offset": -0.25}},
    "ball1": {"sphere": {"center": [-0.6, 0.4, 0.2], "radius": 0.08}},
    "ball2": {"sphere": {"center": [-0.7, -0.2, 0.3], "radius": 0.05}},
    "post": {"capsule": {"a": [0.7, 0, -0.25], "b": [0.7, 0, 0.7], "radius": 0.1}},
    "crate": {"box": {"center": [0.1, -0.6, 0.3], "half_extents": [0.15, 0.1, 0.2],
                      "rotation": {"w": 0.9238795325112867, "x": 0, "y": 0,
                                   "z": 0.3826834323650898}}},
}
OBJECTS = {"table": {"pose": {"translation": [-0.5, -0.9, 0]}, "shapes": {
    "top": {"box": {"center": [0, 0, 0.4], "half_extents": [0.3, 0.2, 0.02]}},
    "leg": {"capsule": {"a": [0, 0, -0.25], "b": [0, 0, 0.38], "radius": 0.03}}}}}
ROBOTS = {"r1": {"model": "arm", "joints": [0, 0], "base": {"translation": [0, 1.2, 0]}}}
CLOUD = {"cam": {"points": [[-0.3, 0.9, 0.1], [-0.28, 0.9, 0.1], [-0.26, 0.92, 0.12],
                            [-0.3, 0.94, 0.1], [-0.24, 0.9, 0.14]], "radius": 0.02}}
KINDS = {"sphere": 3, "capsule": 4, "box": 2, "halfspace": 1, "cloud": 1, "cloud_points": 5}
OWNERS = {"scene": 5, "object": 2, "robot": 3}


def ok(d, method, params=None):
    r = d.call(method, params)
    if "error" in r:
        fail(f"{method}: {r['error']}")
    return r["result"]


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
              "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist",
              "--window-size=1280,800", "--no-first-run", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--disable-quic",
              f"--user-data-dir={tempfile.mkdtemp(prefix='repose-chromium-')}"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_script_timeout(30)
    return drv


def state(drv):
    return drv.execute_script("return window.reposeViewer && window.reposeViewer.state()")


def wait(drv, what, cond, timeout=20.0):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = state(drv)
        if last is not None and cond(last):
            return last
        time.sleep(0.02)
    logs = drv.get_log("browser") if hasattr(drv, "get_log") else []
    fail(f"{what}: page state {last}; browser log {logs[-10:]}")


def close(a, b, tol=1e-9):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, (int, float)):
        return isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=0, abs_tol=tol)
    return a == b


def main():
    if len(sys.argv) != 3:
        fail("usage: test_viewer.py REPOSED ARTIFACT_DIR")
    if not CHROMIUM or not DRIVER:
        if os.environ.get("REPOSE_REQUIRE_BROWSER"):
            fail("chromium or chromedriver is not installed (REPOSE_REQUIRE_BROWSER)")
        print(f"{NAME}: SKIP: chromium or chromedriver is not installed")
        sys.exit(SKIP)
    reposed, artifacts = sys.argv[1], sys.argv[2]
    os.makedirs(artifacts, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="repose-viewer-")
    d = Daemon(reposed, tmp)
    ok(d, "model.put", ARM)
    ok(d, "scene.create", {"scene": "cell", "shapes": SHAPES, "objects": OBJECTS,
                           "robots": ROBOTS})
    ok(d, "scene.put", {"scene": "cell", "clouds": CLOUD})
    ok(d, "scene.create", {"scene": "empty"})
    drv = browser()
    try:
        drv.get(f"http://127.0.0.1:{d.port}/")
        s = wait(drv, "the page connects and lists the scenes",
                 lambda s: s["connection"] == "connected" and s["scenes"] == ["cell", "empty"])
        if s["models"] != ["arm"]:
            fail(f"models listed: {s['models']}")

        # Open the scene by clicking it in the list.
        drv.find_element(By.CSS_SELECTOR, '#scenes li[data-scene="cell"]').click()
        s = wait(drv, "the scene opens", lambda s: s["loaded"] and s["scene"] == "cell")
        if s["counts"] != KINDS or s["owners"] != OWNERS:
            fail(f"drawn {s['counts']} by owner {s['owners']}, want {KINDS} and {OWNERS}")
        if s["drawn"] != {"round": 7, "box": 2, "sprite": 0, "halfspace": 1} or s["detail"] != "fine":
            fail(f"instances drawn: {s['drawn']} ({s['detail']})")
        ids = sorted(SHAPES) + ["table/leg", "table/top"] + [f"r1/{link['id']}" for link in ARM_LINKS]
        world = ok(d, "scene.get", {"scene": "cell", "ids": ids})
        if s["revision"] != world["revision"]:
            fail(f"page at revision {s['revision']}, the scene at {world['revision']}")
        for sid in ids:
            got = drv.execute_script("return window.reposeViewer.shape(arguments[0])", sid)
            if not close(got, world["shapes"][sid]):
                fail(f"{sid} drawn as {got}, the daemon has {world['shapes'][sid]}")

        # Hover: the crate's centre on screen names it.
        canvas = drv.find_element(By.CSS_SELECTOR, "#view canvas")
        end = time.time() + 5
        tip = ""
        while time.time() < end and "crate" not in tip:
            xy = drv.execute_script("return window.reposeViewer.project(arguments[0])",
                                    [0.1, -0.6, 0.3])
            rect = drv.execute_script("const r = arguments[0].getBoundingClientRect();"
                                      "return [r.width, r.height];", canvas)
            ActionChains(drv).move_to_element_with_offset(
                canvas, int(xy[0] - rect[0] / 2), int(xy[1] - rect[1] / 2)).perform()
            time.sleep(0.05)
            tip = drv.find_element(By.ID, "tip").text
        if not tip.startswith("crate"):
            fail(f"hovering the crate shows {tip!r}")
        ActionChains(drv).move_by_offset(-int(xy[0]) + 2, -int(xy[1]) + 2).perform()

        # A robot instance moved over the socket is redrawn within 1 s.
        lags = []
        for q in ([1.0, 0.5], [-0.5, 1.2], [2.0, -1.0]):
            moved = ok(d, "scene.move", {"scene": "cell", "robots": {"r1": {"joints": q}}})
            t0 = time.time()
            want = ok(d, "scene.get", {"scene": "cell", "ids": ["r1/l2#0"]})["shapes"]["r1/l2#0"]
            end = t0 + 1.0
            while True:
                s = state(drv)
                got = drv.execute_script("return window.reposeViewer.shape('r1/l2#0')")
                if s["revision"] >= moved["revision"] and close(got, want):
                    break
                if time.time() > end:
                    fail(f"after scene.move to {q}, r1/l2#0 drawn as {got} after 1 s, "
                         f"want {want}; page {s}")
                time.sleep(0.005)
            lags.append(time.time() - t0)
        print(f"{NAME}: robot moves drawn after {', '.join(f'{x * 1000:.0f}' for x in lags)} ms")

        # Far detail (what a scene past the mesh budget gets, forced here):
        # a sprite per shape of the scene's and its objects' (the robot
        # instance keeps its meshes), the same counts, and hover still names
        # them.
        drv.get(f"http://127.0.0.1:{d.port}/?far#detail=sprites")
        wait(drv, "the page reconnects", lambda s: s["connection"] == "connected" and s["scenes"])
        drv.find_element(By.CSS_SELECTOR, '#scenes li[data-scene="cell"]').click()
        s = wait(drv, "the scene opens as sprites", lambda s: s["loaded"] and s["scene"] == "cell")
        if s["counts"] != KINDS or s["detail"] != "sprites" or \
                s["drawn"] != {"round": 3, "box": 0, "sprite": 6, "halfspace": 1}:
            fail(f"as sprites: {s['counts']}, {s['detail']}, {s['drawn']}")
        # (projected and picked in one script, asked again while the page
        # may still be settling its camera: a late resize once failed it)
        end = time.time() + 5
        picked = None
        while time.time() < end and picked != "crate":
            picked = drv.execute_script(
                "const v = window.reposeViewer, xy = v.project(arguments[0]);"
                "return v.pick(xy[0], xy[1]);", [0.1, -0.6, 0.3])
            time.sleep(0.02)
        if picked != "crate":
            fail(f"picking the crate drawn as a sprite: {picked!r}, page {state(drv)}")
        drv.get(f"http://127.0.0.1:{d.port}/")
        wait(drv, "the page reconnects", lambda s: s["connection"] == "connected" and s["scenes"])
        drv.find_element(By.CSS_SELECTOR, '#scenes li[data-scene="cell"]').click()
        wait(drv, "the scene opens", lambda s: s["loaded"] and s["scene"] == "cell")

        # A scene opened while its robot moves 100 times a second: the
        # page's two reads (the scene, then its robot's shapes by id) keep
        # seeing different revisions, and it opens all the same, then
        # follows the robot to its last state.
        ok(d, "scene.create", {"scene": "busy", "robots": {"r9": {"model": "arm"}},
                               "shapes": {f"s{i}": {"sphere": {"center": [i % 50 * 0.1, i // 50 * 0.1, 2],
                                                               "radius": 0.03}} for i in range(20000)}})
        stop = threading.Event()
        moves = []

        def mover():
            k = 0
            while not stop.is_set():
                q = [math.sin(k / 7), math.cos(k / 5)]
                moves.append(ok(d, "scene.move", {"scene": "busy", "robots": {"r9": {"joints": q}}}))
                k += 1
                time.sleep(0.01)

        th = threading.Thread(target=mover)
        th.start()
        try:
            wait(drv, "busy listed", lambda s: "busy" in s["scenes"])
            drv.find_element(By.CSS_SELECTOR, '#scenes li[data-scene="busy"]').click()
            s = wait(drv, "the busy scene opens", lambda s: s["loaded"] and s["scene"] == "busy", 60)
        finally:
            stop.set()
            th.join()
        if s["counts"]["sphere"] != 20001 or s["owners"] != {"scene": 20000, "robot": 3}:
            fail(f"the busy scene: {s['counts']} {s['owners']}")
        want = ok(d, "scene.get", {"scene": "busy", "ids": ["r9/l2#0"]})
        wait(drv, "the busy scene's robot at its last move",
             lambda s: s["revision"] == want["revision"] and close(drv.execute_script(
                 "return window.reposeViewer.shape('r9/l2#0')"), want["shapes"]["r9/l2#0"]))
        print(f"{NAME}: opened a scene while its robot moved ({len(moves)} moves)")
        drv.find_element(By.CSS_SELECTOR, '#scenes li[data-scene="cell"]').click()
        wait(drv, "the cell again", lambda s: s["loaded"] and s["scene"] == "cell")

        # A model picked in the list and checked: at joints clear of
        # everything, no pair; at its default joints its forearm hits the post.
        Select(drv.find_element(By.ID, "model")).select_by_value("arm")
        wait(drv, "the model's sliders", lambda s: s["model"] == "arm" and s["preview"] == 3)
        if len(drv.find_elements(By.CSS_SELECTOR, "#joints input[type=range]")) != 2:
            fail("want one slider per joint")
        for q, hits in (({"j1": 1.5, "j2": 0.0}, False), ({"j1": 0.0, "j2": 0.0}, True)):
            r = drv.execute_async_script(
                "window.reposeViewer.setJoints(arguments[0]).then(arguments[1])", q)
            want = ok(d, "check", {"model": "arm", "scene": "cell", "joints": q, "report": "all"})
            s = state(drv)
            if r is None or not close(s["violations"], want.get("violations", [])):
                fail(f"page's check at {q}: {s['violations']}, the socket's {want}")
            if bool(want.get("violations")) != hits:
                fail(f"check at {q}: {want}")
            hot_scene = sorted({v["other"] for v in want.get("violations", []) if v["kind"] == "scene"})
            if hits and hot_scene != ["post"]:
                fail(f"want the post hit, got {hot_scene}")
            hot_model = sorted({f"model:{v['link']}" for v in want.get("violations", [])})
            if s["highlighted"] != sorted(hot_model + hot_scene):
                fail(f"highlighted {s['highlighted']}, want {hot_scene} and {hot_model}")
            for sid in hot_model:
                c = drv.execute_script("return window.reposeViewer.colour(arguments[0])", sid)
                if c != "#e0301e":
                    fail(f"the model's {sid} in a violating pair is drawn {c}")
            colour = drv.execute_script("return window.reposeViewer.colour('post')")
            if (colour == "#e0301e") != hits:
                fail(f"the post is drawn {colour} with violations {want.get('violations')}")
        errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        if errors:
            fail(f"the page logged errors: {errors}")
        drv.execute_script("window.reposeViewer.frame()")
        time.sleep(0.3)
        shot = os.path.join(artifacts, "viewer.png")
        if not drv.save_screenshot(shot):
            fail("no screenshot")
        extra = os.environ.get("REPOSE_VIEWER_SCREENSHOT")
        if extra:
            shutil.copyfile(shot, extra)
        print(f"{NAME}: screenshot {shot}")
    finally:
        drv.quit()
    d.stop()

    # A daemon with a token: the page asks for it before anything is listed.
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("s3cret-viewer-token\n")
    os.chmod(token, 0o600)
    d = Daemon(reposed, tmp, "--token-file", token)
    ok(d, "scene.create", {"scene": "guarded"})
    drv = browser()
    try:
        drv.get(f"http://127.0.0.1:{d.port}/")
        wait(drv, "the page asks for the token", lambda s: s["connection"] == "needs token")
        if not drv.find_element(By.ID, "auth").is_displayed():
            fail("the token field is hidden")
        drv.find_element(By.ID, "token").send_keys("wrong")
        drv.find_element(By.ID, "token-go").click()
        time.sleep(0.3)
        if state(drv)["scenes"]:
            fail("scenes listed with a wrong token")
        field = drv.find_element(By.ID, "token")
        field.clear()
        field.send_keys("s3cret-viewer-token")
        drv.find_element(By.ID, "token-go").click()
        wait(drv, "the scenes after auth",
             lambda s: s["connection"] == "connected" and s["scenes"] == ["guarded"])
    finally:
        drv.quit()
    d.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{NAME}: ok")


if __name__ == "__main__":
    run(main)
