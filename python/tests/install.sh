#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Python client from the repository as the README says, offline
# (pip --no-index), into plain venvs in a scratch directory, then runs
# `python -m repose ping` against a real reposed:
#   - a bare venv with no setuptools and no wheel (what Python 3.12+ makes;
#     here setuptools is removed from it), `pip install ./python`;
#   - the same venv, `pip install -e ./python` (editable: imports the source);
#   - no install at all: PYTHONPATH=python.
# Each Python in $REPOSE_TEST_PYTHONS (space-separated paths) gets the first
# two as well, e.g. REPOSE_TEST_PYTHONS="$(ls ~/.pyenv/versions/*/bin/python3)".
#   bash python/tests/install.sh PATH-TO-REPOSED
set -euo pipefail
reposed=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
if ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "install.sh: python3-venv is not installed; skipped" >&2
  exit 77
fi
fail() { echo "install.sh: $*" >&2; exit 1; }
# A copy, so that the build leaves nothing in the source tree.
cp -r "$root/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
"$reposed" --unix "$tmp/sock" --tcp none >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q ready "$tmp/log" && break; sleep 0.05; done
want=$'{\n  "pong": true\n}'

# ping_with PYTHON WHERE: python -m repose ping must answer, and `import
# repose` must come from under WHERE.
ping_with() {
  local py=$1 where=$2 out file
  out=$(cd "$tmp" && REPOSE_SOCKET="$tmp/sock" "$py" -m repose ping) ||
    fail "$py -m repose ping failed"
  [[ "$out" == "$want" ]] || fail "$py -m repose ping printed: $out"
  file=$(cd "$tmp" && "$py" -c 'import repose; print(repose.__file__)')
  [[ "$file" == "$where"/* ]] || fail "$py: repose imported from $file, not under $where"
}

n=0
for py in /usr/bin/python3 ${REPOSE_TEST_PYTHONS:-}; do
  n=$((n + 1))
  venv=$tmp/venv$n
  "$py" -m venv "$venv"
  # No setuptools and no wheel, as in a 3.12+ venv or a conda/pyenv Python.
  "$venv/bin/python" -m pip uninstall -y -q setuptools wheel >/dev/null 2>&1 || true
  if "$venv/bin/python" -c 'import setuptools' 2>/dev/null ||
    "$venv/bin/python" -c 'import wheel' 2>/dev/null; then
    fail "$py: the venv still has setuptools or wheel"
  fi
  version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  "$venv/bin/pip" install -q --no-index "$tmp/src" || fail "$py ($version): pip install failed"
  ping_with "$venv/bin/python" "$venv"
  "$venv/bin/pip" uninstall -y -q repose
  "$venv/bin/pip" install -q --no-index -e "$tmp/src" || fail "$py ($version): pip install -e failed"
  ping_with "$venv/bin/python" "$tmp/src/repose"
  echo "install.sh: Python $version ($py): pip install and pip install -e in a bare venv: ok"
done
# Without pip: the source directory on PYTHONPATH.
out=$(cd "$tmp" && PYTHONPATH="$tmp/src" /usr/bin/python3 -m repose --unix "$tmp/sock" ping)
[[ "$out" == "$want" ]] || fail "PYTHONPATH=python: python -m repose ping printed: $out"
# The build wrote nothing into the package's directory but what pip keeps.
leftover=$(cd "$tmp/src" && find . -name '*.egg-info' -o -name build -o -name '*.whl')
[[ -z $leftover ]] || fail "the build left files in the source: $leftover"
echo "install.sh: ok"
