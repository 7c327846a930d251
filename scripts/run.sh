#!/usr/bin/env bash
# Sets up, builds and runs reposed in the foreground on its defaults: TCP on
# 127.0.0.1:7411 and the Unix socket /tmp/reposed.sock, scenes in memory.
# Extra arguments go to reposed (see `reposed --help`).  Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DREPOSE_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc 2>/dev/null || echo 2)" --target reposed >/dev/null
exec build/release/reposed "$@"
