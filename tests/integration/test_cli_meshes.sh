#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A URDF with mesh files, from the command line, against the real daemon:
# `repose-cli model.put ... --urdf` (tests/data/mesh_arm found through
# --package-path, ROS_PACKAGE_PATH, the package's own directory; model.get
# shows a cover for every link; clear errors for what cannot be found) and
# repose-spherize's command line (--help, bad arguments, missing files;
# its output is compared with the daemon's spheres by test_spherize_tool.c).
#
# Usage: test_cli_meshes.sh PATH-TO-REPOSE-CLI PATH-TO-REPOSED PATH-TO-REPOSE-SPHERIZE
set -euo pipefail

CLI=$(realpath "$1")
REPOSED=$(realpath "$2")
SPHERIZE=$(realpath "$3")
DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)
PKG="$DATA/mesh_arm/mesh_arm_description"
URDF="$PKG/urdf/mesh_arm.urdf"
SRDF="$PKG/srdf/mesh_arm.srdf"
LINKS="base link1 link2 link3 link4 link5 link6 link7 tool"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/repose-cli-meshes.XXXXXX")
pids=()
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
# Only what a test sets: a user's ROS_PACKAGE_PATH would find packages.
unset ROS_PACKAGE_PATH

# expect_grep FILE PATTERN DESCRIPTION (a fixed string)
expect_grep() {
  if grep -qF -- "$2" "$1"; then ok; else
    fail "$3: '$2' not in"
    sed 's/^/  | /' "$1" >&2
  fi
}

start_daemon() {
  sock="$tmp/d.sock"
  "$REPOSED" --unix "$sock" --tcp none 2>"$tmp/d.log" &
  pids+=($!)
  for _ in $(seq 1 1000); do
    grep -q "listening on unix" "$tmp/d.log" && return 0
    sleep 0.01
  done
  echo "reposed did not start:" >&2
  cat "$tmp/d.log" >&2
  exit 1
}

# covers MODEL: model.get's mesh_covers as "link spheres triangles" lines.
covers() {
  "$CLI" --unix "$sock" model.get "model=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
for c in r.get("mesh_covers", []):
    print(c["link"], c["spheres"], c["triangles"])
'
}

# expect_all_covered MODEL DESCRIPTION: every link has a cover of 1..N spheres.
expect_all_covered() {
  covers "$1" >"$tmp/covers"
  local n
  n=$(wc -l <"$tmp/covers")
  [[ $n -eq 9 ]] && ok || fail "$2: $n covers, want 9"
  for l in $LINKS; do
    if awk -v l="$l" '$1 == l && $2 >= 1 && $3 >= 1000 { f = 1 } END { exit !f }' "$tmp/covers"
    then ok; else fail "$2: no cover for $l"; sed 's/^/  | /' "$tmp/covers" >&2; fi
  done
}

start_daemon
# (Covering mesh_arm takes seconds under the sanitizers: no per-call timeout.)
S=(--unix "$sock" --timeout 0)

# ---- model.put --urdf: the package found in each way ROS finds one -------------------
expect_code 0 "model.put --urdf --srdf --package-path" -- "$CLI" "${S[@]}" model.put \
  model=mesh_arm --urdf "$URDF" --srdf "$SRDF" --package-path "$DATA/mesh_arm"
expect_grep "$tmp/out" '"model": "mesh_arm"' "model.put result"
expect_all_covered mesh_arm "--package-path DIR (DIR/PKG/...)"
"$CLI" "${S[@]}" model.get model=mesh_arm >"$tmp/get"
expect_grep "$tmp/get" '"id": "link3#s0"' "the spheres are shapes LINK#sJ"
expect_grep "$tmp/get" '"tool#s0"' "the relative filename (../meshes/tool.stl) was sent"
# The SRDF's adjacent pairs reached the daemon.
expect_grep "$tmp/get" '"link6"' "allowed pairs"

# PARAMS-JSON with other params, the budget and the directory of the package itself.
expect_code 0 "model.put PARAMS-JSON --urdf, the package's own directory" -- \
  "$CLI" "${S[@]}" model.put '{"model":"m2","safety_margin":0.01}' --urdf "$URDF" \
  --package-path "$tmp/nothing-here" --package-path "$PKG" --max-spheres 3
expect_all_covered m2 "--package-path PKG-DIR"
covers m2 | awk '$2 > 3 { exit 1 }' && ok || fail "--max-spheres 3: a link got more"
"$CLI" "${S[@]}" model.get model=m2 >"$tmp/get"
expect_grep "$tmp/get" '"safety_margin": 0.01' "the other params are sent too"

expect_code 0 "ROS_PACKAGE_PATH" -- env ROS_PACKAGE_PATH="/nonexistent:$DATA/mesh_arm" \
  "$CLI" "${S[@]}" model.put model=m3 --urdf "$URDF" --max-overshoot 0.02
expect_all_covered m3 "ROS_PACKAGE_PATH"

# The URDF given by a relative path from another directory.
expect_code 0 "relative --urdf from elsewhere" -- bash -c \
  'cd "$1" && "$2" --unix "$3" model.put model=m4 --urdf mesh_arm_description/urdf/mesh_arm.urdf --package-path .' \
  _ "$DATA/mesh_arm" "$CLI" "$sock"
expect_all_covered m4 "relative paths"

# ---- what cannot be found: a clear message, exit 2, nothing sent --------------------
expect_code 2 "no package path" -- "$CLI" "${S[@]}" model.put model=bad --urdf "$URDF"
expect_grep "$tmp/err" "package://mesh_arm_description/meshes/base.stl (link base): not found" \
  "no package path: names the filename and the link"
expect_grep "$tmp/err" "no package path to search" "no package path: says why"
expect_code 2 "a package path without the package" -- "$CLI" "${S[@]}" model.put model=bad \
  --urdf "$URDF" --package-path "$tmp" --package-path /nonexistent
expect_grep "$tmp/err" "(link base): not found under $tmp, /nonexistent" \
  "wrong package path: lists the directories tried"
# A relative filename that is missing (the tool's mesh, in a copy without it).
mkdir -p "$tmp/copy/urdf"
cp "$URDF" "$tmp/copy/urdf/"
expect_code 2 "a missing relative mesh" -- "$CLI" "${S[@]}" model.put model=bad \
  --urdf "$tmp/copy/urdf/mesh_arm.urdf" --package-path "$DATA/mesh_arm"
expect_grep "$tmp/err" "../meshes/tool.stl (link tool): not found: $tmp/copy/urdf/../meshes/tool.stl" \
  "missing relative mesh: the path tried"
expect_code 2 "a missing URDF" -- "$CLI" "${S[@]}" model.put model=bad --urdf "$tmp/no.urdf"
expect_grep "$tmp/err" "cannot read the URDF $tmp/no.urdf" "missing URDF message"
expect_code 2 "files are read before connecting" -- "$CLI" --unix "$tmp/none.sock" model.put \
  model=bad --urdf "$URDF"
covers bad >/dev/null 2>&1 && fail "a refused model.put reached the daemon" || ok

# ---- bad flags: 2 ----------------------------------------------------------------------
expect_code 2 "--package-path without --urdf" -- "$CLI" "${S[@]}" model.put model=x \
  --package-path /tmp
expect_grep "$tmp/err" "go with --urdf FILE" "flags without --urdf"
expect_code 2 "--urdf without a value" -- "$CLI" "${S[@]}" model.put model=x --urdf
expect_code 2 "--max-spheres 0" -- "$CLI" "${S[@]}" model.put model=x --urdf "$URDF" \
  --max-spheres 0
expect_code 2 "--max-overshoot -1" -- "$CLI" "${S[@]}" model.put model=x --urdf "$URDF" \
  --max-overshoot -1
expect_code 2 "unknown flag" -- "$CLI" "${S[@]}" model.put model=x --urdf "$URDF" --meshes d
expect_grep "$tmp/err" "unknown flag '--meshes'" "unknown flag message"
expect_code 2 "urdf twice" -- "$CLI" "${S[@]}" model.put model=x urdf=@@"$URDF" --urdf "$URDF"
expect_grep "$tmp/err" 'params already hold "urdf"' "urdf twice message"

# The URDF as text without its files: the daemon asks for them, the CLI says how.
expect_code 1 "urdf=@@ with meshes" -- "$CLI" "${S[@]}" model.put model=x urdf=@@"$URDF"
expect_grep "$tmp/err" '"params.meshes"' "the daemon's path"
expect_grep "$tmp/err" "give it as --urdf FILE" "the CLI's hint"

# ---- repose-spherize's command line ------------------------------------------------------
expect_code 0 "spherize --help" -- "$SPHERIZE" --help
expect_grep "$tmp/out" "usage: repose-spherize ROBOT.urdf" "spherize --help text"
expect_code 0 "spherize --version" -- "$SPHERIZE" --version
expect_grep "$tmp/out" "repose-spherize " "spherize --version text"
expect_code 2 "spherize without arguments" -- "$SPHERIZE"
expect_grep "$tmp/err" "which URDF?" "spherize without arguments message"
expect_code 2 "spherize without -o" -- "$SPHERIZE" "$URDF"
expect_grep "$tmp/err" "-o OUT.urdf is required" "spherize without -o message"
expect_code 2 "spherize unknown option" -- "$SPHERIZE" "$URDF" -o "$tmp/o.urdf" --bogus
expect_grep "$tmp/err" "unknown option '--bogus'" "spherize unknown option message"
expect_code 2 "spherize two URDFs" -- "$SPHERIZE" "$URDF" "$URDF" -o "$tmp/o.urdf"
expect_code 2 "spherize bad --max-spheres" -- "$SPHERIZE" "$URDF" -o "$tmp/o.urdf" \
  --max-spheres 2000
expect_code 2 "spherize --package-path without a value" -- "$SPHERIZE" "$URDF" -o "$tmp/o.urdf" \
  --package-path
expect_code 2 "spherize a missing URDF" -- "$SPHERIZE" "$tmp/no.urdf" -o "$tmp/o.urdf"
expect_grep "$tmp/err" "cannot read the URDF $tmp/no.urdf" "spherize missing URDF message"
expect_code 2 "spherize a missing SRDF" -- "$SPHERIZE" "$URDF" --srdf "$tmp/no.srdf" \
  -o "$tmp/o.urdf" --package-path "$DATA/mesh_arm"
expect_code 2 "spherize without the package" -- "$SPHERIZE" "$URDF" -o "$tmp/o.urdf"
expect_grep "$tmp/err" "(link base): not found" "spherize missing mesh message"
[[ ! -e "$tmp/o.urdf" ]] && ok || fail "spherize wrote output after an error"
printf '<robot name="r"><link name="a"><collision><geometry><mesh filename="x.stl"/></geometry></collision></link></robot>\n' \
  >"$tmp/junk.urdf"
printf 'solid x\nthis is not an STL\n' >"$tmp/x.stl"
expect_code 1 "spherize a mesh the library cannot read" -- "$SPHERIZE" "$tmp/junk.urdf" \
  -o "$tmp/o.urdf"
expect_grep "$tmp/err" "link[a].collision[0].geometry.mesh" "spherize names the collision"
printf '<robot name="r"><link name="a"></robot>\n' >"$tmp/broken.urdf"
expect_code 1 "spherize a malformed URDF" -- "$SPHERIZE" "$tmp/broken.urdf" -o "$tmp/o.urdf"
expect_grep "$tmp/err" "malformed XML" "spherize malformed message"
expect_code 1 "spherize to a directory that does not exist" -- "$SPHERIZE" "$URDF" \
  --package-path "$DATA/mesh_arm" -o "$tmp/no/such/dir.urdf"
expect_grep "$tmp/err" "cannot write $tmp/no/such/dir.urdf" "spherize cannot write message"

# A run: a summary line per link on stderr, the output a URDF the daemon takes without files.
expect_code 0 "spherize mesh_arm" -- "$SPHERIZE" "$URDF" --srdf "$SRDF" \
  --package-path "$DATA/mesh_arm" -o "$tmp/spheres.urdf"
for l in $LINKS; do
  grep -qE "^$l +[0-9]+ spheres +[0-9]+ triangles +overshoot " "$tmp/err" && ok ||
    fail "spherize summary: no line for $l"
done
expect_grep "$tmp/err" "9 links covered" "spherize summary total"
if grep -q "<mesh" <(sed -n '/<collision>/,/<\/collision>/p' "$tmp/spheres.urdf"); then
  fail "spherize left a mesh collision"
else ok; fi
expect_grep "$tmp/spheres.urdf" '<mesh filename="package://mesh_arm_description/meshes/link3.dae"/>' \
  "spherize keeps the visuals"
expect_grep "$tmp/spheres.urdf" "<!-- collision: the same mesh -->" "spherize keeps comments"
expect_code 0 "the spherized URDF as text" -- "$CLI" "${S[@]}" model.put model=spheres \
  urdf=@@"$tmp/spheres.urdf" srdf=@@"$SRDF"
expect_code 0 "spherize to stdout" -- "$SPHERIZE" "$URDF" --package-path "$DATA/mesh_arm" -o -
cmp -s "$tmp/out" <(sed 's/x/x/' "$tmp/spheres.urdf") && ok || fail "spherize -o - differs from -o FILE"

echo "test_cli_meshes: $checks checks passed, $failures failed"
[[ $failures -eq 0 ]]
