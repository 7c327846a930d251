#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# systemd integration of reposed, without systemd as PID 1:
#   notify      — a datagram socket stands in for systemd's NOTIFY_SOCKET and
#                 must receive READY=1, WATCHDOG=1 (WATCHDOG_USEC set) and,
#                 after SIGTERM, STOPPING=1; also over an abstract ('@') name.
#   activation  — systemd-socket-activate passes a Unix socket and a TCP port;
#                 reposed must answer ping on both, log its "listening" lines,
#                 ignore --unix/--tcp, and leave the passed socket file alone;
#                 a passed non-loopback TCP socket without a token is refused.
# Usage: test_systemd.sh PATH-TO-REPOSED.  REPOSE_DAEMON_WRAPPER (e.g.
# valgrind ...) prefixes the daemon, as in the other integration tests.
# Exits 77 (skipped) when python3 or systemd-socket-activate is missing.
set -euo pipefail

reposed=${1:?usage: test_systemd.sh PATH-TO-REPOSED}
read -r -a wrapper <<<"${REPOSE_DAEMON_WRAPPER:-}"
# Deadlines, in seconds; valgrind makes everything ~20x slower.
limit=20
[[ ${#wrapper[@]} -gt 0 ]] && limit=120

# Start from a clean slate even when the test itself runs under systemd.
unset NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID LISTEN_PID LISTEN_FDS LISTEN_FDNAMES

command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
ssa=$(command -v systemd-socket-activate || true)
if [[ -z $ssa ]]; then
  echo "SKIP: systemd-socket-activate not found (Debian package systemd)"
  exit 77
fi

tmp=$(mktemp -d /tmp/reposed-systemd.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  local f
  for f in "$tmp"/*.err "$tmp"/*.log; do
    [[ -f $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
  done
  exit 1
}

# wait_for DESCRIPTION COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local what=$1; shift
  local deadline=$((SECONDS + limit))
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out waiting for $what"
    sleep 0.05
  done
}

# stop PID: SIGTERM, then waits (bounded) and checks the exit code is 0.
stop() {
  local pid=$1 rc=0
  kill -TERM "$pid"
  wait_for "pid $pid to exit" eval "! kill -0 $pid 2>/dev/null"
  wait "$pid" || rc=$?
  ((rc == 0)) || fail "reposed exited with $rc after SIGTERM"
}

# A stand-in for systemd's notify socket: appends every datagram, followed by
# a line "--", to the log file.  Runs until killed (bounded by its own
# deadline).  argv: address (a path, or @name for the abstract namespace), log.
cat >"$tmp/notify.py" <<'EOF'
import socket, sys, time
addr, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
s.settimeout(0.5)
open(log + ".bound", "w").close()
deadline = time.time() + 600
with open(log, "a") as f:
    while time.time() < deadline:
        try:
            data = s.recv(4096)
        except socket.timeout:
            continue
        f.write(data.decode() + "\n--\n")
        f.flush()
EOF

# Sends ping over a Unix socket (unix PATH) or TCP (tcp HOST PORT) and prints
# the reply line.
cat >"$tmp/ping.py" <<'EOF'
import socket, sys
if sys.argv[1] == "unix":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    addr = sys.argv[2]
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    addr = (sys.argv[2], int(sys.argv[3]))
s.settimeout(float(sys.argv[-1]))
s.connect(addr)
s.sendall(b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
print(buf.decode().strip())
EOF

ping_ok() { # ping_ok unix PATH | tcp HOST PORT
  local reply
  reply=$(python3 "$tmp/ping.py" "$@" "$limit") || fail "ping over $* failed"
  [[ $reply == '{"jsonrpc":"2.0","id":7,"result":{"pong":true}}' ]] ||
    fail "ping over $*: unexpected reply '$reply'"
}

# poke HOST PORT: one connection attempt, which makes systemd-socket-activate
# exec the daemon; its outcome does not matter.
poke() {
  python3 -c 'import socket,sys; socket.create_connection((sys.argv[1],int(sys.argv[2])),5).close()' \
    "$1" "$2" 2>/dev/null || true
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---- notify ----------------------------------------------------------------

# notify_case NAME NOTIFY_SOCKET-ADDRESS: runs reposed under a watchdog and
# checks READY=1, then WATCHDOG=1, then STOPPING=1 and exit 0 at SIGTERM.
notify_case() {
  local name=$1 addr=$2 log="$tmp/$1.log"
  : >"$log"
  python3 "$tmp/notify.py" "$addr" "$log" &
  local listener=$!
  pids+=("$listener")
  wait_for "the notify socket" test -e "$log.bound"

  NOTIFY_SOCKET=$addr WATCHDOG_USEC=200000 \
    "${wrapper[@]}" "$reposed" --unix "$tmp/$name.sock" --tcp none 2>"$tmp/$name.err" &
  local pid=$!
  pids+=("$pid")
  wait_for "READY=1 ($name)" grep -qx 'READY=1' "$log"
  grep -q '^STATUS=' "$log" || fail "$name: no STATUS= with READY=1"
  wait_for "WATCHDOG=1 ($name)" grep -qx 'WATCHDOG=1' "$log"
  ping_ok unix "$tmp/$name.sock"
  ! grep -qx 'STOPPING=1' "$log" || fail "$name: STOPPING=1 before SIGTERM"
  stop "$pid"
  wait_for "STOPPING=1 ($name)" grep -qx 'STOPPING=1' "$log"
  # READY comes first; STOPPING after the first WATCHDOG.
  local first_ready first_wd stopping
  first_ready=$(grep -nx 'READY=1' "$log" | head -1 | cut -d: -f1)
  first_wd=$(grep -nx 'WATCHDOG=1' "$log" | head -1 | cut -d: -f1)
  stopping=$(grep -nx 'STOPPING=1' "$log" | head -1 | cut -d: -f1)
  ((first_ready < first_wd && first_wd < stopping)) || fail "$name: notifications out of order"
  [[ ! -e $tmp/$name.sock ]] || fail "$name: our own socket file was not removed"
  kill "$listener"
  echo "ok: notify ($name)"
}

notify_case notify_path "$tmp/notify.sock"
notify_case notify_abstract "@reposed-test-notify-$$"

# WATCHDOG_PID naming another process: no watchdog, but READY=1 still sent.
: >"$tmp/wdpid.log"
python3 "$tmp/notify.py" "$tmp/wdpid.sock" "$tmp/wdpid.log" &
listener=$!
pids+=("$listener")
wait_for "the notify socket" test -e "$tmp/wdpid.log.bound"
NOTIFY_SOCKET=$tmp/wdpid.sock WATCHDOG_USEC=200000 WATCHDOG_PID=1 \
  "${wrapper[@]}" "$reposed" --unix "$tmp/wdpid-d.sock" --tcp none --log-level info \
  2>"$tmp/wdpid.err" &
pid=$!
pids+=("$pid")
wait_for "READY=1 (WATCHDOG_PID)" grep -qx 'READY=1' "$tmp/wdpid.log"
stop "$pid"
! grep -q 'systemd watchdog' "$tmp/wdpid.err" || fail "watchdog started for WATCHDOG_PID=1"
kill "$listener"
echo "ok: notify (WATCHDOG_PID of another process disables the watchdog)"

# Without NOTIFY_SOCKET nothing is sent and nothing complains.
env -u NOTIFY_SOCKET WATCHDOG_USEC=200000 \
  "${wrapper[@]}" "$reposed" --unix "$tmp/plain.sock" --tcp none 2>"$tmp/plain.err" &
pid=$!
pids+=("$pid")
wait_for "reposed without NOTIFY_SOCKET" grep -q 'listening on unix' "$tmp/plain.err"
ping_ok unix "$tmp/plain.sock"
stop "$pid"
! grep -qi 'notify\|watchdog' "$tmp/plain.err" || fail "complaints without NOTIFY_SOCKET"
echo "ok: no NOTIFY_SOCKET, no notifications"

# ---- socket activation -------------------------------------------------------

# systemd-socket-activate listens, and on the first connection execs the
# daemon in its own process with LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES set.
port=$(free_port)
act="$tmp/act.sock"
"$ssa" -l "$act" -l "127.0.0.1:$port" --fdname=api-unix:api-tcp -- \
  "${wrapper[@]}" "$reposed" --unix "$tmp/ignored.sock" --tcp 127.0.0.1:0 \
  2>"$tmp/act.err" &
pid=$!
pids+=("$pid")
wait_for "systemd-socket-activate's sockets" grep -q "Listening on 127.0.0.1:$port" "$tmp/act.err"
[[ -S $act ]] || fail "systemd-socket-activate did not create $act"
# The first connection starts the daemon; it is accepted and closed.
poke 127.0.0.1 "$port"
ping_ok unix "$act"
ping_ok tcp 127.0.0.1 "$port"
wait_for "listening lines" grep -qx "reposed: listening on tcp 127.0.0.1:$port" "$tmp/act.err"
grep -qx "reposed: listening on unix $act" "$tmp/act.err" ||
  fail "no 'listening on unix' line for the passed socket"
grep -q 'ignored' "$tmp/act.err" || fail "no log that --unix/--tcp are ignored"
grep -q '"api-unix"' "$tmp/act.err" && grep -q '"api-tcp"' "$tmp/act.err" ||
  fail "LISTEN_FDNAMES not logged"
[[ ! -e $tmp/ignored.sock ]] || fail "created --unix socket despite socket activation"
stop "$pid"
[[ -S $act ]] || fail "reposed unlinked the socket systemd-socket-activate created"
echo "ok: socket activation (unix + tcp)"

# A passed TCP socket on a non-loopback address needs a token: refused.
port=$(free_port)
"$ssa" -l "0.0.0.0:$port" -- "${wrapper[@]}" "$reposed" 2>"$tmp/open.err" &
pid=$!
pids+=("$pid")
wait_for "systemd-socket-activate's socket" grep -q "Listening on 0.0.0.0:$port" "$tmp/open.err"
poke 127.0.0.1 "$port"
wait_for "reposed to refuse 0.0.0.0" eval "! kill -0 $pid 2>/dev/null"
rc=0
wait "$pid" || rc=$?
((rc == 1)) || fail "non-loopback passed socket without token: exit $rc, expected 1"
grep -q 'refusing to listen on tcp 0.0.0.0' "$tmp/open.err" || fail "no refusal message"
echo "ok: socket activation (non-loopback without token refused)"

# LISTEN_PID of another process: the variables are ignored and our own
# listeners are created.
LISTEN_PID=1 LISTEN_FDS=1 "${wrapper[@]}" "$reposed" --unix "$tmp/own.sock" --tcp none \
  2>"$tmp/own.err" &
pid=$!
pids+=("$pid")
wait_for "own listener" grep -qx "reposed: listening on unix $tmp/own.sock" "$tmp/own.err"
ping_ok unix "$tmp/own.sock"
stop "$pid"
echo "ok: LISTEN_PID of another process ignored"

echo "all systemd tests passed"
