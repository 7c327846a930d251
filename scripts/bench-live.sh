#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Live shared scenes (issue 10): bench/live_bench through its own reposed on
# a temporary Unix socket:
#   move        scene.put of one shape then scene.distance, vs the query
#               alone, at 1k/10k/100k shapes (the cost of a change);
#   ping        ping p50/p99/max while another client's 100,000-configuration
#               check.batch (arm7, joint space) runs against 100k shapes;
#   throughput  check.batch configurations/s and scene.distance requests/s
#               from 16 clients, with --threads 1 and 2 when reposed has it;
#   watch       scene.watch fan-out to 100 watchers of 10,000 puts, when
#               reposed has scene.watch;
#   memory      bytes per shape at 100k shapes (stats and VmRSS).
# What each section does exactly: the comment at the top of live_bench.c.
#
# Builds in Release in build/release (or $BUILD_DIR), like bench-kin.sh,
# then runs the benchmark, which prints its tables.  Nothing is pinned and
# no figure is judged.  The full run takes a few minutes on 2 cores.
#
# Environment: BUILD_DIR; QUICK=1 for a smoke run (10k shapes, short
# windows: well under 20 s); JOBS: build parallelism (default: all CPUs);
# LIVE_ARGS: extra arguments for live_bench.  Arguments to this script go to
# live_bench too, e.g. `bash scripts/bench-live.sh --only move` or
# `--reposed /path/to/another/reposed`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-$ROOT/build/release}

echo "==> building (Release) in $BUILD_DIR" >&2
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc 2>/dev/null || echo 2)}" \
  --target reposed live_bench >/dev/null

LIVE=("$BUILD_DIR/bench/live_bench" --reposed "$BUILD_DIR/reposed")
if [[ ${QUICK:-0} == 1 ]]; then
  LIVE+=(--quick)
fi
# shellcheck disable=SC2206 # word splitting of the extra arguments is wanted
LIVE+=(${LIVE_ARGS:-} "$@")

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); $(cc --version | head -n 1)"
echo
echo "\$ ${LIVE[*]}"
"${LIVE[@]}"
