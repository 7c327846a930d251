# SPDX-License-Identifier: MIT
"""Runs README.md's examples in the order a reader meets them, against one
real reposed, then python/README.md's: nothing an example creates may
collide with a later one, and every command must succeed.

    python3 tests/readme/run_in_order.py SOURCE_DIR PATH-TO-REPOSED PATH-TO-REPOSE-CLI

What runs, section by section (README.md):
  - "A session": the request lines of the console block, on one Unix
    connection; the replies must be the ones shown;
  - "Robots in joint space", "Your robot", "A shared cell: objects, robots and point clouds", "From the
    shell: repose-cli", "Watching a scene", "From Python": every line of the sh blocks (the venv and pip
    lines aside: python/tests/install.sh runs those), and the python blocks
    in one interpreter.  `repose-cli watch` runs in the background; the
    notifications it prints must be the ones the README shows.
The daemon listens on a scratch socket, which REPOSE_SOCKET names (so
`repose-cli`, `python -m repose` and `repose.Client()` use it as written),
and on TCP with a token file, which the TCP example's port and token path
are pointed at.  Commands run in a scratch directory where `tests` is the
repository's (the examples say "from the repository").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

src, reposed, cli = (os.path.abspath(a) for a in sys.argv[1:4])
RUN = {"A session", "Robots in joint space", "Your robot",
       "A shared cell: objects, robots and point clouds",
       "From the shell: repose-cli", "Watching a scene", "From Python"}
failures = []


def fail(what: str) -> None:
    print("FAIL: " + what, file=sys.stderr)
    failures.append(what)


def blocks(path: str):
    """(section, language, text) of every fenced block, in order."""
    section, out, lang, buf = "", [], None, []
    for line in open(path, encoding="utf-8"):
        if lang is None and re.match(r"#{2,3} ", line):
            section = line.lstrip("#").strip()
        m = re.match(r"```(\w*)\s*$", line)
        if m and lang is None:
            lang, buf = m.group(1), []
        elif line.startswith("```") and lang is not None:
            out.append((section, lang, "".join(buf)))
            lang = None
        elif lang is not None:
            buf.append(line)
    return out


def commands(text: str):
    """The shell lines of a block, continuation lines joined."""
    out, cur = [], ""
    for line in text.splitlines():
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.lstrip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


tmp = tempfile.mkdtemp(prefix="repose-readme-")
work = os.path.join(tmp, "work")
os.makedirs(work)
os.symlink(os.path.join(src, "tests"), os.path.join(work, "tests"))
sock = os.path.join(tmp, "reposed.sock")
token = os.path.join(tmp, "token")
with open(token, "w") as f:
    f.write("readme-token\n")
os.chmod(token, 0o600)
bindir = os.path.join(tmp, "bin")
os.makedirs(bindir)
os.symlink(cli, os.path.join(bindir, "repose-cli"))
# repose-spherize ("Your robot") is built next to repose-cli.
spherize = os.path.join(os.path.dirname(cli), "repose-spherize")
if os.path.exists(spherize):
    os.symlink(spherize, os.path.join(bindir, "repose-spherize"))
log_path = os.path.join(tmp, "log")
with open(log_path, "w") as log:
    daemon = subprocess.Popen([reposed, "--unix", sock, "--tcp", "127.0.0.1:0",
                               "--token-file", token], stdout=log, stderr=subprocess.STDOUT)
port = None
for _ in range(400):
    text = open(log_path).read()
    m = re.search(r"listening on tcp 127\.0\.0\.1:(\d+)", text)
    if m and "ready" in text:
        port = m.group(1)
        break
    time.sleep(0.05)
if port is None:
    sys.exit("reposed did not start: " + open(log_path).read())

env = dict(os.environ, REPOSE_SOCKET=sock, PATH=bindir + os.pathsep + os.environ["PATH"],
           PYTHONPATH=os.path.join(src, "python"), PYTHONDONTWRITEBYTECODE="1")
env.pop("REPOSE_TOKEN_FILE", None)
python_scope: dict = {}
watch = None
ran = 0


def shell(cmd: str) -> None:
    global watch, ran
    if re.match(r"(python3 -m venv|venv/bin/pip )", cmd):
        return  # python/tests/install.sh installs the package
    cmd = cmd.replace("venv/bin/python ", "python3 ")
    cmd = cmd.replace("--port 7411", "--port " + port).replace("~/.reposed-token", token)
    if re.match(r"repose-cli watch ", cmd):
        watch = subprocess.Popen(["bash", "-c", "exec " + cmd], cwd=work, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # its scene.watch is answered before the next change
        return
    r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, capture_output=True, text=True,
                       timeout=120)
    ran += 1
    if r.returncode != 0:
        fail(f"`{cmd}` exited {r.returncode}:\n{r.stdout}{r.stderr}")


def session(text: str) -> None:
    global ran
    lines = [l for l in text.splitlines() if l.startswith("{")]
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    f = s.makefile("r")
    for req, want in zip(lines[0::2], lines[1::2]):
        s.sendall(req.encode() + b"\n")
        got = f.readline().rstrip("\n")
        ran += 1
        if got != want:
            fail(f"session: {req}\n  got  {got}\n  want {want}")
    s.close()


def run_python(text: str, where: str) -> None:
    global ran
    old = os.getcwd()
    os.chdir(work)
    os.environ["REPOSE_SOCKET"] = sock
    sys.path.insert(0, os.path.join(src, "python"))
    try:
        exec(compile(text, where, "exec"), python_scope)
        ran += 1
    except Exception as e:  # an example that fails is what this test looks for
        fail(f"{where} python block: {type(e).__name__}: {e}")
    finally:
        os.chdir(old)


try:
    readme = blocks(os.path.join(src, "README.md"))
    for i, (section, lang, text) in enumerate(readme):
        if section not in RUN:
            continue
        if lang == "console":
            session(text)
        elif lang == "sh":
            for cmd in commands(text):
                shell(cmd)
            if watch is not None:
                # The README shows what the watch printed (the next plain block).
                shown = next(t for s2, l2, t in readme[i + 1:] if l2 == "")
                time.sleep(0.5)
                watch.send_signal(signal.SIGINT)
                out, err = watch.communicate(timeout=30)
                if watch.returncode != 0:
                    fail(f"repose-cli watch exited {watch.returncode}: {err}")
                if out.split("\n") != shown.split("\n"):
                    fail(f"the watch printed\n{out}\nand README.md shows\n{shown}")
                watch = None
        elif lang == "python":
            run_python(text, "README.md")
    # python/README.md, after the main README.
    for section, lang, text in blocks(os.path.join(src, "python", "README.md")):
        if lang == "sh":
            for cmd in commands(text):
                shell(cmd)
        elif lang == "python":
            run_python(text, "python/README.md")
finally:
    if "c" in python_scope:
        python_scope["c"].close()
    if watch is not None:
        watch.kill()
    daemon.send_signal(signal.SIGTERM)
    code = daemon.wait(timeout=30)
    shutil.rmtree(tmp, ignore_errors=True)
if code != 0:
    fail(f"reposed exited {code}")
print(f"run_in_order: {ran} examples run, {len(failures)} failed")
sys.exit(1 if failures or ran < 20 else 0)
