#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The container's entrypoint (scripts/docker-entrypoint.sh) and
# examples/compose.yaml, without a Docker engine:
#  - the entrypoint under sh (dash, as in debian:12-slim) and bash, with
#    stand-ins for reposed and repose-cli that record their arguments:
#    `docker run IMAGE` with no options stops at once with a message that
#    names REPOSED_TCP=none; the flags it passes otherwise;
#  - the compose file: the daemon is Unix-only on the socket the clients
#    name (REPOSE_SOCKET), in the volume they all mount, with the gid;
#  - the compose services run for real: the entrypoint starts the real
#    reposed with the daemon service's environment, its health check
#    passes, and the two clients' commands run with theirs (paths moved
#    into a scratch directory), the watcher seeing every change.
#   bash tests/scripts/test_docker.sh SOURCE_DIR PATH-TO-REPOSED PATH-TO-REPOSE-CLI
set -euo pipefail
src=$1
reposed=$(realpath "$2")
cli=$(realpath "$3")
entry=$src/scripts/docker-entrypoint.sh
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # The daemon writes its snapshot into $tmp/data as it stops: wait for it,
  # or the removal races with the write ("Directory not empty").
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_docker: FAIL: $*" >&2; exit 1; }

# ---- the entrypoint with stand-ins ---------------------------------------------------
mkdir -p "$tmp/fake"
for prog in reposed repose-cli; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$prog" "$tmp" >"$tmp/fake/$prog"
  chmod +x "$tmp/fake/$prog"
done
# entry SHELL [ENV=VALUE...] -- ARGS...: runs the entrypoint; stdout+stderr
# in $tmp/out, the stand-ins' calls in $tmp/calls, the exit code in $code.
entry_run() {
  local sh=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  : >"$tmp/calls"
  code=0
  env -u REPOSED_UNIX -u REPOSED_TCP -u REPOSED_TOKEN_FILE -u REPOSED_DATA_DIR \
    -u REPOSED_NATS -u REPOSED_STORE \
    PATH="$tmp/fake:$PATH" "${envs[@]}" "$sh" "$entry" "$@" >"$tmp/out" 2>&1 || code=$?
}
printf 'tok\n' >"$tmp/token"
chmod 600 "$tmp/token"
for sh in sh bash; do
  # docker run IMAGE: TCP on by default, and no token file mounted.
  entry_run "$sh" REPOSED_TOKEN_FILE="$tmp/no-token" --
  [[ $code -eq 2 ]] || fail "$sh: a missing token file: exit $code"
  [[ ! -s $tmp/calls ]] || fail "$sh: reposed was started without its token file"
  grep -q "REPOSED_TCP=none" "$tmp/out" || fail "$sh: the message does not name REPOSED_TCP=none"
  grep -q "$tmp/no-token does not exist" "$tmp/out" || fail "$sh: the message does not name the file"
  grep -q "examples/compose.yaml" "$tmp/out" || fail "$sh: the message does not point at the example"
  # The image's default path, as `docker run reposed` has it.
  entry_run "$sh" --
  [[ $code -eq 2 ]] && grep -q "/run/secrets/reposed_token does not exist" "$tmp/out" ||
    { cat "$tmp/out"; fail "$sh: docker run with no options: exit $code"; }
  # Unix-only: no token needed, none passed.
  entry_run "$sh" REPOSED_TCP=none --
  [[ $code -eq 0 ]] || fail "$sh: REPOSED_TCP=none: exit $code"
  [[ $(cat "$tmp/calls") == "reposed --unix /run/reposed/reposed.sock --tcp none --data-dir /var/lib/reposed" ]] ||
    fail "$sh: REPOSED_TCP=none ran: $(cat "$tmp/calls")"
  # A replica: --nats and --store, its data directory a cache.
  entry_run "$sh" REPOSED_TCP=none REPOSED_NATS=nats://n1:4222,nats://n2:4222 REPOSED_STORE=plant --
  [[ $code -eq 0 && $(cat "$tmp/calls") == "reposed --unix /run/reposed/reposed.sock --tcp none --data-dir /var/lib/reposed --nats nats://n1:4222,nats://n2:4222 --store plant" ]] ||
    fail "$sh: a replica ran: $(cat "$tmp/calls")"
  entry_run "$sh" REPOSED_TCP=none REPOSED_NATS=nats://n1:4222 --
  [[ $code -eq 2 && ! -s $tmp/calls ]] && grep -q REPOSED_STORE "$tmp/out" ||
    fail "$sh: REPOSED_NATS without REPOSED_STORE: exit $code"
  # A token file that exists is passed on; so are other flags.
  entry_run "$sh" REPOSED_TOKEN_FILE="$tmp/token" REPOSED_DATA_DIR= -- --log-level debug
  [[ $(cat "$tmp/calls") == "reposed --unix /run/reposed/reposed.sock --tcp 0.0.0.0:7411 --token-file $tmp/token --log-level debug" ]] ||
    fail "$sh: with a token file ran: $(cat "$tmp/calls")"
  # JSON logs from the environment.
  entry_run "$sh" REPOSED_TCP=none REPOSED_LOG_FORMAT=json --
  [[ $code -eq 0 && $(cat "$tmp/calls") == "reposed --unix /run/reposed/reposed.sock --tcp none --log-format json --data-dir /var/lib/reposed" ]] ||
    fail "$sh: REPOSED_LOG_FORMAT=json ran: $(cat "$tmp/calls")"
  # HTTP from the environment: loopback as it is, any other host with
  # --insecure-http.
  entry_run "$sh" REPOSED_TCP=none REPOSED_HTTP=127.0.0.1:9464 --
  [[ $code -eq 0 && $(cat "$tmp/calls") == "reposed --unix /run/reposed/reposed.sock --tcp none --http 127.0.0.1:9464 --data-dir /var/lib/reposed" ]] ||
    fail "$sh: REPOSED_HTTP=127.0.0.1:9464 ran: $(cat "$tmp/calls")"
  entry_run "$sh" REPOSED_TCP=none REPOSED_HTTP=0.0.0.0:9464 --
  [[ $code -eq 0 && $(cat "$tmp/calls") == "reposed --unix /run/reposed/reposed.sock --tcp none --http 0.0.0.0:9464 --insecure-http --data-dir /var/lib/reposed" ]] ||
    fail "$sh: REPOSED_HTTP=0.0.0.0:9464 ran: $(cat "$tmp/calls")"
  # --token-file given after the image name: the entrypoint's own check is moot.
  entry_run "$sh" REPOSED_TOKEN_FILE="$tmp/no-token" -- --token-file "$tmp/token"
  [[ $code -eq 0 && $(cat "$tmp/calls") == *"--token-file $tmp/token"* ]] ||
    fail "$sh: an explicit --token-file: exit $code, ran $(cat "$tmp/calls")"
  # --unix after the image name is refused (the health check reads REPOSED_UNIX).
  entry_run "$sh" REPOSED_TCP=none -- --unix /x
  [[ $code -eq 2 && ! -s $tmp/calls ]] || fail "$sh: --unix was not refused"
  # The health check probes the configured listener.
  entry_run "$sh" REPOSED_UNIX="$tmp/s.sock" -- healthcheck
  [[ $(cat "$tmp/calls") == "repose-cli --unix $tmp/s.sock --timeout 2000 ping" ]] ||
    fail "$sh: healthcheck ran: $(cat "$tmp/calls")"
done
echo "test_docker: entrypoint: ok"

# ---- examples/compose.yaml -------------------------------------------------------------
python3 - "$src/examples/compose.yaml" "$src/Dockerfile" "$tmp" <<'PY'
import json, os, re, sys
try:
    import yaml
except ImportError:
    sys.exit("python3-yaml is needed (scripts/deps.sh all installs it)")
compose, dockerfile, tmp = sys.argv[1:]
doc = yaml.safe_load(open(compose))
svc = doc["services"]
daemon = svc["reposed"]
clients = [n for n in svc if n != "reposed"]
assert len(clients) == 2, clients
env = daemon["environment"]
assert env["REPOSED_TCP"] == "none", "the example is Unix-only"
sock = env.get("REPOSED_UNIX")
image_env = dict(re.findall(r"(REPOSED_\w+)=(\S+)", open(dockerfile).read()))
sock = sock or image_env["REPOSED_UNIX"]
gid = re.search(r"USER (\d+):(\d+)", open(dockerfile).read()).group(2)
run_vol = [v for v in daemon["volumes"] if v.endswith(":" + os.path.dirname(sock))]
assert run_vol, "the daemon's socket directory is not a volume"
for name in ["reposed"] + clients:
    s = svc[name]
    assert s["build"]["context"] == "..", name  # the repository, from examples/
    assert s["image"] == "reposed", name
for name in clients:
    c = svc[name]
    assert run_vol[0] in c["volumes"], f"{name} does not mount {run_vol[0]}"
    assert c["environment"]["REPOSE_SOCKET"] == sock, f"{name} names another socket"
    assert str(gid) in [str(g) for g in c["group_add"]], f"{name} lacks gid {gid}"
    assert c["depends_on"]["reposed"]["condition"] == "service_healthy", name
# What the emulation below runs: the daemon's environment and each
# client's command, with Compose's $$ escapes undone.
out = {"daemon_env": {k: str(v) for k, v in env.items()},
       "sock": sock,
       "clients": {n: [a.replace("$$", "$") for a in svc[n]["command"]] for n in clients}}
json.dump(out, open(os.path.join(tmp, "compose.json"), "w"))
PY
echo "test_docker: compose.yaml: ok"

# ---- examples/compose-replicas.yaml: three replicas on a 3-node NATS cluster -------------
python3 - "$src/examples/compose-replicas.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
svc = doc["services"]
nats = sorted(n for n in svc if n.startswith("nats-"))
reps = sorted(n for n in svc if n.startswith("reposed-"))
assert len(nats) == 3 and len(reps) == 3, (nats, reps)
names = set()
for n in nats:
    cmd = svc[n]["command"]
    assert "-js" in cmd, n
    names.add(cmd[cmd.index("-n") + 1])
    routes = set(cmd[cmd.index("--routes") + 1].split(","))
    assert routes == {f"nats://{m}:6222" for m in nats if m != n}, (n, routes)
assert len(names) == 3, "JetStream needs a distinct server name per node"
urls = {f"nats://{m}:4222" for m in nats}
stores, vols = set(), []
for r in reps:
    s = svc[r]
    env = s["environment"]
    assert set(env["REPOSED_NATS"].split(",")) == urls, r
    assert env["REPOSED_TCP"] == "none", r
    stores.add(env["REPOSED_STORE"])
    assert s["build"]["context"] == ".." and s["image"] == "reposed", r
    assert set(s["depends_on"]) == set(nats), r
    vols += [v.split(":")[0] for v in s["volumes"]]
assert len(stores) == 1, "the replicas must share one store"
assert len(vols) == len(set(vols)), "each replica needs its own socket and data volumes"
for v in vols + [svc[n]["volumes"][0].split(":")[0] for n in nats]:
    assert v in doc["volumes"], f"volume {v} is not declared"
PY
echo "test_docker: compose-replicas.yaml: ok"

# ---- the compose services, run without Docker --------------------------------------------
mkdir -p "$tmp/bin" "$tmp/run" "$tmp/data"
ln -s "$reposed" "$tmp/bin/reposed"
ln -s "$cli" "$tmp/bin/repose-cli"
sock=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sock"])' "$tmp/compose.json")
scratch_sock=$tmp/run/reposed.sock
# The daemon service's environment, its socket moved into the scratch dir.
mapfile -t denv < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for k, v in d["daemon_env"].items():
    print(k + "=" + v.replace(d["sock"], sys.argv[2]))' "$tmp/compose.json" "$scratch_sock")
[[ ${#denv[@]} -ge 1 ]] || fail "no environment for the daemon service"
chmod 0700 "$tmp/data"
env PATH="$tmp/bin:$PATH" REPOSED_DATA_DIR="$tmp/data" "${denv[@]}" sh "$entry" >"$tmp/daemon.log" 2>&1 &
pids+=($!)
healthy=false
for _ in $(seq 200); do
  if env PATH="$tmp/bin:$PATH" "${denv[@]}" sh "$entry" healthcheck 2>/dev/null; then
    healthy=true
    break
  fi
  sleep 0.05
done
$healthy || { cat "$tmp/daemon.log"; fail "the daemon service never became healthy"; }
grep -q "listening on tcp" "$tmp/daemon.log" && fail "the daemon service listens on TCP"
# run_client NAME: the service's command with its environment.
run_client() {
  python3 - "$tmp/compose.json" "$1" "$sock" "$scratch_sock" <<'PY'
import json, os, subprocess, sys
d = json.load(open(sys.argv[1]))
cmd = d["clients"][sys.argv[2]]
env = dict(os.environ, REPOSE_SOCKET=sys.argv[4])
sys.exit(subprocess.run(cmd, env=env, timeout=60).returncode)
PY
}
PATH="$tmp/bin:$PATH" run_client watcher >"$tmp/watcher.out" 2>"$tmp/watcher.err" &
watcher=$!
pids+=($watcher)
PATH="$tmp/bin:$PATH" run_client writer >"$tmp/writer.out" 2>"$tmp/writer.err" ||
  { cat "$tmp/writer.err"; fail "the writer service failed"; }
wait "$watcher" || { cat "$tmp/watcher.err"; fail "the watcher service failed"; }
changes=$(grep -c '"method":"scene.changed"' "$tmp/watcher.out" || true)
[[ $changes -eq 3 ]] || { cat "$tmp/watcher.out"; fail "the watcher saw $changes changes, not 3"; }
grep -q '"method":"scene.deleted"' "$tmp/watcher.out" || fail "the watcher did not see the deletion"
grep -q '"center":\[0.5,0,0.8\]' "$tmp/watcher.out" || fail "the last put is not in the watcher's output"
grep -q '"distance"' "$tmp/writer.out" || fail "the writer's query printed no distance"
echo "test_docker: compose services without Docker: ok"
