#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the OMPL example outside the repository's build, as a planner
# project would: installs repose from a build tree into a scratch prefix,
# configures examples/ompl on its own with CMAKE_PREFIX_PATH=<prefix>
# (find_package(repose), cJSON through pkg-config, Debian's boost
# workaround in examples/ompl/CMakeLists.txt), builds plan_arm, and plans
# once with it against the reposed of that build tree.
#
#   CC=<cc> bash examples/ompl/build_outside.sh <repose binary dir> <scratch dir>
# The scratch dir is wiped.
set -euo pipefail
die() { echo "build_outside: FAIL: $*" >&2; exit 1; }
[[ $# -eq 2 && -n $1 && -n $2 ]] || die "usage: $0 <repose binary dir> <scratch dir>"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd)
cache=$bin/CMakeCache.txt
[[ -f $cache ]] || die "$cache not found"
scratch=$2
[[ $scratch = /* ]] || scratch=$PWD/$scratch
case ${scratch%/} in "" | / | "$HOME" | "$bin" | "$here") die "refusing to wipe '$scratch'" ;; esac
cmake_bin=$(sed -n 's/^CMAKE_COMMAND:INTERNAL=//p' "$cache")
[[ -n $cmake_bin && -x $cmake_bin ]] || cmake_bin=cmake
# A sanitized build installs instrumented libraries: build with the same.
flags=
if grep -Eiq '^REPOSE_SANITIZE:BOOL=(ON|TRUE|YES|Y|1)$' "$cache"; then
  flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
elif grep -Eiq '^REPOSE_TSAN:BOOL=(ON|TRUE|YES|Y|1)$' "$cache"; then
  flags="-fsanitize=thread"
fi

rm -rf "$scratch"
mkdir -p "$scratch"
"$cmake_bin" --install "$bin" --prefix "$scratch/prefix" >"$scratch/install.log"
# Only the source directory and the installed prefix: nothing of the
# repository's build tree is visible to this configure.
"$cmake_bin" -S "$here" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DCMAKE_C_COMPILER="${CC:-cc}" >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; die "configure"; }
grep -q "repose package: $scratch/prefix" "$scratch/configure.log" ||
  { cat "$scratch/configure.log"; die "the installed repose package was not the one found"; }
"$cmake_bin" --build "$scratch/build" >"$scratch/build.log" 2>&1 ||
  { cat "$scratch/build.log"; die "build"; }
exe=$scratch/build/plan_arm
[[ -x $exe ]] || die "no plan_arm built"
# It links the installed client library, not the build tree's.
libdir=$(dirname "$(find "$scratch/prefix" -name 'librepose_client.so.0' | head -1)")
loaded=$(ldd "$exe") # not piped into grep -q: pipefail would see ldd's SIGPIPE
[[ $loaded == *"librepose_client.so.0 => $libdir/"* ]] ||
  { echo "$loaded"; die "plan_arm does not load $libdir/librepose_client.so.0"; }

"$bin/reposed" --unix "$scratch/sock" --tcp none >"$scratch/reposed.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 400); do grep -q ready "$scratch/reposed.log" && break; sleep 0.05; done
"$exe" --unix "$scratch/sock" --seed 7 | tee "$scratch/plan.out"
grep -q "fine discrete check of the plan .*: valid" "$scratch/plan.out" || die "the plan is not valid"
echo "build_outside: ok"
