#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up and runs every test: installs the Debian packages if missing, then
# builds and runs the suite twice — warnings as errors, then under
# AddressSanitizer + UndefinedBehaviorSanitizer — and the daemon tests a
# third time under ThreadSanitizer.  Build trees go to build/.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh all

jobs=$(nproc 2>/dev/null || echo 2)

run_suite() {
  local dir=$1; shift
  echo "==> configure $dir ($*)"
  cmake -S . -B "$dir" -DREPOSE_WERROR=ON "$@"
  cmake --build "$dir" -j "$jobs"
  echo "==> test $dir"
  (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

run_suite build/werror -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build/sanitize -DCMAKE_BUILD_TYPE=Debug -DREPOSE_SANITIZE=ON

# ThreadSanitizer: queries run on worker threads against store snapshots
# while the event loop applies mutations (docs/ARCHITECTURE.md, Threads and versions), and check.batch is
# split across helper threads.  Only the daemon and the daemon test programs
# are built (the daemon_tests target), and only the daemon tests run, with
# the valgrind ones left out (valgrind cannot run TSan binaries; CMake does
# not register them here).  No -Werror: the warnings were checked above, and
# TSan's -O1 brings a few false -Wformat-truncation ones.  No suppressions:
# libuv's thread pool hands work over with pthread mutexes and condition
# variables, which TSan intercepts, and it has reported nothing inside
# libuv or glibc.  Every report is also written to build/tsan/reports
# (daemons log to temporary directories that the tests remove), and any
# report fails the stage even where an exit status went unchecked.
# About 100 s on 2 cores (build 25 s; hardening, daemon_watch and
# daemon_concurrency take 30, 30 and 17 s of it).
tsan=build/tsan
echo "==> configure $tsan (ThreadSanitizer, daemon tests only)"
cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPOSE_TSAN=ON -DREPOSE_WERROR=OFF \
  -DREPOSE_BUILD_BENCH=OFF
cmake --build "$tsan" -j "$jobs" --target daemon_tests
echo "==> test $tsan"
reports="$PWD/$tsan/reports"
rm -rf "$reports" && mkdir -p "$reports"
tsan_failed=0
(cd "$tsan" && TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$reports/tsan" \
  ctest --output-on-failure -j "$jobs" -R '^(transcripts|hardening|daemon_.*)$' -E valgrind) ||
  tsan_failed=1
if compgen -G "$reports/tsan.*" >/dev/null; then
  echo "==> ThreadSanitizer reports:"
  cat "$reports"/tsan.*
  tsan_failed=1
fi
[ "$tsan_failed" -eq 0 ] || { echo "==> ThreadSanitizer stage failed"; exit 1; }

echo "==> all test suites passed"
