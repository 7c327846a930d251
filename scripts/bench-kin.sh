#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Joint-space benchmark of a 7-dof arm (tests/data/arm7.urdf + .srdf):
#   bench/kin_bench         in process: FK, FK + check (report first/closest),
#                           check.motion discrete (0.01 rad) vs certified;
#   bench/kin_socket_bench  through reposed on a temporary Unix socket:
#                           a 1000-configuration check.batch and check.motion
#                           requests, end to end.
# Scenes, robot and workload: bench/kin_common.h.
#
# Builds in Release in build/release (or $BUILD_DIR), like bench-load.sh,
# then runs both and prints their tables.  Nothing is pinned.
#
# Environment: BUILD_DIR; QUICK=1 for a smoke run (fewer configurations,
# passes and edges); KIN_ARGS / SOCKET_ARGS: extra arguments for each
# program (see the usage at the top of each .c file).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-$ROOT/build/release}

echo "==> building (Release) in $BUILD_DIR" >&2
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc 2>/dev/null || echo 2)" \
  --target reposed kin_bench kin_socket_bench >/dev/null

KIN=("$BUILD_DIR/bench/kin_bench")
SOCK=("$BUILD_DIR/bench/kin_socket_bench" --reposed "$BUILD_DIR/reposed")
if [[ ${QUICK:-0} == 1 ]]; then
  KIN+=(--quick)
  SOCK+=(--quick)
fi
# shellcheck disable=SC2206 # word splitting of the extra arguments is wanted
KIN+=(${KIN_ARGS:-})
# shellcheck disable=SC2206
SOCK+=(${SOCK_ARGS:-})

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); $(cc --version | head -n 1)"
echo
echo "\$ ${KIN[*]}"
"${KIN[@]}"
echo
echo "\$ ${SOCK[*]}"
"${SOCK[@]}"
