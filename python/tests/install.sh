#!/usr/bin/env bash
# Installs the Python client from the repository as the README says, offline
# (a venv that sees the system's setuptools; pip --no-index), into a scratch
# directory, then runs `python -m repose ping` against a real reposed.
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
# A copy, so that the build leaves nothing in the source tree.
cp -r "$root/python" "$tmp/src"
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-index --no-build-isolation "$tmp/src"
"$reposed" --unix "$tmp/sock" --tcp none >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q ready "$tmp/log" && break; sleep 0.05; done
out=$(cd "$tmp" && "$tmp/venv/bin/python" -m repose --unix "$tmp/sock" ping)
want=$'{\n  "pong": true\n}'
if [[ "$out" != "$want" ]]; then
  echo "install.sh: python -m repose ping printed: $out" >&2
  exit 1
fi
# The installed package, not the source tree, answered.
where=$(cd "$tmp" && "$tmp/venv/bin/python" -c 'import repose; print(repose.__file__)')
[[ "$where" == "$tmp/venv/"* ]] || { echo "install.sh: repose imported from $where" >&2; exit 1; }
echo "install.sh: ok ($where)"
