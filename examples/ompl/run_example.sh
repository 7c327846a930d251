#!/usr/bin/env bash
# Runs plan_arm against a reposed of its own (a temporary Unix socket):
# discrete edges, certified edges, and the trivial checker for comparison.
#   bash examples/ompl/run_example.sh PATH-TO-REPOSED PATH-TO-PLAN_ARM
set -euo pipefail
reposed=$1
plan=$2
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
${REPOSE_DAEMON_WRAPPER:-} "$reposed" --unix "$tmp/sock" --tcp none >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 400); do grep -q ready "$tmp/log" && break; sleep 0.05; done
for mode in discrete certified; do
  "$plan" --unix "$tmp/sock" --mode "$mode" --seed 7
done
"$plan" --unix "$tmp/sock" --trivial --seed 7
