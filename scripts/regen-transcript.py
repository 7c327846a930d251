# SPDX-License-Identifier: MIT
import json, socket, subprocess, sys, time, os, re
# Replays a transcript file against a daemon and prints each sent line and the actual replies,
# keeping "*" where the old expected line had "*" values at the same key.
reposed, path = sys.argv[1], sys.argv[2]
sock = '/tmp/regen.sock'
p = subprocess.Popen([reposed, '--unix', sock, '--tcp', 'none'], stderr=subprocess.PIPE)
for _ in range(100):
    if os.path.exists(sock): break
    time.sleep(0.05)
time.sleep(0.1)
s = socket.socket(socket.AF_UNIX); s.connect(sock)
f = s.makefile('rb')
def is_reply(line):
    try: j = json.loads(line)
    except Exception: return False
    ok = lambda o: isinstance(o, dict) and ('result' in o or 'error' in o) and 'method' not in o
    return ok(j) or (isinstance(j, list) and j and all(ok(x) for x in j))
def star(old, new):
    if old == "*": return "*"
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: star(old.get(k), v) for k, v in new.items()}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [star(a, b) for a, b in zip(old, new)]
    return new
out = []
for line in open(path, encoding='utf-8').read().split('\n')[:-1]:
    if is_reply(line):
        got = f.readline().decode().rstrip('\n')
        new = star(json.loads(line), json.loads(got))
        out.append(json.dumps(new, separators=(',', ':'), ensure_ascii=False))
    else:
        s.sendall(line.encode() + b'\n'); out.append(line)
        time.sleep(0.02)
p.terminate(); p.wait()
open(path, 'w', encoding='utf-8').write('\n'.join(out) + '\n')
