#!/usr/bin/env bash
# Compiles and runs the C example in README.md against the freshly built
# static library, so the documentation cannot drift from the API.
# usage: run.sh SOURCE_DIR STATIC_LIB SCRATCH_DIR   (CC and CFLAGS from env)
set -euo pipefail
src=$1 lib=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
awk '/^```c$/ {on=1; next} /^```/ {if (on) exit} on' "$src/README.md" > "$scratch/readme_example.c"
test -s "$scratch/readme_example.c" || { echo "no C example found in README.md"; exit 1; }
${CC:-cc} -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -I"$src/include" \
  "$scratch/readme_example.c" "$lib" -lm -o "$scratch/readme_example"
"$scratch/readme_example" | tee "$scratch/out.txt"
grep -q "^forearm-post: " "$scratch/out.txt"
