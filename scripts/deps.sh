#!/usr/bin/env bash
# Installs what repose needs to build and test on Debian 12 (bookworm).
# Runs apt-get directly as root, through sudo otherwise; does nothing when
# every package is already installed.
set -euo pipefail

packages=(build-essential cmake pkg-config libuv1-dev libcjson-dev libexpat1-dev libcmocka-dev valgrind python3 python3-jsonschema systemd curl
  python3-numpy python3-venv python3-pip python3-setuptools # the Python client (python/)
  libompl-dev # examples/ompl (built only when found)
  clang libclang-rt-14-dev) # clang and libFuzzer: scripts/fuzz.sh

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
echo "deps: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
