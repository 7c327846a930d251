# SPDX-License-Identifier: MIT
# What the repose-cli tests (test_cli.sh, test_cli_meshes.sh) share: the
# clean-up of $tmp and the daemons in $pids, and the counted checks.
# Sourced after $tmp and pids=() are set; the caller reports $failures and
# $checks at its end.

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { checks=$((checks + 1)); }

# expect_code WANT DESCRIPTION -- CMD...: runs CMD (stdout to $tmp/out,
# stderr to $tmp/err) and checks its exit code.
expect_code() {
  local want=$1 what=$2
  shift 3
  local got=0
  "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
  if [[ $got -ne $want ]]; then
    fail "$what: exit $got, want $want"
    sed 's/^/  stdout: /' "$tmp/out" >&2
    sed 's/^/  stderr: /' "$tmp/err" >&2
  else
    ok
  fi
}
