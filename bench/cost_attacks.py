#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Replays the priced-work attacks of proto/PROTOCOL.md (Limits, the cost
model) against a reposed binary and prints, per attack, how long the
attacking request took, what it was answered, the longest wait of a second
client that pings every 5 ms meanwhile, and the daemon's peak RSS.

    python3 bench/cost_attacks.py build/release/reposed [attack ...]

Each attack starts its own daemon on a temporary Unix socket.  Nothing here
asserts a timing: the figures are for notes and comparisons between builds.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_util import Conn, start, status_kb  # noqa: E402


class Daemon:
    def __init__(self, binary, flags=()):
        self.log = tempfile.TemporaryFile()
        self.p, self.sock, self.dir = start(binary, flags, log=self.log)

    def peak_rss_mb(self):
        return status_kb(self.p.pid, "VmHWM") / 1024

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Pinger(threading.Thread):
    def __init__(self, path):
        super().__init__(daemon=True)
        self.c = Conn(path)
        self.stop_flag = False
        self.max_wait = 0.0

    def run(self):
        while not self.stop_flag:
            t0 = time.perf_counter()
            self.c.call("ping")
            self.max_wait = max(self.max_wait, time.perf_counter() - t0)
            time.sleep(0.005)


def sphere(x, r=0.25):
    return {"sphere": {"center": [x, 0, 0], "radius": r}}


def frame_model(n_links, allowed_scene=None, allowed_pairs=None):
    p = {"model": "m", "links": [{"id": f"l{i}", "frame": i % 2, "shape": sphere(i)}
                                 for i in range(n_links)]}
    if allowed_scene is not None:
        p["allowed_scene"] = allowed_scene
    if allowed_pairs is not None:
        p["allowed_pairs"] = allowed_pairs
    return p


def kin_model(n_shapes, allowed_scene):
    return {"model": "k",
            "joints": [{"name": "j", "type": "revolute", "parent": "base", "child": "arm",
                        "axis": [0, 0, 1], "limits": {"lower": -3, "upper": 3}}],
            "links": [{"id": f"s{i}", "link": "arm", "shape": sphere(i * 0.01)}
                      for i in range(n_shapes)],
            "allowed_scene": allowed_scene}


def attack_batch_scene_get(c):
    # Scene writes are priced (about 60,000 shapes a line under the default
    # max_loop_work): put in lines of 50,000.
    for first in range(0, 580000, 50000):
        shapes = {f"s{i:06d}": sphere(i, 0.125) for i in range(first, first + 50000)}
        c.call("scene.put", {"scene": "big", "create": True, "shapes": shapes})
    batch = [{"jsonrpc": "2.0", "id": i, "method": "scene.get", "params": {"scene": "big"}}
             for i in range(100)]
    return json.dumps(batch, separators=(",", ":"))


def attack_model_pairs_frame(c):
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "model.put",
                       "params": frame_model(4096, [[f"l{i % 4096}", f"o{i}"]
                                                    for i in range(1000000)])},
                      separators=(",", ":"))


def attack_model_pairs_kin(c):
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "model.put",
                       "params": kin_model(4096, [["arm", f"o{i}"] for i in range(1000000)])},
                      separators=(",", ":"))


def attack_attached_pairs(c):
    pairs = [[f"l{i % 24}", f"l{(i // 24) % 24}"] for i in range(100000)]
    r = c.call("model.put", frame_model(24, allowed_pairs=pairs))
    assert "result" in r, r
    attached = [{"id": f"a{i}", "link": "l0", "shape": sphere(0.1)} for i in range(4096)]
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "check",
                       "params": {"model": "m", "frames": [{}, {}], "attached": attached}},
                      separators=(",", ":"))


def attack_check_allowed_scene(c):
    c.call("model.put", frame_model(24))
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "check",
                       "params": {"model": "m", "frames": [{}, {}],
                                  "allowed_scene": [[f"l{i % 24}", f"o{i}"]
                                                    for i in range(100000)]}},
                      separators=(",", ":"))


def attack_touch_links(c):
    c.call("model.put", frame_model(24))
    attached = [{"id": f"a{i}", "link": "l0", "shape": sphere(0.1),
                 "touch_links": [f"l{k}" for k in range(24)]} for i in range(4096)]
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "check",
                       "params": {"model": "m", "frames": [{}, {}], "attached": attached}},
                      separators=(",", ":"))


def attack_motion(c):
    c.call("model.put", kin_model(1, []))
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "check.motion",
                       "params": {"model": "k", "path": [[-3], [3]], "resolution": 1e-7}},
                      separators=(",", ":"))


def attack_watch_fanout(c, path):
    c.call("scene.create", {"scene": "w", "shapes": {"a": sphere(0)}})
    watchers = []
    for _ in range(256):
        w = Conn(path)
        w.send_line("[" + ",".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "scene.watch",
                                          "params": {"scene": "w"}})
                               for i in range(256)) + "]")
        w.line()
        watchers.append(w)
    puts = [{"jsonrpc": "2.0", "id": i, "method": "scene.put",
             "params": {"scene": "w", "shapes": {f"p{i}": sphere(i)}}} for i in range(100)]
    attack_watch_fanout.keep = watchers
    return json.dumps(puts, separators=(",", ":"))


ATTACKS = {
    "batch_scene_get": attack_batch_scene_get,
    "model_pairs_frame": attack_model_pairs_frame,
    "model_pairs_kin": attack_model_pairs_kin,
    "attached_pairs": attack_attached_pairs,
    "check_allowed_scene": attack_check_allowed_scene,
    "touch_links": attack_touch_links,
    "motion": attack_motion,
    "watch_fanout": attack_watch_fanout,
}


def summary(reply):
    items = reply if isinstance(reply, list) else [reply]
    codes = {}
    for r in items:
        k = r["error"]["code"] if "error" in r else "ok"
        if "error" in r and "data" in r["error"] and "limit" in r["error"]["data"]:
            k = f'{k} {r["error"]["data"]["limit"]}'
        codes[k] = codes.get(k, 0) + 1
    return ", ".join(f"{v}x {k}" for k, v in codes.items())


def main():
    binary = sys.argv[1]
    names = sys.argv[2:] or list(ATTACKS)
    for name in names:
        d = Daemon(binary, ["--max-request-bytes", str(1 << 30), "--write-kill-bytes",
                            str(2 << 30), "--max-reply-bytes", str(32 << 20)])
        try:
            c = Conn(d.sock)
            fn = ATTACKS[name]
            line = fn(c, d.sock) if name == "watch_fanout" else fn(c)
            p = Pinger(d.sock)
            p.start()
            time.sleep(0.05)
            t0 = time.perf_counter()
            c.send_line(line)
            reply = c.line()
            took = time.perf_counter() - t0
            time.sleep(0.05)
            p.stop_flag = True
            p.join(60)
            print(f"{name:22s} {len(line) / 1e6:7.2f} MB line  {took * 1e3:9.1f} ms  "
                  f"ping max {p.max_wait * 1e3:8.1f} ms  peak RSS {d.peak_rss_mb():7.0f} MB  "
                  f"-> {summary(reply)}", flush=True)
        finally:
            d.stop()


if __name__ == "__main__":
    main()
