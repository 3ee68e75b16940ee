#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/main.sh - the main job: install the build dependencies, build tb5
# (Release, in build/), run the transport core's two-node demo, a short run
# of the core's benchmark, tb5-selftest and a short tb5-perf over libtb5's
# simulator (two processes); then the install story: build the debs
# (ci/package.sh deb), make a local apt repository, debootstrap a fresh
# Debian 12, `apt install tb5-nccl-minimal` there (DKMS builds tb5.ko for
# that system's kernel), boot it under QEMU with its own kernel and udev,
# `modprobe tb5` (options from /etc/modprobe.d/tb5.conf), and run
# tb5-selftest as an unprivileged member of group tb5 and a short tb5-perf
# (ci/package-install.sh). Works as root or as a user with sudo (sudo is
# used to install missing packages and for the install story, which needs
# debootstrap, a chroot and apt-get).
#
# TB5_BENCH_ARGS overrides the benchmark's arguments (default: a short run).
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap tb5_summary EXIT

read -r -a bench_args <<<"${TB5_BENCH_ARGS:---benchmark_min_time=0.05}"

tb5_stage "build dependencies" tb5_install_deps "${TB5_DEPS_BUILD[@]}"
tb5_stage "build (gcc, Release, build/)" tb5_build build \
	-DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
tb5_stage "two-node demo (tb5-core-demo)" \
	"$TB5_ROOT/build/src/demo/tb5-core-demo"
tb5_stage "core benchmark, short run (tb5-core-bench)" \
	"$TB5_ROOT/build/tests/bench/tb5-core-bench" "${bench_args[@]}"
sim="TB5_SIM=ci-main-$$"
tb5_stage "tb5-selftest over the simulator" \
	env "$sim" "$TB5_ROOT/build/src/tools/selftest/tb5-selftest"
tb5_stage "tb5-perf over the simulator, short sweep (two processes)" \
	"$TB5_ROOT/build/src/tools/perf/tb5-perf" --sim --test bw,lat \
	--bw-sizes 4K:64M:16 --lat-sizes 8:4K:8 --duration 0.1 --verify --no-progress
tb5_stage "packages: debs (ci/package.sh deb, build-pkg-deb/)" \
	"$TB5_ROOT/ci/package.sh" deb
tb5_stage "apt install tb5-nccl-minimal into a fresh Debian 12, boot it: modprobe, tb5-selftest, tb5-perf" \
	"$TB5_ROOT/ci/package-install.sh"
