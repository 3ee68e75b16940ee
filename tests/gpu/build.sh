#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds nccl_check with nvcc against the system NCCL.
#
#   tests/gpu/build.sh [OUTDIR]        default OUTDIR: <repo>/build-nccl-check
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# NVCC_ARCH (default "-arch=sm_90": H100/H200), NCCL_HOME (an NCCL outside the
# system include and library directories).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/build-nccl-check}

nvcc=${NVCC:-}
if [[ -z $nvcc ]]; then
  if command -v nvcc >/dev/null 2>&1; then nvcc=nvcc
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then nvcc=/usr/local/cuda/bin/nvcc
  else echo "build.sh: nvcc not found (set NVCC)" >&2; exit 1
  fi
fi
read -r -a arch <<<"${NVCC_ARCH:--arch=sm_90}"
extra=()
if [[ -n ${NCCL_HOME:-} ]]; then
  extra+=(-I"$NCCL_HOME/include" -L"$NCCL_HOME/lib" -Xlinker -rpath="$NCCL_HOME/lib")
fi

mkdir -p "$out"
cmd=("$nvcc" -O2 -std=c++17 "${arch[@]}" "${extra[@]}" -o "$out/nccl_check" "$here/nccl_check.cu" -lnccl)
echo "+ ${cmd[*]}"
"${cmd[@]}"
echo "built $out/nccl_check"
