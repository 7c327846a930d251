#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cross-protocol defence against real HTTP clients: curl and Python's
# http.client POST a JSON-RPC request (scene.create) to reposed's TCP port,
# as a web page or a confused developer would.  Each must get an HTTP 400
# whose text says reposed speaks newline-delimited JSON-RPC, the scene must
# not exist afterwards, and stats must count the refusals.
# Usage: test_http.sh PATH-TO-REPOSED.  curl is optional (skipped when
# missing); python3 is required.
set -euo pipefail

reposed=${1:?usage: test_http.sh PATH-TO-REPOSED}
read -r -a wrapper <<<"${REPOSE_DAEMON_WRAPPER:-}"
limit=20
[[ ${#wrapper[@]} -gt 0 ]] && limit=120
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }

tmp=$(mktemp -d /tmp/reposed-http.XXXXXX)
pid=
cleanup() {
  [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [[ -f $tmp/daemon.err ]] && { echo "--- daemon log" >&2; cat "$tmp/daemon.err" >&2; }
  exit 1
}

# The log exists before the daemon starts: the background job's redirection
# may not have run yet when the loop below first reads it (under set -e a
# failed sed would end the test).
: >"$tmp/daemon.err"
"${wrapper[@]}" "$reposed" --unix "$tmp/s.sock" --tcp 127.0.0.1:0 2>>"$tmp/daemon.err" &
pid=$!
deadline=$((SECONDS + limit))
port=
until [[ -n $port ]]; do
  ((SECONDS < deadline)) || fail "daemon did not start"
  port=$(sed -n 's/.*listening on tcp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/daemon.err")
  [[ -n $port ]] && grep -q "listening on unix" "$tmp/daemon.err" || { port=; sleep 0.05; }
done

body='{"jsonrpc":"2.0","id":1,"method":"scene.create","params":{"scene":"from_http"}}'
printf '%s\n' "$body" >"$tmp/body"
refusals=0

if command -v curl >/dev/null; then
  code=$(curl -sS -o "$tmp/curl.out" -w '%{http_code}' -X POST --data-binary @"$tmp/body" \
    -H 'Content-Type: application/json' "http://127.0.0.1:$port/" || true)
  [[ $code == 400 ]] || fail "curl: HTTP status '$code', want 400"
  grep -q "newline-delimited JSON" "$tmp/curl.out" || fail "curl: body says $(cat "$tmp/curl.out")"
  refusals=$((refusals + 1))
else
  echo "note: curl not found; only Python's http.client is used"
fi

python3 - "$port" "$tmp/body" <<'PY' || fail "python http.client"
import http.client, sys
port, body = int(sys.argv[1]), open(sys.argv[2], "rb").read()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
c.request("POST", "/rpc", body=body, headers={"Content-Type": "application/json"})
r = c.getresponse()
text = r.read().decode()
assert r.status == 400, r.status
assert "newline-delimited JSON" in text, text
assert r.getheader("Connection") == "close", r.getheaders()
PY
refusals=$((refusals + 1))

# Over the Unix socket: the scene was never created, the refusals counted.
python3 - "$tmp/s.sock" "$refusals" <<'PY' || fail "state after the HTTP requests"
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
f = s.makefile("rb")
def call(method):
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}) + "\n").encode())
    return json.loads(f.readline())["result"]
assert call("scene.list")["scenes"] == [], "the HTTP body was executed"
got = call("stats")["connections"]["http_rejected"]
assert got == int(sys.argv[2]), got
PY
grep -q "sent an HTTP request" "$tmp/daemon.err" || fail "no warning in the log"

kill -TERM "$pid"
code=0
wait "$pid" || code=$?
pid=
[[ $code == 0 ]] || fail "daemon exit status $code"
echo "ok: $refusals HTTP clients refused, nothing executed"
