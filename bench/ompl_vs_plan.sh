#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# OMPL over the socket against `plan` in the daemon, on the planning
# benchmark's problems (bench/plan_bench.c: the test arm in the 20-box
# cell, 20 seeded problems).  For each problem and edge mode, the OMPL
# example (examples/ompl/plan_arm: RRTConnect, a `check` per state and a
# `check.motion` per edge through the C client) solves it, then asks the
# daemon to `plan` the same problem; both times include their round trips.
# Twice: "raw", neither simplifies its path, and "simplified", OMPL's
# simplifySolution (timed with the solve) against `plan`'s simplify.
# Prints the medians and the median of the per-problem ratios.
#
#   bash bench/ompl_vs_plan.sh [BUILD_DIR]      (default build/release)
#
# Needs the OMPL example (libompl-dev) built in BUILD_DIR.  Figures only.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
arm=$build/examples/ompl/plan_arm
[[ -x $arm ]] || { echo "no $arm (is libompl-dev installed?)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$build/bench/plan_bench" --dump "$tmp" >/dev/null
"$build/reposed" --unix "$tmp/s.sock" --tcp none 2>"$tmp/log" &
pid=$!
for _ in $(seq 100); do [[ -S $tmp/s.sock ]] && break; sleep 0.05; done

for simplify in raw simplified; do
for mode in certified discrete; do
  : >"$tmp/rows"
  k=0
  flag=()
  [[ $simplify == simplified ]] && flag=(--simplify)
  while read -r start goal; do
    k=$((k + 1))
    out=$("$arm" --unix "$tmp/s.sock" --mode "$mode" --time 5 --seed "$k" --cell "$tmp/cell.json" \
          --start "$start" --goal "$goal" "${flag[@]}" 2>&1) || true
    ompl=$(sed -n 's/.*RRTConnect solved in \([0-9.]*\) s.*/\1/p' <<<"$out")
    all=$(sed -n 's/^simplified in .* s in all$/&/p' <<<"$out" | sed -n 's/.*: \([0-9.]*\) s in all/\1/p')
    [[ -n $all ]] && ompl=$all
    plan=$(sed -n 's/^reposed plan: solved in \([0-9.]*\) s.*/\1/p' <<<"$out")
    if [[ -n $ompl && -n $plan ]]; then
      echo "$ompl $plan" >>"$tmp/rows"
    else
      echo "  problem $k ($mode): not solved by both: $(tail -n 1 <<<"$out")"
    fi
  done <"$tmp/problems.txt"
  python3 - "$mode $simplify" "$tmp/rows" <<'PY'
import statistics, sys
mode, path = sys.argv[1], sys.argv[2]
rows = [tuple(map(float, l.split())) for l in open(path) if l.strip()]
if not rows:
    sys.exit(f"{mode}: no problem solved by both")
ompl = [r[0] * 1e3 for r in rows]
plan = [r[1] * 1e3 for r in rows]
ratio = [o / p for o, p in zip(ompl, plan) if p > 0]
print(f"{mode:20s} {len(rows)} problems: OMPL over the socket median {statistics.median(ompl):.2f} ms, "
      f"plan median {statistics.median(plan):.2f} ms; OMPL/plan median of ratios "
      f"{statistics.median(ratio):.1f}x (min {min(ratio):.1f}, max {max(ratio):.1f})")
PY
done
done
