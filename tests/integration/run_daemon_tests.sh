#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs the protocol transcripts and every daemon test program against one
# reposed binary, one program after another (daemon_valgrind runs this with
# REPOSE_DAEMON_WRAPPER set, so every daemon runs under valgrind).
#
# Usage: run_daemon_tests.sh REPOSED EXAMPLES-DIR TEST_TRANSCRIPTS [PROGRAM ...]
#
# Every program runs even when an earlier one fails; the exit status is 1 if
# any failed, and the failed ones are named at the end.
set -u
if [ $# -lt 3 ]; then
    echo "usage: $0 REPOSED EXAMPLES-DIR TEST_TRANSCRIPTS [PROGRAM ...]" >&2
    exit 2
fi
reposed=$1
examples=$2
transcripts=$3
shift 3

failed=
echo "== $(basename "$transcripts")"
"$transcripts" "$reposed" "$examples" || failed="$failed $(basename "$transcripts")"
for prog in "$@"; do
    echo "== $(basename "$prog")"
    "$prog" "$reposed" || failed="$failed $(basename "$prog")"
done
if [ -n "$failed" ]; then
    echo "FAILED:$failed" >&2
    exit 1
fi
exit 0
