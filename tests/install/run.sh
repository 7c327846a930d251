#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install test: installs repose from a build tree into a scratch prefix,
# checks that the shared libraries export exactly the RP_API functions of the
# installed headers (nm -D), then builds and runs tests/install/consumer.c
# against the installed copy twice:
#   (a) with `pkg-config --cflags --libs repose`
#   (b) with CMake `find_package(repose REQUIRED)` + repose::repose
#       (the stand-alone consumer project tests/install/CMakeLists.txt).
#
# Usage: CC=<compiler> bash tests/install/run.sh <repose binary dir> <scratch dir>
# The scratch dir is wiped.  When the build tree was configured with
# REPOSE_SANITIZE=ON (REPOSE_TSAN=ON) the installed library is ASan/UBSan-
# (TSan-) instrumented, so the consumer is built with the same sanitizers.
set -euo pipefail

die() { echo "run.sh: FAIL: $*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }
run() { printf '+'; printf ' %q' "$@"; printf '\n'; "$@"; }

[[ $# -eq 2 ]] || die "usage: CC=<cc> bash $0 <repose binary dir> <scratch dir>"
[[ -n "$1" && -n "$2" ]] || die "empty argument"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(cd "$1" && pwd)" || die "binary dir '$1' does not exist"
cache="$bin/CMakeCache.txt"
[[ -f "$cache" ]] || die "$cache not found: '$1' is not a configured build tree"

scratch="$2"
[[ "$scratch" = /* ]] || scratch="$PWD/$scratch"
case "${scratch%/}" in
    "" | / | "$HOME" | "$bin" | "$here") die "refusing to wipe scratch dir '$scratch'" ;;
esac

cc="${CC:-cc}"
# Use the cmake that configured the build tree when it is recorded.
cmake_bin="$(sed -n 's/^CMAKE_COMMAND:INTERNAL=//p' "$cache")"
[[ -n "$cmake_bin" && -x "$cmake_bin" ]] || cmake_bin="cmake"

san_flags=()
if grep -Eiq '^REPOSE_SANITIZE:BOOL=(ON|TRUE|YES|Y|1)$' "$cache"; then
    san_flags=("-fsanitize=address,undefined" -fno-sanitize-recover=all -fno-omit-frame-pointer)
elif grep -Eiq '^REPOSE_TSAN:BOOL=(ON|TRUE|YES|Y|1)$' "$cache"; then
    san_flags=(-fsanitize=thread)
fi

echo "run.sh: binary dir  $bin"
echo "run.sh: scratch dir $scratch"
echo "run.sh: CC=$cc  cmake=$cmake_bin"
echo "run.sh: sanitizer flags: ${san_flags[*]:-(none; REPOSE_SANITIZE and REPOSE_TSAN are off)}"

step "wipe scratch dir"
run rm -rf "$scratch"
run mkdir -p "$scratch"
prefix="$scratch/prefix"

step "install into $prefix"
run "$cmake_bin" --install "$bin" --prefix "$prefix"

# libdir is lib, lib64 or lib/<multiarch> depending on the platform/prefix.
pc_file="$(find "$prefix" -path '*/pkgconfig/repose.pc' -print | head -n 1)"
[[ -n "$pc_file" ]] || die "no pkgconfig/repose.pc installed under $prefix"
pc_dir="$(dirname "$pc_file")"
libdir="$(dirname "$pc_dir")"
echo "run.sh: libdir $libdir"
ls -l "$libdir"
[[ -f "$prefix/include/repose/geometry.h" ]] || die "include/repose/geometry.h not installed"
[[ -f "$libdir/cmake/repose/reposeConfig.cmake" ]] || die "cmake/repose/reposeConfig.cmake not installed in $libdir"

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- exported symbols -------------------------------------------------------
# The libraries are built with -fvisibility=hidden: each exports exactly the
# functions its installed headers declare with RP_API, nothing internal
# (rp_scene_nearest_, rp_client_fail_, …) and nothing a header forgot.
step "exported symbols = RP_API declarations of the installed headers"
# Names declared with RP_API in the given headers, one per line, sorted.
# Fails when a function declaration at the start of a line lacks RP_API.
declared_api() {
    local bare
    bare="$(grep -hE '^[A-Za-z_][A-Za-z0-9_ *]*\brp_[A-Za-z0-9_]+ *\(' "$@" |
        grep -vE '^(RP_API|typedef|#)' || true)"
    [[ -z "$bare" ]] || die "public declarations without RP_API:"$'\n'"$bare"
    grep -hE '^RP_API ' "$@" | grep -oE '\brp_[A-Za-z0-9_]+ *\(' | tr -d ' (' | sort -u
}
# Defined dynamic symbols of a shared library, sorted.  Names that start
# with "__" belong to the toolchain (sanitizer runtimes), never to repose.
exported() {
    nm -D --defined-only "$1" | awk '{ print $NF }' | grep -v '^__' | sort -u
}
check_exports() {
    local lib="$1"; shift
    [[ -f "$lib" ]] || die "$lib not installed"
    local want got extra missing
    want="$(declared_api "$@")"
    got="$(exported "$lib")"
    extra="$(comm -13 <(echo "$want") <(echo "$got"))"
    missing="$(comm -23 <(echo "$want") <(echo "$got"))"
    echo "run.sh: $(basename "$lib"): $(echo "$got" | grep -c .) exported," \
        "$(echo "$want" | grep -c .) declared"
    [[ -z "$extra" ]] || die "$(basename "$lib") exports names no header declares:"$'\n'"$extra"
    [[ -z "$missing" ]] || die "$(basename "$lib") does not export:"$'\n'"$missing"
}
command -v nm >/dev/null 2>&1 || die "nm not found (binutils)"
inc="$prefix/include/repose"
check_exports "$libdir/librepose.so" "$inc/status.h" "$inc/geometry.h" "$inc/scene.h" "$inc/plan.h" \
  "$inc/spherize.h" "$inc/tessellate.h"
check_exports "$libdir/librepose_client.so" "$inc/client.h"

# Checks that the consumer resolves librepose from the prefix (when ldd exists).
check_linked_lib() {
    if command -v ldd >/dev/null 2>&1; then
        local line
        line="$(ldd "$1" | grep 'librepose\.so' || true)"
        echo "run.sh: $line"
        [[ "$line" == *"$libdir/"* ]] || die "$1 does not load librepose from $libdir"
    fi
}

# ---- (a) pkg-config -------------------------------------------------------
step "(a) consumer via pkg-config"
export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "+ cat $pc_file"
cat "$pc_file"
run pkg-config --modversion repose
pc_libdir="$(pkg-config --variable=libdir repose)"
pc_incdir="$(pkg-config --variable=includedir repose)"
# The .pc file must point into the prefix it was installed to, not into the
# configure-time CMAKE_INSTALL_PREFIX.
[[ "$(cd "$pc_libdir" 2>/dev/null && pwd -P)" == "$(cd "$libdir" && pwd -P)" ]] ||
    die "repose.pc libdir='$pc_libdir' is not the installed libdir '$libdir' (pkg-config file not relocatable to --prefix)"
[[ "$(cd "$pc_incdir" 2>/dev/null && pwd -P)" == "$(cd "$prefix/include" && pwd -P)" ]] ||
    die "repose.pc includedir='$pc_incdir' is not '$prefix/include' (pkg-config file not relocatable to --prefix)"
pc_flags="$(pkg-config --cflags --libs repose)"
read -r -a pc_flag_arr <<<"$pc_flags"
mkdir -p "$scratch/build-pkgconfig"
exe_a="$scratch/build-pkgconfig/consumer"
run "$cc" -std=c11 -Wall -Wextra -Werror "${san_flags[@]}" \
    "$here/consumer.c" -o "$exe_a" "${pc_flag_arr[@]}"
check_linked_lib "$exe_a"
run "$exe_a"

# The client library has its own .pc (it needs libcjson).
step "(a') client consumer via pkg-config repose-client"
cl_flags="$(pkg-config --cflags --libs repose-client)"
read -r -a cl_flag_arr <<<"$cl_flags"
exe_c="$scratch/build-pkgconfig/client_consumer"
run "$cc" -std=c11 -Wall -Wextra -Werror "${san_flags[@]}" \
    "$here/client_consumer.c" -o "$exe_c" "${cl_flag_arr[@]}"
run "$exe_c"

# ---- (b) CMake find_package -------------------------------------------------
step "(b) consumer via find_package(repose)"
build_b="$scratch/build-cmake"
cmake_args=(-S "$here" -B "$build_b"
    -DCMAKE_C_COMPILER="$cc"
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DCMAKE_PREFIX_PATH="$prefix"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if [[ ${#san_flags[@]} -gt 0 ]]; then
    cmake_args+=(-DCMAKE_C_FLAGS="${san_flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${san_flags[*]}")
fi
run "$cmake_bin" "${cmake_args[@]}"
found_dir="$(sed -n 's/^repose_DIR:PATH=//p' "$build_b/CMakeCache.txt")"
echo "run.sh: repose_DIR=$found_dir"
[[ "$found_dir" == "$prefix/"* ]] || die "find_package(repose) found '$found_dir', not the package in $prefix"
run "$cmake_bin" --build "$build_b"
exe_b="$build_b/consumer"
[[ -x "$exe_b" ]] || die "$exe_b was not built"
check_linked_lib "$exe_b"
run "$exe_b"
# The README's CMake line for the client library: repose::repose_client.
exe_bc="$build_b/client_consumer"
[[ -x "$exe_bc" ]] || die "$exe_bc was not built"
loaded="$(ldd "$exe_bc")"  # not piped into grep -q: pipefail would see ldd's SIGPIPE
[[ "$loaded" == *"librepose_client.so.0 => $libdir/"* ]] ||
    { echo "$loaded"; die "$exe_bc does not load the installed librepose_client.so.0"; }
run "$exe_bc"

step "install test passed (pkg-config and find_package)"
