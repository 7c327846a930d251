#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets in tests/fuzz with clang (in build/fuzz) and
# runs each for SECONDS seconds (default 60), one after the other.  Exits
# non-zero when any target finds a crash, a sanitizer report, a leak, a
# timeout or a broken invariant; the input that did it is left in
# build/fuzz/artifacts/<target>/ and the log in build/fuzz/logs/<target>.log.
# Prints the executions per target at the end.
#
#   bash scripts/fuzz.sh [SECONDS]
#
# Seeds: every line of proto/examples/*.jsonl (and, for the request path,
# every transcript's requests as one input), generated into
# build/fuzz/seeds/ (not for fuzz_cli_params, fuzz_sd_env and fuzz_urdf,
# whose inputs are not JSON lines); for fuzz_urdf the robot in tests/data;
# plus tests/fuzz/seeds/<target>/ and tests/fuzz/regressions/<target>/
# (inputs that once failed, replayed first).
# New interesting inputs accumulate in build/fuzz/corpus/<target>/.
#
# Needs clang with libFuzzer (Debian: clang libclang-rt-14-dev); when they
# are there it installs nothing, otherwise it runs scripts/deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
case $secs in
'' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
dir=build/fuzz
targets=(fuzz_framer fuzz_prescan fuzz_codec fuzz_request fuzz_client_reply fuzz_cli_params
         fuzz_sd_env fuzz_urdf fuzz_numbers fuzz_journal fuzz_snapshot fuzz_estimates fuzz_geometry
         fuzz_base64 fuzz_mesh fuzz_http)

# ---- clang and libFuzzer ------------------------------------------------------
have_libfuzzer() {
  command -v clang >/dev/null 2>&1 || return 1
  local tmp
  tmp=$(mktemp -d)
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
    >"$tmp/probe.c"
  local ok=0
  clang -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null || ok=1
  rm -rf "$tmp"
  return $ok
}
if ! have_libfuzzer; then
  echo "fuzz: clang with libFuzzer not found; installing the build dependencies"
  bash scripts/deps.sh
  have_libfuzzer || { echo "fuzz: clang -fsanitize=fuzzer still does not link" >&2; exit 1; }
fi

# ---- build ---------------------------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
echo "==> configure $dir (clang, -fsanitize=fuzzer,address,undefined, warnings as errors)"
CC=clang cmake -S . -B "$dir" -DREPOSE_FUZZ=ON -DREPOSE_WERROR=ON -DREPOSE_BUILD_TESTS=OFF \
  -DREPOSE_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "==> build $dir"
cmake --build "$dir" --target fuzz -j "$jobs"

# ---- seeds from the protocol transcripts ----------------------------------------
seeds=$dir/seeds
rm -rf "$seeds"
mkdir -p "$seeds/lines" "$seeds/files" "$seeds/framer"
for f in proto/examples/*.jsonl; do
  base=$(basename "$f" .jsonl)
  n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    [ -n "$line" ] && printf '%s' "$line" >"$seeds/lines/$base-$n"
  done <"$f"
  # The requests of a transcript as one input (expected replies dropped:
  # the server would only call them invalid requests).
  grep -v -E '^\[?\{"jsonrpc":"2\.0","id":[^,]*,"(result|error)"' "$f" >"$seeds/files/$base" || true
  # The framer reads two control bytes first: max_line, then the chunking.
  for ctl in '\100\001' '\020\007' '\376\041'; do
    { printf "$ctl"; cat "$f"; } >"$seeds/framer/$base-${ctl//\\/}"
  done
done

# The URDF reader: the test robot, alone and with its SRDF after a NUL.
mkdir -p "$seeds/urdf"
cp tests/data/arm7.urdf "$seeds/urdf/arm7"
{ cat tests/data/arm7.urdf; printf '\0'; cat tests/data/arm7.srdf; } >"$seeds/urdf/arm7-with-srdf"

# ---- run ------------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$dir/logs"
declare -A execs
failed=()
# One target: its arguments, inputs and run; its exit status goes to
# $dir/logs/<target>.rc.
run_target() {
  local t=$1
  local args=(-max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$dir/artifacts/$t/")
  local inputs=("$dir/corpus/$t")
  case $t in
  fuzz_framer) args+=(-max_len=4096); inputs+=("$seeds/framer") ;;
  fuzz_request) args+=(-max_len=8192 -dict=tests/fuzz/json.dict)
                inputs+=("$seeds/lines" "$seeds/files") ;;
  # Its seeds are tests/fuzz/seeds/fuzz_cli_params (command words and lines).
  fuzz_cli_params) args+=(-max_len=4096 -dict=tests/fuzz/json.dict) ;;
  fuzz_sd_env) args+=(-max_len=1024 -dict=tests/fuzz/sd.dict) ;;
  # URDF (NUL) SRDF documents; its seeds hold tests/data/arm7 (18 KB).
  fuzz_urdf) args+=(-max_len=20480 -dict=tests/fuzz/xml.dict); inputs+=("$seeds/urdf") ;;
  # Bytes read as a model, an extension and a motion: no dictionary.
  fuzz_estimates) args+=(-max_len=2048); inputs+=("$seeds/lines") ;;
  # Bytes read as doubles for four shapes: short inputs, its own seeds.
  fuzz_geometry) args+=(-max_len=256) ;;
  # Base64 text (and bytes): its own seeds.
  fuzz_base64) args+=(-max_len=1024) ;;
  # A format byte and a mesh file (STL, OBJ, Collada): its own seeds.
  fuzz_mesh) args+=(-max_len=8192 -dict=tests/fuzz/xml.dict) ;;
  # HTTP requests on a real connection (first byte: token and pieces); its seeds.
  fuzz_http) args+=(-max_len=4096 -dict=tests/fuzz/http.dict) ;;
  *) args+=(-max_len=4096 -dict=tests/fuzz/json.dict); inputs+=("$seeds/lines") ;;
  esac
  for extra in tests/fuzz/seeds/$t tests/fuzz/regressions/$t; do
    [ -d "$extra" ] && inputs+=("$extra")
  done
  mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
  local rc=0
  "$dir/tests/fuzz/$t" "${args[@]}" "${inputs[@]}" >"$dir/logs/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$dir/logs/$t.rc"
}

# As many targets at once as there are cores (each libFuzzer process is
# single-threaded): on CI's two cores the fourteen take seven rounds.
running=0
for t in "${targets[@]}"; do
  echo "==> $t for ${secs}s (log: $dir/logs/$t.log)"
  rm -f "$dir/logs/$t.rc"
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
for t in "${targets[@]}"; do
  log=$dir/logs/$t.log
  rc=$(cat "$dir/logs/$t.rc" 2>/dev/null || echo 1)
  execs[$t]=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -n 1)
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "!!! $t failed (exit $rc); the end of its log:"
    tail -n 60 "$log"
    ls "$dir/artifacts/$t" 2>/dev/null | sed "s|^|    input: $dir/artifacts/$t/|"
  fi
done

echo "==> executions per target (${secs}s each)"
for t in "${targets[@]}"; do
  printf '  %-18s %12s\n' "$t" "${execs[$t]:-?}"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "==> fuzzing found problems in: ${failed[*]}"
  exit 1
fi
echo "==> no findings"
