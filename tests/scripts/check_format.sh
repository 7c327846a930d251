#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The house style: every C source and header git tracks is as clang-format
# (version 14, the one Debian 12 ships) writes it with the repository's
# .clang-format.  Prints the files that differ and fails; `bash
# tests/scripts/check_format.sh --fix` rewrites them instead.
# Usage: check_format.sh [--fix] [REPO]
set -euo pipefail
fix=false
[[ ${1:-} == --fix ]] && { fix=true; shift; }
repo=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$repo"
fmt=$(command -v clang-format-14 || command -v clang-format || true)
[[ -n $fmt ]] || { echo "SKIP: clang-format-14 not installed (scripts/deps.sh installs it)"; exit 77; }
"$fmt" --version | grep -q "version 14\." ||
  { echo "SKIP: $("$fmt" --version) is not clang-format 14, whose output .clang-format pins"; exit 77; }
mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v '^tests/fuzz/regressions/')
if $fix; then
  "$fmt" -i --style=file "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$fmt" --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'not in the house style (.clang-format): %s\n' "${bad[@]}" >&2
  echo "fix with: bash tests/scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "ok: ${#files[@]} files in the house style"
