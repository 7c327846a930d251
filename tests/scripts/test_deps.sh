#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/deps.sh's two package sets: `run` (scripts/run.sh) holds what
# building and running the daemon needs and nothing of the tests; `all`
# (scripts/test.sh) holds everything.  The project must configure for
# run.sh's build without what only `all` brings (cmocka, OMPL).
#   bash tests/scripts/test_deps.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$1
scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch"
fail() { echo "test_deps: FAIL: $*" >&2; exit 1; }

run_set=$(bash "$src/scripts/deps.sh" --list run | sort)
all_set=$(bash "$src/scripts/deps.sh" --list all | sort)
[[ $(bash "$src/scripts/deps.sh" --list | sort) == "$all_set" ]] || fail "no argument is not 'all'"

# run = the Dockerfile's build stage, which builds the same two programs.
docker_set=$(awk '/^FROM .* AS build/ { on = 1 } /^FROM / && !/AS build/ { on = 0 }
  on && /apt-get install/ { grab = 1 } grab { print; if ($0 !~ /\\$/) grab = 0 }' "$src/Dockerfile" |
  tr ' \\&' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]*$' |
  grep -vE '^(apt-get|install|rm|update|y|no-install-recommends)$' | sort -u)
[[ -n $docker_set ]] || fail "no package list in the Dockerfile's build stage"
[[ "$run_set" == "$docker_set" ]] ||
  fail "deps.sh run differs from the Dockerfile build stage:"$'\n'"$(diff <(echo "$run_set") <(echo "$docker_set"))"

for p in valgrind clang libclang-rt-14-dev libompl-dev python3-jsonschema libcmocka-dev \
  python3-numpy systemd curl; do
  grep -qx "$p" <<<"$run_set" && fail "deps.sh run installs the test-only package $p"
  grep -qx "$p" <<<"$all_set" || fail "deps.sh all lacks $p"
done
while read -r p; do
  grep -qx "$p" <<<"$all_set" || fail "deps.sh all lacks $p of the run set"
done <<<"$run_set"

# Who asks for what.
grep -qE '^bash scripts/deps.sh run$' "$src/scripts/run.sh" || fail "run.sh does not install the run set"
grep -qE '^bash scripts/deps.sh all$' "$src/scripts/test.sh" || fail "test.sh does not install everything"

# --dry-run on a machine with nothing installed: exactly the run set.
mkdir -p "$scratch/bin"
printf '#!/bin/sh\nexit 1\n' >"$scratch/bin/dpkg-query"
chmod +x "$scratch/bin/dpkg-query"
out=$(PATH="$scratch/bin:$PATH" bash "$src/scripts/deps.sh" --dry-run run)
[[ $out == "deps: would install $(bash "$src/scripts/deps.sh" --list run | tr '\n' ' ' | sed 's/ $//')" ]] ||
  fail "--dry-run run printed: $out"

# run.sh's configure, with pkg-config blind to cmocka and CMake to OMPL:
# what only the `all` set installs is not needed to build the daemon.
flags=$(sed -n '/^cmake -S \. -B build\/release/,/[^\\]$/p' "$src/scripts/run.sh" |
  tr -d '\\\n' | grep -oE -- '-D[A-Z_]+=[A-Za-z0-9]+' | tr '\n' ' ')
[[ $flags == *REPOSE_BUILD_TESTS=OFF* ]] || fail "run.sh's configure does not turn the tests off: $flags"
cat >"$scratch/bin/pkg-config" <<'PC'
#!/bin/sh
for a in "$@"; do case $a in *cmocka*) exit 1 ;; esac; done
exec /usr/bin/pkg-config "$@"
PC
chmod +x "$scratch/bin/pkg-config"
# shellcheck disable=SC2086
PKG_CONFIG="$scratch/bin/pkg-config" cmake -S "$src" -B "$scratch/build" $flags \
  -DCMAKE_DISABLE_FIND_PACKAGE_ompl=ON >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; fail "run.sh's configure needs more than the run set"; }
grep -q cmocka "$scratch/configure.log" && fail "the configure looked for cmocka"
echo "test_deps: ok (run: $(echo $run_set))"
