#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# repose-cli against the real daemon: exit codes, pretty and raw output, watch,
# lines from a pipe, @file and @@file params (a kinematic model from
# tests/data/arm7.urdf, checked in joint space) and the token file checks.
#
# Usage: test_cli.sh PATH-TO-REPOSE-CLI PATH-TO-REPOSED
#
# Waits are guards against hangs only; nothing here asserts a duration.
set -euo pipefail

CLI=$(realpath "$1")
REPOSED=$(realpath "$2")
DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/repose-cli-test.XXXXXX")
pids=()
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

# expect_file FILE WANT-TEXT DESCRIPTION
expect_file() {
  if [[ "$(cat "$1")" != "$2" ]]; then
    fail "$3: got"
    sed 's/^/  | /' "$1" >&2
    echo "  want:" >&2
    printf '%s\n' "$2" | sed 's/^/  | /' >&2
  else
    ok
  fi
}

# expect_grep FILE PATTERN DESCRIPTION
expect_grep() {
  if grep -q -- "$2" "$1"; then ok; else
    fail "$3: '$2' not in"
    sed 's/^/  | /' "$1" >&2
  fi
}

# start_daemon NAME [FLAGS...]: starts reposed on $tmp/NAME.sock and a free
# TCP port; sets $sock and $port.
start_daemon() {
  local name=$1
  shift
  sock="$tmp/$name.sock"
  local log="$tmp/$name.log"
  "$REPOSED" --unix "$sock" --tcp 127.0.0.1:0 "$@" 2>"$log" &
  pids+=($!)
  port=
  for _ in $(seq 1 1000); do
    if grep -q "listening on unix" "$log" && grep -q "listening on tcp" "$log"; then
      port=$(sed -n 's/.*listening on tcp .*:\([0-9]*\)$/\1/p' "$log" | head -1)
      return 0
    fi
    sleep 0.01
  done
  echo "reposed did not start:" >&2
  cat "$log" >&2
  exit 1
}

start_daemon main
S=(--unix "$sock")

# ---- one call: pretty output and exit codes --------------------------------------
expect_code 0 "ping" -- "$CLI" "${S[@]}" ping
expect_file "$tmp/out" $'{\n  "pong": true\n}' "ping output"
expect_code 0 "ping over tcp" -- "$CLI" --host 127.0.0.1 --port "$port" ping
expect_file "$tmp/out" $'{\n  "pong": true\n}' "ping output over tcp"
expect_code 0 "--port alone means 127.0.0.1" -- "$CLI" --port "$port" ping

expect_code 0 "scene.create" -- "$CLI" "${S[@]}" scene.create \
  '{"scene":"cell","shapes":{"post":{"capsule":{"a":[0,0,0],"b":[0,0,1],"radius":0.25}}}}'
expect_file "$tmp/out" $'{\n  "scene": "cell",\n  "revision": 1\n}' "scene.create output"
expect_code 0 "scene.get" -- "$CLI" "${S[@]}" scene.get '{"scene":"cell"}'
expect_file "$tmp/out" '{
  "scene": "cell",
  "revision": 1,
  "shapes": {
    "post": {
      "capsule": {
        "a": [0, 0, 0],
        "b": [0, 0, 1],
        "radius": 0.25
      }
    }
  }
}' "scene.get pretty output: a vec3 on one line"
expect_code 0 "empty object stays compact" -- "$CLI" "${S[@]}" scene.create '{"scene":"empty"}'
expect_code 0 "scene.get of an empty scene" -- "$CLI" "${S[@]}" scene.get '{"scene":"empty"}'
expect_grep "$tmp/out" '"shapes": {}' "empty shapes"

expect_code 1 "rpc error" -- "$CLI" "${S[@]}" scene.get '{"scene":"nope"}'
expect_grep "$tmp/err" "error -32001" "rpc error code"
expect_grep "$tmp/err" '"name": "nope"' "rpc error data"
[[ ! -s "$tmp/out" ]] && ok || fail "rpc error printed on stdout"
expect_code 1 "unknown method" -- "$CLI" "${S[@]}" no.such.method
expect_grep "$tmp/err" "error -32601" "unknown method code"

# Arrays of numbers stay on one line; other arrays get one element a line.
expect_code 0 "hello" -- "$CLI" "${S[@]}" hello
expect_grep "$tmp/out" '^  "methods": \[$' "an array of strings is not inlined"
expect_grep "$tmp/out" '^    "scene.create",$' "one method a line"
expect_code 0 "distance with witness" -- "$CLI" "${S[@]}" distance \
  '{"a":{"sphere":{"center":[0,0,0],"radius":1}},"b":{"sphere":{"center":[0,3,0],"radius":0.5}},"witness":true}'
expect_file "$tmp/out" '{
  "distance": 1.5,
  "point_a": [0, 1, 0],
  "point_b": [0, 2.5, 0],
  "normal": [0, 1, 0]
}' "witness vectors on one line"

# ---- unknown methods: the nearest of the daemon's methods ------------------------
# suggest NAME DAEMON-SUGGESTION WANT-LAST-STDERR-LINE: the daemon's own
# data.suggestion (the first nearest; none: empty) and the CLI's hint (all
# the nearest, up to three).
suggest() {
  local data="  \"method\": \"$1\""
  [[ -z $2 ]] || data+=",
  \"suggestion\": \"$2\""
  expect_code 1 "unknown method $1" -- "$CLI" "${S[@]}" "$1"
  expect_file "$tmp/err" "error -32601: Method not found: $1
data: {
$data
}
$3" "suggestion for $1"
}
suggest scene.lst scene.list "repose-cli: did you mean 'scene.list'?"
suggest sceen.create scene.create "repose-cli: did you mean 'scene.create'?"
suggest chek check "repose-cli: did you mean 'check'?"
suggest PING ping "repose-cli: did you mean 'ping'? (method names are case-sensitive)"
suggest list model.list "repose-cli: did you mean 'model.list' or 'scene.list'?"
suggest frobnicate "" "repose-cli: no method is near 'frobnicate'; \`repose-cli help\` lists them"

# ---- usage errors: 2 ---------------------------------------------------------------
expect_code 0 "--help" -- "$CLI" --help
expect_grep "$tmp/out" "usage: repose-cli" "--help text"
expect_grep "$tmp/out" "urdf=@@arm.urdf" "--help shows KEY=@@FILE"
expect_code 0 "-h" -- "$CLI" -h
expect_grep "$tmp/out" "usage: repose-cli" "-h text"
expect_code 0 "-h needs no daemon" -- "$CLI" --unix "$tmp/none.sock" -h
# --version: the project version, the same as the daemon's.
daemon_version=$("$REPOSED" --version | sed -n 's/^reposed \([^ ]*\).*/\1/p')
[[ -n $daemon_version ]] && ok || fail "reposed --version: no version"
expect_code 0 "--version" -- "$CLI" --version
expect_file "$tmp/out" "repose-cli $daemon_version" "--version output"
expect_code 2 "unknown option" -- "$CLI" --bogus ping
expect_code 2 "unknown short option" -- "$CLI" -x ping
expect_grep "$tmp/err" "unknown option '-x'" "unknown short option message"
expect_code 2 "missing option value" -- "$CLI" --unix
expect_code 2 "bad port" -- "$CLI" --port 70000 ping
expect_code 2 "bad timeout" -- "$CLI" --timeout soon ping
expect_code 2 "--unix with --host" -- "$CLI" --unix "$sock" --host 127.0.0.1 ping
expect_code 2 "too many arguments" -- "$CLI" "${S[@]}" ping '{}' extra
expect_code 2 "params not JSON" -- "$CLI" "${S[@]}" ping '{oops'
expect_grep "$tmp/err" "not valid JSON" "params not JSON message"
expect_code 2 "params not an object" -- "$CLI" "${S[@]}" ping '[1]'
expect_code 2 "--raw with a method" -- "$CLI" "${S[@]}" --raw ping
expect_code 2 "bad params win over no daemon" -- "$CLI" --unix "$tmp/none.sock" ping '{oops'

# ---- help: the daemon's methods ---------------------------------------------------------
expect_code 0 "help" -- "$CLI" "${S[@]}" help
expect_grep "$tmp/out" "^methods of reposed $daemon_version:\$" "help heading"
for m in ping scene.create scene.list scene.replace scene.move check.batch violates_margin; do
  expect_grep "$tmp/out" "^  $m\$" "help lists $m"
done
expect_code 3 "help without a daemon" -- "$CLI" --unix "$tmp/none.sock" help

# ---- no daemon: 3 -------------------------------------------------------------------
expect_code 3 "no daemon on the Unix socket" -- "$CLI" --unix "$tmp/none.sock" ping
expect_grep "$tmp/err" "none.sock" "no daemon message names the socket"
expect_code 3 "no daemon on a TCP port" -- "$CLI" --host 127.0.0.1 --port 1 ping

# ---- @file params ---------------------------------------------------------------------
cat >"$tmp/shapes.json" <<'EOF'
{
  "a": {"sphere": {"center": [0, 0, 0], "radius": 0.5}},
  "b": {"capsule": {"a": [2, -1, 0], "b": [2, 1, 0], "radius": 0.25}}
}
EOF
expect_code 0 "@file shapes" -- "$CLI" "${S[@]}" scene.create \
  "{\"scene\":\"fromfile\",\"shapes\":@$tmp/shapes.json}"
expect_code 0 "scene from file" -- "$CLI" "${S[@]}" scene.list
expect_grep "$tmp/out" '"scene": "fromfile"' "scene from file listed"
expect_grep "$tmp/out" '"shapes": 2' "scene from file has 2 shapes"
expect_code 0 "@file in a relative path" -- bash -c \
  "cd '$tmp' && '$CLI' --unix '$sock' scene.put '{\"scene\":\"fromfile\",\"shapes\":@shapes.json}'"
# Revisions are store-wide: this daemon's fourth mutation (after creating
# cell, empty and fromfile).
expect_grep "$tmp/out" '"revision": 4' "relative @file applied"
expect_code 2 "@file missing" -- "$CLI" "${S[@]}" scene.create '{"scene":"x","shapes":@no-such.json}'
expect_grep "$tmp/err" "no-such.json" "@file missing names the file"
echo '{"a": ' >"$tmp/broken.json"
expect_code 2 "@file invalid" -- "$CLI" "${S[@]}" scene.create \
  "{\"scene\":\"x\",\"shapes\":@$tmp/broken.json}"
expect_grep "$tmp/err" "broken.json" "@file invalid names the file"
expect_code 1 "@ inside a string is sent as is" -- "$CLI" "${S[@]}" scene.get '{"scene":"a@b"}'
expect_grep "$tmp/err" "error -32602" "a@b is an invalid scene name, not a file"

# ---- KEY=VALUE params ------------------------------------------------------------------
expect_code 0 "key=value: a plain word is a string" -- "$CLI" "${S[@]}" scene.create scene=kv
expect_file "$tmp/out" $'{\n  "scene": "kv",\n  "revision": 5\n}' "scene.create scene=kv output"
expect_code 0 "key=value: JSON values" -- "$CLI" "${S[@]}" scene.put scene=kv \
  shapes='{"s": {"sphere": {"center": [0, 0, 0], "radius": 1}}}' if_revision=5 create=false
expect_file "$tmp/out" $'{\n  "scene": "kv",\n  "revision": 6\n}' "scene.put with JSON values"
expect_code 0 "key=value: the distance example" -- "$CLI" "${S[@]}" distance \
  a='{"sphere":{"center":[0,0,0],"radius":1}}' b='{"sphere":{"center":[3,0,0],"radius":1}}'
expect_file "$tmp/out" $'{\n  "distance": 1\n}' "distance with key=value"
expect_code 1 "key=value: a number stays a number" -- "$CLI" "${S[@]}" scene.create scene=123
expect_grep "$tmp/err" "params.scene must be a string" "scene=123 is sent as a number"
expect_code 0 "key=value: a JSON string" -- "$CLI" "${S[@]}" scene.create scene='"123"'
expect_grep "$tmp/out" '"scene": "123"' "scene=\"123\" is the string 123"
expect_code 1 "key=value: blanks stay in a string" -- "$CLI" "${S[@]}" scene.create 'scene=a "b"'
expect_grep "$tmp/err" 'Invalid params: params.scene must be' "a string with blanks and quotes"
expect_code 0 "key=value: @file" -- "$CLI" "${S[@]}" scene.put scene=kv shapes=@"$tmp/shapes.json"
expect_file "$tmp/out" $'{\n  "scene": "kv",\n  "revision": 8\n}' "scene.put shapes=@file"
# scene.replace: the whole content swapped, with compare-and-set.
expect_code 0 "scene.replace with if_revision" -- "$CLI" "${S[@]}" scene.replace scene=kv \
  shapes='{"r": {"sphere": {"center": [1, 2, 3], "radius": 0.5}}}' if_revision=8
expect_file "$tmp/out" $'{\n  "scene": "kv",\n  "revision": 9\n}' "scene.replace output"
expect_code 0 "scene.get after scene.replace" -- "$CLI" "${S[@]}" scene.get scene=kv
expect_file "$tmp/out" '{
  "scene": "kv",
  "revision": 9,
  "shapes": {
    "r": {
      "sphere": {
        "center": [1, 2, 3],
        "radius": 0.5
      }
    }
  }
}' "scene.replace left only the new shapes"
expect_code 1 "scene.replace with a stale if_revision" -- "$CLI" "${S[@]}" scene.replace \
  scene=kv shapes='{}' if_revision=8
expect_file "$tmp/err" "error -32003: Revision conflict: expected 8, scene is at 9
data: {
  \"expected\": 8,
  \"actual\": 9
}" "scene.replace conflict"
expect_code 2 "key=value: @file missing" -- "$CLI" "${S[@]}" scene.put scene=kv shapes=@"$tmp/nope.json"
expect_grep "$tmp/err" "nope.json: cannot read" "missing @file named"
expect_code 2 "key=value: a word without =" -- "$CLI" "${S[@]}" scene.get kv
expect_file "$tmp/err" "repose-cli: 'kv' is not KEY=VALUE (params are one JSON object or KEY=VALUE words)" \
  "a word without = message"
expect_code 2 "key=value: empty key" -- "$CLI" "${S[@]}" scene.get =kv
expect_file "$tmp/err" "repose-cli: '=kv': the key before '=' is empty" "empty key message"
expect_code 2 "key=value: a key twice" -- "$CLI" "${S[@]}" scene.get scene=a scene=b
expect_file "$tmp/err" "repose-cli: key 'scene' is given twice" "a key twice message"
# A value that is JSON only on its own (cJSON skips a byte order mark only at
# the start of a text) is sent as a string, not refused as bad PARAMS-JSON.
expect_code 1 "key=value: a JSON value after a BOM is a string" -- "$CLI" "${S[@]}" \
  scene.create scene=$'\xef\xbb\xbf"x"'
expect_grep "$tmp/err" "params.scene" "the BOM value reached the daemon as a string"
expect_code 2 "key=value: not UTF-8" -- "$CLI" "${S[@]}" scene.create scene=$'caf\xe9'
expect_file "$tmp/err" \
  "repose-cli: params are not valid UTF-8 (byte 0xe9 at byte 13 of the JSON)" "not UTF-8 message"
expect_code 2 "JSON and key=value mixed" -- "$CLI" "${S[@]}" scene.get '{"scene":"kv"}' ids='[]'
expect_grep "$tmp/err" "PARAMS-JSON must be the only argument" "mixed forms message"
expect_code 2 "bad key=value wins over no daemon" -- "$CLI" --unix "$tmp/none.sock" scene.get kv

# KEY=@FILE takes the rest of the word as the file name, blanks and all.
cp "$tmp/shapes.json" "$tmp/my shapes, v2.json"
expect_code 0 "key=value: @file with blanks and a comma in its name" -- "$CLI" "${S[@]}" \
  scene.create scene=blanks shapes=@"$tmp/my shapes, v2.json"
expect_code 0 "the scene from 'my shapes, v2.json'" -- "$CLI" "${S[@]}" scene.get scene=blanks
expect_grep "$tmp/out" '"radius": 0.25' "scene.create shapes=@'my shapes, v2.json'"

# ---- @@file: a file's text as a JSON string (URDF and SRDF documents) -----------------
# arm7's active joints, in model.get's order: joint1..7 and finger_joint1
# (finger_joint2 mimics it).  READY is the SRDF's "ready" pose, clear of
# itself; joint4 = 0 is past its upper limit (-0.0698).
READY='[0, -0.785398163, 0, -2.35619449, 0, 1.570796327, 0.785398163, 0.02]'
LEFT='[-1.5, -0.785398163, 0, -2.35619449, 0, 1.570796327, 0.785398163, 0.02]'
RIGHT='[1.5, -0.785398163, 0, -2.35619449, 0, 1.570796327, 0.785398163, 0.02]'
NEAR_RIGHT='[0.8, -0.785398163, 0, -2.35619449, 0, 1.570796327, 0.785398163, 0.02]'
expect_code 0 "model.put urdf=@@ srdf=@@" -- "$CLI" "${S[@]}" model.put model=arm7 \
  urdf=@@"$DATA/arm7.urdf" srdf=@@"$DATA/arm7.srdf"
expect_grep "$tmp/out" '"model": "arm7"' "model.put from files"
expect_code 0 "model.get of the URDF model" -- "$CLI" "${S[@]}" model.get model=arm7
tr -d ' \n' <"$tmp/out" >"$tmp/out.flat"
expect_grep "$tmp/out.flat" '"joints":\["arm7_joint1","arm7_joint2","arm7_joint3","arm7_joint4","arm7_joint5","arm7_joint6","arm7_joint7","arm7_finger_joint1"\]' \
  "model.get lists the 8 active joints in order"
expect_code 0 "check at the ready pose" -- "$CLI" "${S[@]}" check model=arm7 joints="$READY"
expect_grep "$tmp/out" '"valid": true' "the ready pose is valid"
expect_grep "$tmp/out" '"kind": "self"' "the ready pose: closest pair is a self pair"
expect_code 0 "check by joint name" -- "$CLI" "${S[@]}" check model=arm7 \
  joints='{"arm7_joint4": 0}'
expect_grep "$tmp/out" '"valid": false' "joint4 = 0 is invalid"
expect_grep "$tmp/out" '"joint": "arm7_joint4"' "joint4 = 0 is past its limits"
expect_code 1 "check with 7 values" -- "$CLI" "${S[@]}" check model=arm7 \
  joints='[0, 0, 0, -1, 0, 1, 0]'
expect_grep "$tmp/err" '"path": "params.joints"' "7 values: the path names params.joints"
expect_grep "$tmp/err" 'must hold 8 values' "7 values: the reason gives the count"

# A ball where the hand is at the ready pose (model.fk says where) blocks
# the sweep of joint1 from LEFT to RIGHT, not the one from NEAR_RIGHT to RIGHT.
expect_code 0 "model.fk at the ready pose" -- "$CLI" "${S[@]}" model.fk model=arm7 joints="$READY"
hand=$(tr -d ' \n' <"$tmp/out" | sed -n 's/.*"arm7_hand":{"translation":\(\[[^]]*\]\).*/\1/p')
[[ $hand == \[0.3068* ]] && ok || fail "model.fk: arm7_hand at '$hand'"
expect_code 0 "scene with a ball at the hand" -- "$CLI" "${S[@]}" scene.create scene=bench \
  shapes="{\"ball\": {\"sphere\": {\"center\": $hand, \"radius\": 0.05}}}"
expect_code 0 "check at the ready pose against the ball" -- "$CLI" "${S[@]}" check model=arm7 \
  scene=bench joints="$READY"
expect_grep "$tmp/out" '"valid": false' "the hand hits the ball"
expect_grep "$tmp/out" '"other": "ball"' "the closest pair is with the ball"
for mode in discrete certified; do
  expect_code 0 "check.motion $mode through the ball" -- "$CLI" "${S[@]}" check.motion model=arm7 \
    scene=bench path="[$LEFT, $RIGHT]" mode=$mode
  tr -d ' \n' <"$tmp/out" >"$tmp/out.flat"
  expect_grep "$tmp/out.flat" '"valid":false,"first_invalid":{"segment":0,"t":0\.' \
    "check.motion $mode: blocked in segment 0"
  expect_grep "$tmp/out.flat" '"other":"ball","kind":"scene"' "check.motion $mode: by the ball"
  expect_code 0 "check.motion $mode beside the ball" -- "$CLI" "${S[@]}" check.motion model=arm7 \
    scene=bench path="[$NEAR_RIGHT, $RIGHT]" mode=$mode
  tr -d ' \n' <"$tmp/out" >"$tmp/out.flat"
  expect_grep "$tmp/out.flat" '"valid":true,"first_invalid":null' "check.motion $mode: clear"
done
expect_code 0 "check.motion with a resolution" -- "$CLI" "${S[@]}" check.motion model=arm7 \
  path="[$NEAR_RIGHT, $RIGHT]" resolution=0.1
expect_grep "$tmp/out" '"states_checked": ' "check.motion reports states_checked"

# @@ in PARAMS-JSON (a relative path), and in a line read from a pipe.
expect_code 0 "@@file in PARAMS-JSON" -- bash -c \
  "cd '$DATA' && '$CLI' --unix '$sock' model.put '{\"model\":\"arm7b\",\"urdf\":@@arm7.urdf,\"srdf\":@@arm7.srdf}'"
expect_grep "$tmp/out" '"model": "arm7b"' "model.put from PARAMS-JSON with @@"
expect_code 0 "@@file in a piped line" -- bash -c \
  "printf '%s\n' 'model.put model=arm7c urdf=@@$DATA/arm7.urdf' 'model.list' | '$CLI' --unix '$sock'"
expect_grep "$tmp/out" '"model": "arm7c"' "model.put from a piped line with @@"

# The text arrives exactly: quotes, a backslash, tabs, CR LF and UTF-8.
printf '<?xml version="1.0"?>\r\n<!-- "quoted" \\ back\tslash, caf\xc3\xa9 -->\n<robot name="r">\n\t<link name="b\xc3\xa4r"/>\n</robot>\n' \
  >"$tmp/odd.urdf"
expect_code 1 "@@file text with quotes, backslash, tabs and UTF-8" -- "$CLI" "${S[@]}" \
  model.put model=odd urdf=@@"$tmp/odd.urdf"
expect_grep "$tmp/err" '"path": "params.urdf.link\[#0\]"' "the daemon parsed the odd text"
expect_grep "$tmp/err" '^error -32602: Invalid params: params.urdf.link\[#0\] line 4: .*name="bär"' \
  "lines and the UTF-8 name came through as written"

# Refusals: exit 2, nothing sent.
expect_code 2 "@@file missing" -- "$CLI" "${S[@]}" model.put model=x urdf=@@"$tmp/none.urdf"
expect_file "$tmp/err" "repose-cli: @@$tmp/none.urdf: cannot read: No such file or directory" \
  "@@file missing message"
printf 'caf\xe9\n' >"$tmp/latin1.urdf"
expect_code 2 "@@file not UTF-8" -- "$CLI" "${S[@]}" model.put model=x urdf=@@"$tmp/latin1.urdf"
expect_file "$tmp/err" \
  "repose-cli: @@$tmp/latin1.urdf: not valid UTF-8 (byte 0xe9 at byte 3 of the file); JSON strings are UTF-8" \
  "@@file not UTF-8 message"
printf 'a\0b' >"$tmp/nul.urdf"
expect_code 2 "@@file with a NUL byte" -- "$CLI" "${S[@]}" model.put model=x urdf=@@"$tmp/nul.urdf"
expect_grep "$tmp/err" "holds a NUL byte (at byte 1)" "@@file with a NUL byte message"
expect_code 2 "@@ without a file name" -- "$CLI" "${S[@]}" model.put model=x urdf=@@
expect_file "$tmp/err" "repose-cli: 'urdf=@@': '@@' must be followed by a file name" \
  "@@ without a file name message"
expect_code 2 "@@ without a file name in PARAMS-JSON" -- "$CLI" "${S[@]}" model.put \
  '{"model":"x","urdf":@@}'
expect_code 2 "@@ of a directory" -- "$CLI" "${S[@]}" model.put model=x urdf=@@"$tmp"
expect_grep "$tmp/err" "cannot read: Is a directory" "@@ of a directory message"
expect_code 2 "@@file missing wins over no daemon" -- "$CLI" --unix "$tmp/none.sock" \
  model.put model=x urdf=@@"$tmp/none.urdf"
printf 'not xml' >"$tmp/bad.urdf"
expect_code 1 "a URDF the daemon refuses" -- "$CLI" "${S[@]}" model.put model=x urdf=@@"$tmp/bad.urdf"
expect_grep "$tmp/err" '"path": "params.urdf"' "the daemon's refusal names params.urdf"

# ---- lines from a pipe ------------------------------------------------------------------
expect_code 0 "lines from a pipe" -- bash -c "printf '%s\n' 'ping' '' '# a comment' \
  'scene.get {\"scene\":\"cell\",\"ids\":[\"post\"]}' '  hello' | '$CLI' --unix '$sock'"
if grep -q "repose>" "$tmp/out"; then fail "prompt printed when piped"; else ok; fi
expect_grep "$tmp/out" '"pong": true' "piped ping"
expect_grep "$tmp/out" '"post": {' "piped scene.get"
expect_grep "$tmp/out" '"server": "reposed"' "piped hello"
expect_code 1 "a failing line makes exit 1, later lines still run" -- bash -c \
  "printf '%s\n' 'scene.get {\"scene\":\"nope\"}' 'bad.params {oops' 'ping' | '$CLI' --unix '$sock'"
expect_grep "$tmp/err" "error -32001" "piped rpc error"
expect_grep "$tmp/err" "not valid JSON" "piped bad params"
expect_grep "$tmp/out" '"pong": true' "line after the failures ran"

# Errors name the input line (blank and comment lines count); KEY=VALUE
# words, JSON with blanks and `help` work in lines too.
printf '%s\n' 'ping' '' '# comment' 'scene.get scene=nope' 'scene.creat scene=x' \
  'scene.get kv' 'scene.put scene=kv shapes={"t": {"capsule": {"a": [0, 0, 0], "b": [1, 0, 0], "radius": 0.5}}}' \
  'scene.get {"scene": "kv", "ids": ["t"]}' 'help' >"$tmp/lines.in"
expect_code 1 "line numbers in errors" -- bash -c "'$CLI' --unix '$sock' <'$tmp/lines.in'"
expect_file "$tmp/err" "repose-cli: line 4: error -32001: Not found: scene 'nope'
data: {
  \"kind\": \"scene\",
  \"name\": \"nope\"
}
repose-cli: line 5: error -32601: Method not found: scene.creat
data: {
  \"method\": \"scene.creat\",
  \"suggestion\": \"scene.create\"
}
repose-cli: line 5: did you mean 'scene.create'?
repose-cli: line 6: 'kv' is not KEY=VALUE (params are one JSON object or KEY=VALUE words)" \
  "piped errors with line numbers"
expect_grep "$tmp/out" '"revision": 15' "key=value line with JSON blanks applied"
expect_grep "$tmp/out" '"b": \[1, 0, 0\],' "JSON-with-blanks line read back"
expect_grep "$tmp/out" '^  scene.remove$' "help in line mode"

# On a terminal: a prompt, help, and no line numbers (script(1) gives the CLI a pty).
if command -v script >/dev/null; then
  printf '%s\n' 'scene.get scene=nope' 'help' 'quit' >"$tmp/tty.in"
  expect_code 1 "interactive session (one call fails)" -- bash -c \
    "script -qec \"'$CLI' --unix '$sock'\" /dev/null <'$tmp/tty.in'"
  tr -d '\r' <"$tmp/out" >"$tmp/tty.out"
  # The pty echoes the typed lines, before or after the prompt depending on
  # when script(1) writes them, so the prompt and the error are looked for
  # separately: the error must start its line or follow the prompt directly.
  expect_grep "$tmp/tty.out" "^repose> " "tty prompt"
  expect_grep "$tmp/tty.out" "^\\(repose> \\)*error -32001: Not found: scene 'nope'" "tty error without a line number"
  expect_grep "$tmp/tty.out" "^  scene.distance$" "tty help lists methods"
  if grep -q "line [0-9]" "$tmp/tty.out"; then fail "line number on a terminal"; else ok; fi
else
  fail "script(1) (util-linux) not found: cannot test the interactive mode"
fi

# ---- --raw ----------------------------------------------------------------------------------
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"ping"}' \
  '{"jsonrpc":"2.0","method":"ping"}' \
  '[{"jsonrpc":"2.0","id":"b","method":"scene.get","params":{"scene":"nope"}}]' \
  'not json' >"$tmp/raw.in"
printf '{"jsonrpc":"2.0","id":9,"method":"ping"}' >>"$tmp/raw.in" # no final newline
expect_code 0 "--raw" -- bash -c "'$CLI' --unix '$sock' --raw <'$tmp/raw.in'"
expect_file "$tmp/out" '{"jsonrpc":"2.0","id":1,"result":{"pong":true}}
[{"jsonrpc":"2.0","id":"b","error":{"code":-32001,"message":"Not found: scene '"'"'nope'"'"'","data":{"kind":"scene","name":"nope"}}}]
{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte 0","data":{"offset":0}}}
{"jsonrpc":"2.0","id":9,"result":{"pong":true}}' "--raw output"
expect_code 0 "--raw over tcp" -- bash -c \
  "printf '%s\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}' | '$CLI' --port $port --raw"
expect_file "$tmp/out" '{"jsonrpc":"2.0","id":1,"result":{"pong":true}}' "--raw over tcp output"

# ---- watch: one line of JSON per notification ---------------------------------------------
# wait_for DESCRIPTION CMD...: retries CMD until it succeeds (a guard against
# hangs of 30 s, not a timing).
wait_for() {
  local what=$1
  shift
  for _ in $(seq 1 3000); do
    if "$@"; then ok; return 0; fi
    sleep 0.01
  done
  fail "$what: still not so after 30 s"
  return 1
}
lines_at_least() { [[ -f "$1" && $(wc -l <"$1") -ge $2 ]]; }
watches_are() { "$CLI" --unix "$sock" stats 2>/dev/null | grep -q "\"watches\": $1,"; }

start_daemon watch
W=(--unix "$sock")
expect_code 0 "watch: the scene" -- "$CLI" "${W[@]}" scene.create scene=w # revision 1
# A scene keeps its history from its first watch on (this one ends at once,
# with its connection): so --since 1 below gets every change after revision
# 1, however late the background watch starts.
expect_code 0 "watch: a first watch" -- "$CLI" "${W[@]}" scene.watch scene=w
"$CLI" "${W[@]}" watch w --since 1 >"$tmp/watch.out" 2>"$tmp/watch.err" &
wpid=$!
pids+=("$wpid")
expect_code 0 "watch: put" -- "$CLI" "${W[@]}" scene.put scene=w \
  'shapes={"b":{"sphere":{"center":[0,0,0],"radius":1}},"a":{"capsule":{"a":[0,0,0],"b":[0,0,1],"radius":0.25}}}'
expect_code 0 "watch: remove" -- "$CLI" "${W[@]}" scene.remove scene=w 'ids=["b","nope"]'
expect_code 0 "watch: replace" -- "$CLI" "${W[@]}" scene.replace scene=w \
  'shapes={"c":{"sphere":{"center":[1,2,3],"radius":0.5}}}'
wait_for "watch: three lines" lines_at_least "$tmp/watch.out" 3
kill -INT "$wpid"
wcode=0
wait "$wpid" || wcode=$?
[[ $wcode -eq 0 ]] && ok || fail "watch: exit $wcode after SIGINT, want 0"
expect_file "$tmp/watch.out" '{"jsonrpc":"2.0","method":"scene.changed","params":{"watch":2,"scene":"w","revision":2,"put":{"a":{"capsule":{"a":[0,0,0],"b":[0,0,1],"radius":0.25}},"b":{"sphere":{"center":[0,0,0],"radius":1}}},"removed":[]}}
{"jsonrpc":"2.0","method":"scene.changed","params":{"watch":2,"scene":"w","revision":3,"put":{},"removed":["b"]}}
{"jsonrpc":"2.0","method":"scene.changed","params":{"watch":2,"scene":"w","revision":4,"put":{"c":{"sphere":{"center":[1,2,3],"radius":0.5}}},"removed":["a"]}}' \
  "watch: one compact line per change, in order"
[[ ! -s "$tmp/watch.err" ]] && ok || fail "watch: wrote to stderr: $(cat "$tmp/watch.err")"
wait_for "watch: its watch ended with it" watches_are 0

# Without --since, from now on; the scene's deletion ends it with exit 0.
"$CLI" "${W[@]}" watch w >"$tmp/watch.out" 2>"$tmp/watch.err" &
wpid=$!
pids+=("$wpid")
wait_for "watch: watching" watches_are 1
expect_code 0 "watch: delete" -- "$CLI" "${W[@]}" scene.delete scene=w # revision 5
wcode=0
wait "$wpid" || wcode=$?
[[ $wcode -eq 0 ]] && ok || fail "watch: exit $wcode after scene.deleted, want 0"
expect_file "$tmp/watch.out" \
  '{"jsonrpc":"2.0","method":"scene.deleted","params":{"watch":3,"scene":"w","revision":5}}' \
  "watch: scene.deleted, then the end"

expect_code 1 "watch: a missing scene" -- "$CLI" "${W[@]}" watch w
expect_grep "$tmp/err" "error -32001" "watch: missing scene is -32001"
expect_code 2 "watch: no scene" -- "$CLI" "${W[@]}" watch
expect_code 2 "watch: bad --since" -- "$CLI" "${W[@]}" watch w --since -3
expect_grep "$tmp/err" "since" "watch: bad --since message"
expect_code 2 "watch: two scenes" -- "$CLI" "${W[@]}" watch w v
expect_code 0 "watch: --help mentions it" -- "$CLI" --help
expect_grep "$tmp/out" "watch SCENE \[--since R\]" "watch in the usage"

# METHOD lines: notifications of a watch opened in the lines are printed
# too (compact, between the replies), the last ones before the end.
printf '%s\n' 'scene.create scene=w2' 'scene.watch scene=w2' 'scene.put scene=w2 shapes={"z":{"sphere":{"center":[0,0,0],"radius":1}}}' \
  'scene.remove scene=w2 ids=["z"]' >"$tmp/lines.in"
expect_code 0 "lines: watch and mutate" -- sh -c '"$0" "$@" <"'"$tmp/lines.in"'"' "$CLI" "${W[@]}"
expect_grep "$tmp/out" '^{"jsonrpc":"2.0","method":"scene.changed","params":{"watch":[0-9]*,"scene":"w2","revision":[0-9]*,"put":{"z":' \
  "lines: the put's notification"
expect_grep "$tmp/out" '"put":{},"removed":\["z"\]}}$' "lines: the remove's notification"

# ---- token files ------------------------------------------------------------------------------
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$tmp/token"
chmod 600 "$tmp/token"
start_daemon authed --token-file "$tmp/token"
expect_code 0 "ping needs no token" -- "$CLI" --port "$port" ping
expect_code 1 "tcp without token" -- "$CLI" --port "$port" scene.list
expect_grep "$tmp/err" "error -32005" "tcp without token is -32005"
expect_code 0 "tcp with the token file" -- "$CLI" --port "$port" --token-file "$tmp/token" scene.list
expect_file "$tmp/out" $'{\n  "scenes": []\n}' "authed scene.list"
printf 'wrong\n' >"$tmp/wrong"
chmod 600 "$tmp/wrong"
expect_code 1 "wrong token" -- "$CLI" --port "$port" --token-file "$tmp/wrong" scene.list
expect_grep "$tmp/err" "auth failed" "wrong token message"
expect_code 0 "unix socket needs no token" -- "$CLI" --unix "$sock" scene.list
expect_code 0 "--raw after auth" -- bash -c "printf '%s\n' \
  '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.list\"}' | \
  '$CLI' --port $port --token-file '$tmp/token' --raw"
expect_file "$tmp/out" '{"jsonrpc":"2.0","id":1,"result":{"scenes":[]}}' "--raw after auth output"
# The token itself (--token), and the environment's token file over TCP.
expect_code 0 "--token" -- "$CLI" --port "$port" --token "$(head -1 "$tmp/token")" scene.list
expect_file "$tmp/out" $'{\n  "scenes": []\n}' "--token scene.list"
expect_code 1 "--token wrong" -- "$CLI" --port "$port" --token wrong scene.list
expect_grep "$tmp/err" "auth failed" "--token wrong message"
expect_code 2 "--token and --token-file" -- "$CLI" --port "$port" --token x --token-file "$tmp/token" ping
expect_code 0 "REPOSE_TOKEN_FILE over tcp" -- env REPOSE_TOKEN_FILE="$tmp/token" "$CLI" --port "$port" scene.list
expect_file "$tmp/out" $'{\n  "scenes": []\n}' "REPOSE_TOKEN_FILE scene.list"
expect_code 1 "--token-file wins over REPOSE_TOKEN_FILE" -- \
  env REPOSE_TOKEN_FILE="$tmp/token" "$CLI" --port "$port" --token-file "$tmp/wrong" scene.list
expect_code 2 "REPOSE_TOKEN_FILE missing over tcp" -- \
  env REPOSE_TOKEN_FILE="$tmp/nope" "$CLI" --port "$port" scene.list
expect_grep "$tmp/err" "token file $tmp/nope" "REPOSE_TOKEN_FILE missing message"
# Unix sockets need no auth: the environment's token file is not even read.
expect_code 0 "REPOSE_TOKEN_FILE ignored on unix" -- \
  env REPOSE_TOKEN_FILE="$tmp/nope" "$CLI" --unix "$sock" scene.list
chmod 644 "$tmp/token"
expect_code 2 "world-readable token file" -- "$CLI" --port "$port" --token-file "$tmp/token" ping
expect_grep "$tmp/err" "world-readable" "world-readable message"
expect_code 2 "missing token file" -- "$CLI" --port "$port" --token-file "$tmp/nope" ping
: >"$tmp/empty"
chmod 600 "$tmp/empty"
expect_code 2 "empty token file" -- "$CLI" --port "$port" --token-file "$tmp/empty" ping

# ---- REPOSE_SOCKET: the Unix socket when neither --unix nor --host is given ----------------
start_daemon envsock
expect_code 0 "REPOSE_SOCKET" -- env REPOSE_SOCKET="$sock" "$CLI" scene.create scene=via-env
expect_code 0 "REPOSE_SOCKET: the same daemon" -- "$CLI" --unix "$sock" scene.get scene=via-env
expect_code 3 "REPOSE_SOCKET names a missing socket" -- env REPOSE_SOCKET="$tmp/nope.sock" "$CLI" ping
expect_grep "$tmp/err" "unix:$tmp/nope.sock" "REPOSE_SOCKET missing: the path is named"
expect_code 0 "--unix wins over REPOSE_SOCKET" -- \
  env REPOSE_SOCKET="$tmp/nope.sock" "$CLI" --unix "$sock" ping
expect_code 0 "--port wins over REPOSE_SOCKET" -- \
  env REPOSE_SOCKET="$tmp/nope.sock" "$CLI" --port "$port" ping
expect_code 0 "REPOSE_SOCKET empty: the default" -- env REPOSE_SOCKET= "$CLI" --help
expect_grep "$tmp/out" 'default $REPOSE_SOCKET, else /tmp/reposed.sock' "--help names REPOSE_SOCKET"

# ---- objects: put, move (KEY=VALUE JSON), get, ignore, remove by name --------------------------
start_daemon objects
S=(--unix "$sock")
expect_code 0 "objects: scene.create with an object" -- "$CLI" "${S[@]}" scene.create scene=lab \
  shapes='{"post": {"capsule": {"a": [2, 0, 0], "b": [2, 0, 1], "radius": 0.25}}}' \
  objects='{"table": {"pose": {"translation": [1, 0, 0]}, "shapes": {"leg": {"capsule": {"a": [0, 0, 0], "b": [0, 0, 0.75], "radius": 0.0625}}}}}'
expect_file "$tmp/out" $'{\n  "scene": "lab",\n  "revision": 1\n}' "objects: created"
expect_code 0 "objects: scene.move" -- "$CLI" "${S[@]}" scene.move scene=lab \
  objects='{"table": {"translation": [0, 1, 0], "rotation": {"w": 0, "x": 0, "y": 0, "z": 1}}}' \
  if_revision=1
expect_file "$tmp/out" $'{\n  "scene": "lab",\n  "revision": 2\n}' "objects: moved"
expect_code 0 "objects: scene.get" -- "$CLI" "${S[@]}" scene.get scene=lab
expect_file "$tmp/out" '{
  "scene": "lab",
  "revision": 2,
  "shapes": {
    "post": {
      "capsule": {
        "a": [2, 0, 0],
        "b": [2, 0, 1],
        "radius": 0.25
      }
    }
  },
  "objects": {
    "table": {
      "pose": {
        "matrix": [
          [-1, 0, 0, 0],
          [0, -1, 0, 1],
          [0, 0, 1, 0]
        ]
      },
      "shapes": {
        "leg": {
          "capsule": {
            "a": [0, 0, 0],
            "b": [0, 0, 0.75],
            "radius": 0.0625
          }
        }
      }
    }
  }
}' "objects: scene.get shows the pose as a matrix"
expect_code 0 "objects: the world shape by id" -- "$CLI" "${S[@]}" scene.get scene=lab \
  ids='["table/leg"]'
tr -d ' \n' <"$tmp/out" >"$tmp/out.flat"
expect_grep "$tmp/out.flat" '"table/leg":{"capsule":{"a":\[0,1,0\],"b":\[0,1,0.75\]' \
  "objects: the leg in world coordinates"
expect_code 0 "objects: scene.distance with ignore" -- "$CLI" "${S[@]}" scene.distance scene=lab \
  shape='{"sphere": {"center": [0, 1, 0.5], "radius": 0.125}}' ignore='["table"]'
expect_grep "$tmp/out" '"shape": "post"' "objects: ignore leaves the table out"
# A move in a piped line (KEY=VALUE with blanks), then an unknown object.
expect_code 1 "objects: scene.move in lines" -- bash -c "printf '%s\n' \
  'scene.move scene=lab objects={\"table\": {\"matrix\": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]}}' \
  'scene.move scene=lab objects={\"chair\": {}}' | '$CLI' --unix '$sock'"
expect_grep "$tmp/out" '"revision": 3' "objects: moved from a line"
expect_grep "$tmp/err" "line 2: error -32001: Not found: object 'chair'" "objects: unknown object"
expect_grep "$tmp/err" '"kind": "object"' "objects: unknown object's kind"
expect_code 0 "objects: scene.remove by name" -- "$CLI" "${S[@]}" scene.remove scene=lab \
  ids='["table"]'
expect_grep "$tmp/out" '"removed": 1' "objects: removed by name"
expect_code 0 "objects: gone" -- "$CLI" "${S[@]}" scene.get scene=lab
if grep -q '"objects"' "$tmp/out"; then fail "objects: scene.get still lists objects"; else ok; fi

# ---- robot instances: a kinematic model put, two robots, moved by joints, read back ----------------
start_daemon robots
S=(--unix "$sock")
expect_code 0 "robots: model.put (kinematic JSON)" -- "$CLI" "${S[@]}" model.put model=arm2 \
  allow_adjacent=true \
  joints='[{"name": "j1", "type": "revolute", "parent": "base", "child": "l1", "origin": {"xyz": [0, 0, 0.25]}, "axis": [0, 0, 1], "limits": {"lower": -3, "upper": 3}},
           {"name": "j2", "type": "revolute", "parent": "l1", "child": "l2", "origin": {"xyz": [0.5, 0, 0]}, "axis": [0, 0, 1], "limits": {"lower": -2, "upper": 2}}]' \
  links='[{"id": "base#0", "link": "base", "shape": {"sphere": {"center": [0, 0, 0], "radius": 0.125}}},
          {"id": "l1#0", "link": "l1", "shape": {"capsule": {"a": [0, 0, 0], "b": [0.5, 0, 0], "radius": 0.0625}}}]'
expect_code 0 "robots: scene.create with two robots" -- "$CLI" "${S[@]}" scene.create scene=cell \
  robots='{"r1": {"model": "arm2", "base": {"translation": [0, -0.75, 0]}},
           "r2": {"model": "arm2", "joints": [0, 0], "base": {"translation": [0, 0.75, 0], "rotation": {"w": 0, "x": 0, "y": 0, "z": 1}}}}'
expect_file "$tmp/out" $'{\n  "scene": "cell",\n  "revision": 2\n}' "robots: created"
expect_code 0 "robots: scene.move by joints" -- "$CLI" "${S[@]}" scene.move scene=cell \
  robots='{"r1": {"joints": {"j2": -0.25}}}' if_revision=2
expect_file "$tmp/out" $'{\n  "scene": "cell",\n  "revision": 3\n}' "robots: moved"
expect_code 0 "robots: scene.get" -- "$CLI" "${S[@]}" scene.get scene=cell
expect_file "$tmp/out" '{
  "scene": "cell",
  "revision": 3,
  "shapes": {},
  "robots": {
    "r1": {
      "model": "arm2",
      "joints": [0, -0.25],
      "base": {
        "matrix": [
          [1, 0, 0, 0],
          [0, 1, 0, -0.75],
          [0, 0, 1, 0]
        ]
      }
    },
    "r2": {
      "model": "arm2",
      "joints": [0, 0],
      "base": {
        "matrix": [
          [-1, 0, 0, 0],
          [0, -1, 0, 0.75],
          [0, 0, 1, 0]
        ]
      }
    }
  }
}' "robots: scene.get shows joints and base"
expect_code 0 "robots: a world shape by id" -- "$CLI" "${S[@]}" scene.get scene=cell \
  ids='["r2/l1#0"]'
tr -d ' \n' <"$tmp/out" >"$tmp/out.flat"
expect_grep "$tmp/out.flat" '"r2/l1#0":{"capsule":{"a":\[0,0.75,0.25\],"b":\[-0.5,0.75,0.25\]' \
  "robots: r2's link in world coordinates"
expect_code 1 "robots: model.delete in use" -- "$CLI" "${S[@]}" model.delete model=arm2
expect_grep "$tmp/err" "error -32002: In use: model 'arm2' is used by robot 'r[12]' of scene 'cell'" \
  "robots: the model is in use"
expect_code 1 "robots: an unknown robot" -- "$CLI" "${S[@]}" scene.move scene=cell \
  robots='{"r9": {"joints": [0, 0]}}'
expect_grep "$tmp/err" "error -32001: Not found: robot 'r9'" "robots: unknown robot"
expect_code 0 "robots: scene.remove by name" -- "$CLI" "${S[@]}" scene.remove scene=cell \
  ids='["r1", "r2"]'
expect_grep "$tmp/out" '"removed": 2' "robots: removed by name"
expect_code 0 "robots: the model can go" -- "$CLI" "${S[@]}" model.delete model=arm2

# ---- point clouds: cloud put from a file and from stdin, get, query, ignore, remove -------------------
start_daemon clouds
S=(--unix "$sock")
# The points of proto/PROTOCOL.md's cloud example, with a comment, a blank
# line, tabs, a "\r\n" and a comment after the numbers.
printf '# a scan\n0.5 0 0.8\n\n  0.52\t0 0.8  \r\n0.9 0.1 0.8 # far\n' >"$tmp/scan.xyz"
expect_code 1 "clouds: no scene without --create" -- "$CLI" "${S[@]}" cloud put cell cam \
  "$tmp/scan.xyz" --radius 0.01
expect_grep "$tmp/err" "error -32001: Not found: scene 'cell'" "clouds: the missing scene"
expect_code 0 "clouds: cloud put --create" -- "$CLI" "${S[@]}" cloud put cell cam "$tmp/scan.xyz" \
  --radius 0.01 --voxel 0.05 --create
expect_file "$tmp/out" $'{\n  "scene": "cell",\n  "revision": 1\n}' "clouds: put as scene.put prints"
expect_code 0 "clouds: scene.get" -- "$CLI" "${S[@]}" scene.get scene=cell
# Two voxels: 0.5 and 0.52 share one (their centroid), 0.9 is alone.
expect_file "$tmp/out" '{
  "scene": "cell",
  "revision": 1,
  "shapes": {},
  "clouds": {
    "cam": {
      "radius": 0.01,
      "count": 2,
      "points_f32": "XI8CPwAAAADNzEw/ZmZmP83MzD3NzEw/"
    }
  }
}' "clouds: scene.get shows the voxels' centres as points_f32"
# The centres are float32 (0.51, 0, 0.8) and (0.9, 0.1, 0.8).
sed -n 's/.*"points_f32": "\(.*\)".*/\1/p' "$tmp/out" | base64 -d | od -An -v -t f4 -w12 |
  awk '{ printf "%.7g %.7g %.7g\n", $1, $2, $3 }' >"$tmp/centres"
expect_file "$tmp/centres" $'0.51 0 0.8\n0.9 0.1 0.8' "clouds: the centres decoded"
# From stdin, one sphere a point (no --voxel), beside a shape of the scene's own.
expect_code 0 "clouds: a shape of the scene's own" -- "$CLI" "${S[@]}" scene.put scene=cell \
  shapes='{"post": {"capsule": {"a": [2, 0, 0], "b": [2, 0, 1], "radius": 0.25}}}'
expect_code 0 "clouds: cloud put from stdin" -- bash -c \
  "'$CLI' --unix '$sock' cloud put cell cam - --radius 0.01 <'$tmp/scan.xyz'"
expect_file "$tmp/out" $'{\n  "scene": "cell",\n  "revision": 3\n}' "clouds: put from stdin"
expect_code 0 "clouds: a count of three" -- "$CLI" "${S[@]}" scene.get scene=cell
expect_grep "$tmp/out" '"count": 3,' "clouds: one sphere a point"
expect_code 0 "clouds: scene.distance hits a sphere" -- "$CLI" "${S[@]}" scene.distance scene=cell \
  shape='{"sphere": {"center": [0.9, 0.1, 0.9], "radius": 0.01}}'
expect_grep "$tmp/out" '"shape": "cam/[0-2]"' "clouds: the hit is named cam/k"
expect_code 0 "clouds: scene.distance with ignore" -- "$CLI" "${S[@]}" scene.distance scene=cell \
  shape='{"sphere": {"center": [0.9, 0.1, 0.9], "radius": 0.01}}' ignore='["cam"]'
expect_grep "$tmp/out" '"shape": "post"' "clouds: ignore leaves the cloud out"
# Usage errors: exit 2, nothing sent (even with no daemon).
printf '0 0 0\n1 1 1\n2 2\n' >"$tmp/short.xyz"
expect_code 2 "clouds: a line of two numbers" -- "$CLI" "${S[@]}" cloud put cell cam \
  "$tmp/short.xyz" --radius 0.01
expect_file "$tmp/err" "repose-cli: cloud put: $tmp/short.xyz: line 3: 2 numbers, not three (x y z)" \
  "clouds: the line is named"
expect_code 2 "clouds: a word that is not a number" -- bash -c \
  "printf '0 0 0\n1 1 x\n' | '$CLI' --unix '$sock' cloud put cell cam - --radius 0.01"
expect_grep "$tmp/err" "stdin: line 2: 'x' is not a number" "clouds: not a number"
expect_code 2 "clouds: beyond float32" -- bash -c \
  "printf '1e39 0 0\n' | '$CLI' --unix '$sock' cloud put cell cam - --radius 0.01"
expect_grep "$tmp/err" "line 1: '1e39' is beyond float32's range" "clouds: beyond float32"
expect_code 2 "clouds: no --radius" -- "$CLI" "${S[@]}" cloud put cell cam "$tmp/scan.xyz"
expect_grep "$tmp/err" "cloud put: --radius is needed" "clouds: --radius is needed"
expect_code 2 "clouds: a missing file" -- "$CLI" --unix "$tmp/none.sock" cloud put cell cam \
  "$tmp/none.xyz" --radius 0.01
expect_grep "$tmp/err" "cannot read $tmp/none.xyz: No such file or directory" "clouds: missing file"
expect_code 2 "clouds: an unknown command" -- "$CLI" "${S[@]}" cloud get cell cam
expect_grep "$tmp/err" "cloud: unknown command 'get'" "clouds: unknown command"
# The daemon's refusal: exit 1, nothing changed.
expect_code 1 "clouds: a negative radius" -- "$CLI" "${S[@]}" cloud put cell cam "$tmp/scan.xyz" \
  --radius -1
expect_grep "$tmp/err" '"path": "params.clouds.cam.radius"' "clouds: the radius's path"
expect_code 0 "clouds: nothing changed" -- "$CLI" "${S[@]}" scene.get scene=cell
expect_grep "$tmp/out" '"revision": 3,' "clouds: still at revision 3"
expect_code 0 "clouds: scene.remove by name" -- "$CLI" "${S[@]}" scene.remove scene=cell \
  ids='["cam"]'
expect_grep "$tmp/out" '"removed": 1' "clouds: removed by name"
expect_code 0 "clouds: gone" -- "$CLI" "${S[@]}" scene.get scene=cell
if grep -q '"clouds"' "$tmp/out"; then fail "clouds: scene.get still lists clouds"; else ok; fi
expect_code 0 "clouds: --help" -- "$CLI" --help
expect_grep "$tmp/out" "cloud put SCENE NAME FILE --radius R \[--voxel V\] \[--create\]" \
  "clouds: --help shows the command"

# ---- every example of --help runs, in order, against a fresh daemon -----------------------------
# (the files they name are made in a scratch directory: the test arm as
# arm.urdf/arm.srdf, one shape in shapes.json, three points in points.xyz)
start_daemon helpex
mkdir "$tmp/helpex"
cp "$DATA/arm7.urdf" "$tmp/helpex/arm.urdf"
cp "$DATA/arm7.srdf" "$tmp/helpex/arm.srdf"
printf '%s\n' '{"post":{"capsule":{"a":[0.6,0.2,0],"b":[0.6,0.2,0.8],"radius":0.04}}}' \
  >"$tmp/helpex/shapes.json"
printf '0.5 0 0.8\n0.52 0 0.8\n0.9 0.1 0.8\n' >"$tmp/helpex/points.xyz"
# The URDF-with-meshes examples name tests/data/mesh_arm, as from the repository's root.
mkdir "$tmp/helpex/tests" && ln -s "$DATA" "$tmp/helpex/tests/data"
"$CLI" --help >"$tmp/help.txt"
# The example lines (joined across trailing backslashes), one per line.
awk '/^  repose-cli / { cmd = $0; while (cmd ~ /\\$/ && (getline nxt) > 0) {
       sub(/\\$/, "", cmd); cmd = cmd nxt }; print cmd }' "$tmp/help.txt" >"$tmp/help.examples"
n_examples=$(wc -l <"$tmp/help.examples")
[[ $n_examples -ge 8 ]] || fail "--help: only $n_examples examples found"
grep -q "check model=arm" "$tmp/help.examples" || fail "--help has no check example"
while IFS= read -r ex; do
  expect_code 0 "--help example: $ex" -- \
    bash -c 'cd "$1" && export REPOSE_SOCKET="$2" && PATH="$(dirname "$3"):$PATH" && eval "$4"' \
    _ "$tmp/helpex" "$sock" "$CLI" "${ex#  }"
done <"$tmp/help.examples"
# The check example's joint vector fits the model the example loads.
expect_code 0 "--help check example answers" -- \
  bash -c 'cd "$1" && export REPOSE_SOCKET="$2" && PATH="$(dirname "$3"):$PATH" && eval "$4"' \
  _ "$tmp/helpex" "$sock" "$CLI" "$(grep 'check model=arm' "$tmp/help.examples")"
expect_grep "$tmp/out" '"valid": ' "--help check example: a verdict"

echo "test_cli: $checks checks passed, $failures failed"
[[ $failures -eq 0 ]]
