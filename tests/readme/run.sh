#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Keeps README.md honest:
#  - compiles and runs every C example in it against the freshly built static
#    libraries, so the documentation cannot drift from the API;
#  - client examples (marked "needs a running reposed") are compiled, then run
#    against the reposed built next to STATIC_LIB on a scratch socket: they
#    must exit non-zero with no daemon and when the call fails (no scene), and
#    0 once the scene the example queries exists;
#  - the session shown in the README must be proto/examples/readme-session.jsonl
#    (which the transcript test replays).
# usage: run.sh SOURCE_DIR STATIC_LIB CLIENT_LIB SCRATCH_DIR   (CC and CFLAGS from env)
set -euo pipefail
src=$1 lib=$2 client=$3 scratch=$4
reposed=$(dirname "$lib")/reposed
rm -rf "$scratch" && mkdir -p "$scratch"
daemon_pid=
cleanup() { [[ -z $daemon_pid ]] || kill "$daemon_pid" 2>/dev/null || true; }
trap cleanup EXIT

awk -v dir="$scratch" '
  /^```c$/ { on = 1; n++; file = sprintf("%s/readme_example_%d.c", dir, n); next }
  /^```/   { on = 0; next }
  on       { print > file }' "$src/README.md"
count=$(find "$scratch" -name 'readme_example_*.c' | wc -l)
[ "$count" -ge 1 ] || { echo "no C example found in README.md"; exit 1; }

# expect_exit WANT WHAT CMD...: runs CMD and checks whether it exits 0.
expect_exit() {
  local want=$1 what=$2 got=0
  shift 2
  "$@" >"$scratch/run.out" 2>"$scratch/run.err" || got=$?
  if { [[ $want == zero ]] && [[ $got -ne 0 ]]; } || { [[ $want == nonzero ]] && [[ $got -eq 0 ]]; }; then
    echo "FAIL: $what: exit $got, want $want"
    sed 's/^/  stdout: /' "$scratch/run.out"
    sed 's/^/  stderr: /' "$scratch/run.err"
    exit 1
  fi
  echo "ok: $what (exit $got)"
}

# start_daemon: reposed on $scratch/reposed.sock, no TCP; waits until it listens.
start_daemon() {
  [[ -x $reposed ]] || { echo "FAIL: no reposed at $reposed to run the client examples"; exit 1; }
  "$reposed" --unix "$scratch/reposed.sock" --tcp none 2>"$scratch/reposed.log" &
  daemon_pid=$!
  for _ in $(seq 1 500); do
    grep -q "listening on unix" "$scratch/reposed.log" && return 0
    sleep 0.01
  done
  echo "FAIL: reposed did not start"; cat "$scratch/reposed.log"; exit 1
}

# send_line JSON: one request to the scratch daemon (python3: no nc or socat needed).
send_line() {
  python3 - "$scratch/reposed.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
reply = s.makefile().readline()
if '"result"' not in reply:
    sys.exit("request failed: " + reply)
PY
}

for f in "$scratch"/readme_example_*.c; do
  exe=${f%.c}
  echo "== $(basename "$f")"
  if grep -q "needs a running reposed" "$f"; then
    grep -q 'rp_client_connect_default(' "$f" ||
      { echo "FAIL: client example does not use rp_client_connect_default"; exit 1; }
    # The program as written, on a scratch socket named by REPOSE_SOCKET, so
    # a daemon on /tmp/reposed.sock does not matter.
    ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -I"$src/include" "$f" "$client" \
      $(pkg-config --libs libcjson) -o "$exe"
    export REPOSE_SOCKET=$scratch/reposed.sock
    expect_exit nonzero "client example with no daemon" "$exe"
    grep -q "unix:$scratch/reposed.sock" "$scratch/run.err" ||
      { echo "FAIL: the client example did not try \$REPOSE_SOCKET"; cat "$scratch/run.err"; exit 1; }
    start_daemon
    expect_exit nonzero "client example when the call fails (no scene 'cell')" "$exe"
    grep -q "Not found: scene 'cell'" "$scratch/run.err" ||
      { echo "FAIL: the failed call's error is not printed"; cat "$scratch/run.err"; exit 1; }
    send_line '{"jsonrpc":"2.0","id":1,"method":"scene.create","params":{"scene":"cell","shapes":{"post":{"capsule":{"a":[0.6,0.2,0],"b":[0.6,0.2,0.8],"radius":0.04}}}}}'
    expect_exit zero "client example with the scene" "$exe"
    unset REPOSE_SOCKET
    grep -q '"distance":0.192842712474619' "$scratch/run.out" ||
      { echo "FAIL: unexpected client example output"; cat "$scratch/run.out"; exit 1; }
    kill "$daemon_pid"
    wait "$daemon_pid" || true
    daemon_pid=
    continue
  fi
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -I"$src/include" "$f" "$lib" -lexpat -lsleef -lm -o "$exe"
  "$exe" | tee "$exe.out"
  test -s "$exe.out"
done

# The README's session, request and reply lines, is the replayed transcript.
awk '/^```console$/ { on = 1; next } /^```/ { on = 0 } on && /^\{/' "$src/README.md" \
  >"$scratch/session.jsonl"
if ! diff -u "$src/proto/examples/readme-session.jsonl" "$scratch/session.jsonl"; then
  echo "FAIL: the README session differs from proto/examples/readme-session.jsonl"
  exit 1
fi
echo "README session matches proto/examples/readme-session.jsonl"
echo "$count README examples compiled"
