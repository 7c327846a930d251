#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs plan_arm against a reposed of its own (a temporary Unix socket, named
# by REPOSE_SOCKET as a user would):
#  - the test arm: discrete edges, certified edges, the trivial checker;
#  - a planner while another client sends `check` all along, and two
#    planners at once (each counts its own calls; the daemon's stats count
#    every client's);
#  - a three-joint planar arm written here (--urdf, no SRDF), with start and
#    goal derived from its limits, then given with --start/--goal;
#  - argument errors: a start of the wrong length, --start without --goal.
#   bash examples/ompl/run_example.sh PATH-TO-REPOSED PATH-TO-PLAN_ARM
set -euo pipefail
reposed=$1
plan=$2
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "run_example: FAIL: $*" >&2; exit 1; }
${REPOSE_DAEMON_WRAPPER:-} "$reposed" --unix "$tmp/sock" --tcp none >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 400); do grep -q ready "$tmp/log" && break; sleep 0.05; done
export REPOSE_SOCKET=$tmp/sock

for mode in discrete certified; do
  "$plan" --mode "$mode" --seed 7
done
"$plan" --trivial --seed 7

# Another client sending `check` on the same daemon all along a plan: the
# daemon-wide counts then exceed the planner's own, which must not fail it.
here=$(cd "$(dirname "$0")" && pwd)
PYTHONPATH="$here/../../python" python3 - "$tmp" <<'PY' &
import os, sys, repose
tmp = sys.argv[1]
c = repose.Client()
q = [0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0, 0.02]
n = 0
while not os.path.exists(os.path.join(tmp, "stop")):
    with c.pipeline() as p:
        for _ in range(20):
            p.check("ompl-arm", scene="ompl-cell", joints=q)
    n += 20
    if n == 200:
        open(os.path.join(tmp, "busy"), "w").close()
PY
busy=$!
for _ in $(seq 400); do [[ -e $tmp/busy ]] && break; sleep 0.05; done
[[ -e $tmp/busy ]] || fail "the busy client did not start"
"$plan" --seed 3 >"$tmp/busy.out" 2>&1 || { cat "$tmp/busy.out"; fail "a planner next to a busy client"; }
touch "$tmp/stop"
wait "$busy" || fail "the busy client failed"
cat "$tmp/busy.out"
grep -q "fine discrete check of the plan .*: valid" "$tmp/busy.out" || fail "plan next to a busy client not valid"
# The daemon saw more check requests than this planner sent.
own=$(sed -n 's/^validity: \([0-9]*\) check .*/\1/p' "$tmp/busy.out")
all=$(sed -n 's/^daemon counted \([0-9]*\) check .*/\1/p' "$tmp/busy.out")
[[ -n $own && -n $all && $all -gt $own ]] || fail "the busy client's checks were not counted ($own, $all)"
echo "run_example: a planner next to a busy client: ok ($own own check calls, $all in all)"

# --simplify: OMPL simplifies its path through the same checkers (their
# calls counted with the solve's), and `plan` simplifies its own.
"$plan" --simplify --seed 3 >"$tmp/simp.out" 2>&1 || { cat "$tmp/simp.out"; fail "--simplify"; }
grep -q "^simplified in [0-9.]* s to [0-9]* waypoints" "$tmp/simp.out" ||
  { cat "$tmp/simp.out"; fail "--simplify did not simplify"; }
grep -q "fine discrete check of the plan .*: valid" "$tmp/simp.out" || fail "simplified plan not valid"
grep -q "^reposed plan: solved .*fine check valid" "$tmp/simp.out" || fail "plan with simplify not valid"
echo "run_example: --simplify: ok"

# Two planners on one daemon: each must succeed although the daemon-wide
# request counts include the other's calls.
"$plan" --seed 3 >"$tmp/a.out" 2>&1 &
a=$!
"$plan" --seed 4 >"$tmp/b.out" 2>&1 &
b=$!
wait "$a" || { cat "$tmp/a.out"; fail "the first of two concurrent planners failed"; }
wait "$b" || { cat "$tmp/b.out"; fail "the second of two concurrent planners failed"; }
grep -q "fine discrete check of the plan .*: valid" "$tmp/a.out" || fail "first plan not valid"
grep -q "fine discrete check of the plan .*: valid" "$tmp/b.out" || fail "second plan not valid"
echo "run_example: two planners at once: ok"

# A planar arm of three revolute joints (z axes), one cylinder per link: not
# the 8-joint test arm.  Straight out (all joints 0) it goes through the
# post at x = 0.65; the derived start and goal swing it to either side, and
# the plan must fold it past the post.
cat >"$tmp/planar.urdf" <<'URDF'
<?xml version="1.0"?>
<robot name="planar3">
  <link name="base"/>
  <link name="l1"><collision><origin xyz="0.15 0 0" rpy="0 1.5707963 0"/>
    <geometry><cylinder radius="0.03" length="0.2"/></geometry></collision></link>
  <link name="l2"><collision><origin xyz="0.15 0 0" rpy="0 1.5707963 0"/>
    <geometry><cylinder radius="0.03" length="0.2"/></geometry></collision></link>
  <link name="l3"><collision><origin xyz="0.15 0 0" rpy="0 1.5707963 0"/>
    <geometry><cylinder radius="0.03" length="0.2"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/><limit lower="-2.6" upper="2.6" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/><limit lower="-2.0" upper="2.0" effort="1" velocity="1"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/><limit lower="-2.0" upper="2.0" effort="1" velocity="1"/></joint>
</robot>
URDF
"$plan" --urdf "$tmp/planar.urdf" --seed 5 >"$tmp/planar.out" 2>&1 ||
  { cat "$tmp/planar.out"; fail "the planar arm with a derived start and goal"; }
cat "$tmp/planar.out"
grep -q "^3 joints; start \[1.04, 0, 0\], goal \[-1.04, 0, 0\]" "$tmp/planar.out" ||
  fail "the planar arm's start and goal are not derived from its limits"
grep -q "fine discrete check of the plan .*: valid" "$tmp/planar.out" || fail "planar plan not valid"
"$plan" --urdf "$tmp/planar.urdf" --start '[1.5, -0.5, 0.5]' --goal '[-1.5, 0.5, -0.5]' \
  --seed 6 >"$tmp/given.out" 2>&1 || { cat "$tmp/given.out"; fail "the planar arm with --start/--goal"; }
grep -q "^3 joints; start \[1.5, -0.5, 0.5\], goal \[-1.5, 0.5, -0.5\]" "$tmp/given.out" ||
  fail "--start/--goal not used"

# --cell: the scene of a file, under its own name (here one that swallows
# the arm, so the start is in collision), and a file that is no scene.
echo '{"scene":"engulfed","create":true,"shapes":{"blob":{"sphere":{"center":[0,0,0.5],"radius":5}}}}' \
  >"$tmp/cell.json"
code=0
"$plan" --cell "$tmp/cell.json" >"$tmp/cell.out" 2>&1 || code=$?
[[ $code -eq 1 ]] && grep -q "the start is in collision" "$tmp/cell.out" ||
  { cat "$tmp/cell.out"; fail "--cell: exit $code"; }
echo '{"shapes":{}}' >"$tmp/nocell.json"
code=0
"$plan" --cell "$tmp/nocell.json" >"$tmp/cell.out" 2>&1 || code=$?
[[ $code -eq 2 ]] || { cat "$tmp/cell.out"; fail "--cell without a scene name: exit $code"; }

# Wrong arguments: exit 2 with a message naming the problem.
code=0
"$plan" --start '[0, 0]' --goal '[0, 0]' >"$tmp/err.out" 2>&1 || code=$?
[[ $code -eq 2 ]] && grep -q "the model has 8 joints; --start has 2 values" "$tmp/err.out" ||
  { cat "$tmp/err.out"; fail "a start of the wrong length: exit $code"; }
code=0
"$plan" --start '[0, 0]' >"$tmp/err.out" 2>&1 || code=$?
[[ $code -eq 2 ]] || fail "--start without --goal: exit $code"
echo "run_example: ok"
