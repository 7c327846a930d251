#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per configuration for every per-configuration row of
# bench/kin_bench, counted by valgrind's callgrind (no timer noise, so two
# builds can be compared row by row).
#
# Usage: scripts/bench-callgrind.sh [options] KIN_BENCH [DATA_DIR]
#   KIN_BENCH   a built kin_bench (e.g. build/release/bench/kin_bench)
#   DATA_DIR    where arm7.urdf/.srdf are (default: this source tree's
#               tests/data)
# Options:
#   -n N                  configurations per row (default 300; $CONFIGS)
#   --configs-for 'ROW=N' N configurations for the row named exactly ROW
#                         (repeatable; split at the last '='), for slow rows
#   --rows-from FILE      measure the rows named in FILE (one a line) instead
#                         of all of kin_bench's rows
#   --tsv                 print a TSV table instead of markdown
#   --keep DIR            keep the callgrind out files (and logs) in DIR
#
# How: `kin_bench --no-motion --quick` runs once, natively, and its table
# ("ns per configuration") gives the row names; the "sketch" rows (they run
# in sketch_pass, not run_pass) and "random first (clear)" (it runs on the
# clear configurations only, not on N) are skipped.  Each row then runs
# alone under
#   valgrind --tool=callgrind --toggle-collect='run_pass*' \
#     kin_bench --no-motion --configs N --passes 1 --only '=ROW'
# (--only with a leading '=' selects the row named exactly ROW).  Only
# run_pass is collected: kin_bench calls it once untimed (warm-up) and once
# per --passes pass, each over all N configurations (the batch rows call it
# the same way, 32 configurations a library call), so the collected Ir is
# divided by N x 2.  The pattern has a '*' because GCC may clone the
# noinline run_pass (run_pass.constprop.0, ...): an exact 'run_pass' then
# misses the rows that go through a clone and counts 0 for them.
# Each run's output must contain exactly the selected row, or the script
# stops.  REPOSE_SIMD is passed through as it is (the header line says
# which); unset it for the library's default level.  Valgrind is ~50x
# slower than native: the closest rows against 10k shapes are the slow ones.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
configs=${CONFIGS:-300}
format=md
keep=
rows_from=
declare -A row_configs=()

die() {
  echo "bench-callgrind: $*" >&2
  exit 1
}

while (($#)); do
  case $1 in
    -n)
      (($# >= 2)) || die "-n needs a value"
      configs=$2
      shift 2
      ;;
    --configs-for)
      (($# >= 2)) || die "--configs-for needs ROW=N"
      [[ $2 == *=* ]] || die "--configs-for needs ROW=N: $2"
      row_configs["${2%=*}"]=${2##*=}
      shift 2
      ;;
    --rows-from)
      (($# >= 2)) || die "--rows-from needs a file"
      rows_from=$2
      shift 2
      ;;
    --tsv)
      format=tsv
      shift
      ;;
    --keep)
      (($# >= 2)) || die "--keep needs a directory"
      keep=$2
      shift 2
      ;;
    -h | --help)
      sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    --)
      shift
      break
      ;;
    -*) die "unknown option: $1 (see --help)" ;;
    *) break ;;
  esac
done
(($# >= 1 && $# <= 2)) || die "usage: $0 [options] KIN_BENCH [DATA_DIR] (see --help)"
bench=$1
data=${2:-$ROOT/tests/data}
[[ -x $bench ]] || die "not an executable: $bench"
[[ -f $data/arm7.urdf ]] || die "no arm7.urdf in $data"
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_count "$configs" || die "bad -n: $configs"
for r in "${!row_configs[@]}"; do
  is_count "${row_configs[$r]}" || die "bad count for '$r': ${row_configs[$r]}"
done
command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"

if [[ -n $keep ]]; then
  mkdir -p "$keep"
  work=$keep
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

# Row names from a kin_bench table on stdin: the lines after the header
# "ns per configuration" up to the first blank line.  A row is
# "  NAME  median min max [coll%]": median/min/max are %.0f (no '.') and
# coll% is %.1f (always a '.'), so a last field with a '.' means four
# numeric fields, else three.  Counting them (rather than stripping every
# trailing number) keeps the "32" of "..., batches of 32".
table_rows() {
  awk '
    /^[[:space:]]*ns per configuration/ { on = 1; next }
    !on { next }
    /^[[:space:]]*$/ { exit }
    {
      line = $0
      sub(/^[[:space:]]+/, "", line)
      sub(/[[:space:]]+$/, "", line)
      k = (line ~ /\.[0-9]+$/) ? 4 : 3
      for (i = 0; i < k; i++) {
        if (!match(line, /[[:space:]]+-?([0-9]+(\.[0-9]*)?|nan|inf)$/)) { k = -1; break }
        line = substr(line, 1, RSTART - 1)
      }
      if (k < 0 || line == "") next        # not a row (e.g. the sketch note)
      print line
    }'
}

if [[ -n $rows_from ]]; then
  mapfile -t rows < <(grep -v '^[[:space:]]*$' "$rows_from")
else
  "$bench" --data "$data" --no-motion --quick >"$work/quick.txt" ||
    die "kin_bench --no-motion --quick failed"
  mapfile -t all < <(table_rows <"$work/quick.txt")
  rows=()
  for r in "${all[@]}"; do
    [[ $r == sketch* || $r == "random first (clear)" ]] && continue
    rows+=("$r")
  done
fi
((${#rows[@]})) || die "no rows found"

# The collected Ir of a callgrind out file: its "totals:" line, or else its
# "summary:" line (first event: Ir, callgrind's default).
collected_ir() {
  awk '/^totals:/ { t = $2 } /^summary:/ { s = $2 }
       END { if (t != "") print t; else if (s != "") print s; else exit 1 }' "$1"
}

echo "kin_bench: $bench; data: $data; REPOSE_SIMD=${REPOSE_SIMD-unset (default)};" \
  "$(valgrind --version); configurations per row: $configs" \
  "(run_pass calls per row: 2 = warm-up + --passes 1)" >&2

results=()
i=0
for row in "${rows[@]}"; do
  i=$((i + 1))
  n=${row_configs[$row]:-$configs}
  out=$work/callgrind.$i.out
  log=$work/run.$i
  t0=$SECONDS
  if ! valgrind --tool=callgrind --toggle-collect='run_pass*' --callgrind-out-file="$out" \
    "$bench" --data "$data" --no-motion --configs "$n" --passes 1 --only "=$row" \
    >"$log.stdout" 2>"$log.stderr"; then
    cat "$log.stderr" >&2
    die "valgrind failed on row '$row'"
  fi
  # Exactly the selected row must have run (so run_pass ran twice).
  got=$(table_rows <"$log.stdout")
  [[ $got == "$row" ]] || die "row '$row': kin_bench ran [${got//$'\n'/; }] (see $log.stdout)"
  ir=$(collected_ir "$out") || die "row '$row': no totals in $out"
  [[ $ir =~ ^[0-9]+$ && $ir -gt 0 ]] || die "row '$row': collected Ir is '$ir' (run_pass not seen?)"
  calls=2
  per=$(awk -v ir="$ir" -v n="$n" -v c="$calls" 'BEGIN { printf "%.1f", ir / (n * c) }')
  echo "  [$i/${#rows[@]}] $row: N=$n, Ir=$ir, $per Ir/config ($((SECONDS - t0)) s)" >&2
  results+=("$row"$'\t'"$n"$'\t'"$calls"$'\t'"$ir"$'\t'"$per")
done

if [[ $format == tsv ]]; then
  printf 'row\tconfigs\trun_pass calls\tIr collected\tIr per configuration\n'
  printf '%s\n' "${results[@]}"
else
  echo "| row | configs | run_pass calls | Ir collected | Ir per configuration |"
  echo "|---|---:|---:|---:|---:|"
  for r in "${results[@]}"; do
    IFS=$'\t' read -r name n calls ir per <<<"$r"
    echo "| ${name//|/\\|} | $n | $calls | $ir | $per |"
  done
fi
