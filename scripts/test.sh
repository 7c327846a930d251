#!/usr/bin/env bash
# Sets up and runs every test: installs the Debian packages if missing, then
# builds and runs the suite twice — warnings as errors, then under
# AddressSanitizer + UndefinedBehaviorSanitizer.  Build trees go to build/.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh

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

echo "==> all test suites passed"
