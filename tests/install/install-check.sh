#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# install-check.sh BUILD_DIR CONSUMER_C VERSION CC: installs the runtime and
# development components of BUILD_DIR into a scratch prefix, checks the
# files a libtb5 user needs are there, and builds CONSUMER_C against them
# with pkg-config and with CMake's find_package(tb5); both programs must run
# and report VERSION.
set -euo pipefail
build=$1 src=$2 version=$3 cc=$4
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

for c in runtime development; do
	cmake --install "$build" --prefix "$prefix" --component "$c" >/dev/null
done
libdir=$(dirname "$(find "$prefix" -name libtb5.pc -print -quit)")
libdir=${libdir%/pkgconfig}
for f in "$prefix/include/tb5/tb5.h" "$prefix/include/tb5/tb5_uapi.h" \
	"$libdir/libtb5.so.1" "$libdir/libtb5.so" "$libdir/cmake/tb5/tb5Config.cmake"; do
	[[ -e $f ]] || { echo "missing after install: $f"; exit 1; }
done
# Only tb5_* is exported.
bad=$(nm -D --defined-only "$libdir/libtb5.so.1" | awk '$2 ~ /[TDBR]/ { print $3 }' |
	grep -v '^tb5_' || true)
[[ -z $bad ]] || { echo "exported besides tb5_*: $bad"; exit 1; }

# pkg-config
# shellcheck disable=SC2046  # pkg-config prints several words
"$cc" "$src" $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs libtb5) \
	-Wl,-rpath,"$libdir" -o "$prefix/by-pkg-config"
"$prefix/by-pkg-config" "$version"

# find_package
mkdir -p "$prefix/cmake-consumer"
cat >"$prefix/cmake-consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(tb5 $version REQUIRED)
add_executable(by-find-package $src)
target_link_libraries(by-find-package PRIVATE tb5::tb5)
CMAKE
cmake -S "$prefix/cmake-consumer" -B "$prefix/cmake-consumer/build" \
	-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$prefix/cmake-consumer/build" >/dev/null
"$prefix/cmake-consumer/build/by-find-package" "$version"
echo "install-check: headers, libtb5.so.1, pkg-config and find_package(tb5) OK"
