#!/usr/bin/env bash
# Compiles and runs every C example in README.md against the freshly built
# static libraries, so the documentation cannot drift from the API.  Client
# examples (marked "needs a running reposed") are compiled, not run.
# usage: run.sh SOURCE_DIR STATIC_LIB CLIENT_LIB SCRATCH_DIR   (CC and CFLAGS from env)
set -euo pipefail
src=$1 lib=$2 client=$3 scratch=$4
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
  if grep -q "needs a running reposed" "$f"; then
    ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -I"$src/include" "$f" "$client" \
      $(pkg-config --libs libcjson) -o "$exe"
    echo "(compiled; needs a daemon to run)"
    continue
  fi
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -I"$src/include" "$f" "$lib" -lm -o "$exe"
  "$exe" | tee "$exe.out"
  test -s "$exe.out"
done
echo "$count README examples compiled"
