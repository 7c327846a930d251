#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 (bookworm) packages repose needs, for one purpose:
#
#   bash scripts/deps.sh run    building and running reposed and repose-cli
#                               (scripts/run.sh): compilers, cmake, libuv,
#                               cJSON, expat, nats.c, assimp, SLEEF,
#                               libwebsockets; about what the Dockerfile's
#                               build stage installs
#   bash scripts/deps.sh [all]  everything: the above, and what the tests,
#                               the Python client, the OMPL example and the
#                               fuzzers need (scripts/test.sh, scripts/fuzz.sh)
#
# --list prints the packages of that set, one per line, and installs
# nothing; --dry-run prints what would be installed.  Runs apt-get directly
# as root, through sudo otherwise; does nothing when every package is
# already installed.
set -euo pipefail

run_packages=(build-essential cmake pkg-config libuv1-dev libcjson-dev libexpat1-dev
  libnats-dev # replicas (--nats): the nats.c client
  libassimp-dev # URDF <mesh> files (src/mesh): STL, OBJ, Collada
  libsleef-dev # forward kinematics' deterministic vector sin/cos (src/scene/simd.c)
  libwebsockets-dev) # --http (src/server/http): HTTP on the daemon's libuv loop
test_packages=(libcmocka-dev valgrind python3 python3-jsonschema systemd curl
  python3-yaml # tests/scripts/test_docker.sh reads examples/compose.yaml
  python3-numpy python3-venv python3-pip # the Python client (python/) and its tests
  libompl-dev # examples/ompl (built only when found)
  clang libclang-rt-14-dev # clang and libFuzzer: scripts/fuzz.sh
  clang-format-14 # the house style, .clang-format (tests/scripts/check_format.sh)
  nats-server # the replicas' tests start real NATS servers (test_daemon_replicas)
  python3-prometheus-client # /metrics read by a real Prometheus parser (test_http_metrics)
  chromium chromium-driver python3-selenium fonts-liberation) # the viewer in a real browser (test_viewer)

list=false dry=false set=all
for a in "$@"; do
  case $a in
    --list) list=true ;;
    --dry-run) dry=true ;;
    run | all) set=$a ;;
    *) echo "usage: bash scripts/deps.sh [--list | --dry-run] [run | all]" >&2; exit 2 ;;
  esac
done
packages=("${run_packages[@]}")
[[ $set == all ]] && packages+=("${test_packages[@]}")
if $list; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if $dry; then
  echo "deps: would install ${missing[*]}"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
echo "deps: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
