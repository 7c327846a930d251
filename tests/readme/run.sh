#!/usr/bin/env bash
# Compiles and runs every C example in README.md against the freshly built
# static library, so the documentation cannot drift from the API.
# usage: run.sh SOURCE_DIR STATIC_LIB SCRATCH_DIR   (CC and CFLAGS from env)
set -euo pipefail
src=$1 lib=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
awk -v dir="$scratch" '
  /^```c$/ { on = 1; n++; file = sprintf("%s/readme_example_%d.c", dir, n); next }
  /^```/   { on = 0; next }
  on       { print > file }' "$src/README.md"
count=$(find "$scratch" -name 'readme_example_*.c' | wc -l)
[ "$count" -ge 1 ] || { echo "no C example found in README.md"; exit 1; }
for f in "$scratch"/readme_example_*.c; do
  exe=${f%.c}
  echo "== $(basename "$f")"
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -I"$src/include" "$f" "$lib" -lm -o "$exe"
  "$exe" | tee "$exe.out"
  test -s "$exe.out"
done
echo "$count README examples compiled and ran"
