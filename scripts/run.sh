#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs reposed in the foreground on its defaults: TCP on
# 127.0.0.1:7411 and the Unix socket /tmp/reposed.sock, scenes in memory.
# Also builds repose-cli (build/release/repose-cli), which the README's
# examples use.  Extra arguments go to reposed (see `reposed --help`).
# Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Only what building and running the daemon needs (no test tools, no OMPL,
# no fuzzers): scripts/test.sh installs the rest.
bash scripts/deps.sh run
echo "run.sh: configuring build/release"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DREPOSE_BUILD_TESTS=OFF \
  -DREPOSE_BUILD_BENCH=OFF
echo "run.sh: building reposed and repose-cli"
cmake --build build/release -j "$(nproc 2>/dev/null || echo 2)" --target reposed repose-cli
cat >&2 <<MSG
run.sh: built $PWD/build/release/reposed and $PWD/build/release/repose-cli
run.sh: in another terminal, put repose-cli on your PATH for the README's examples:
run.sh:   export PATH="$PWD/build/release:\$PATH"
run.sh:   repose-cli ping
run.sh: starting reposed (Ctrl-C stops it)
MSG
exec build/release/reposed "$@"
