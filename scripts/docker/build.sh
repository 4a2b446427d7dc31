#!/usr/bin/env bash
# Builds the shim and the binaries and installs them under PREFIX (default /opt/mtgrpo):
# PREFIX/bin/mtgrpo, PREFIX/bin/mtgrpo-sandbox and PREFIX/build/libmtgrpo_torch.so, where the
# binary looks for the shim ($ORIGIN/../build). The Dockerfile's build stage and make
# check-cuda-build run it. The libtorch is scripts/libtorch.sh's choice (MTGRPO_TORCH, LIBTORCH).
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=${1:-/opt/mtgrpo}
scripts/build_shim.sh
go build -o bin/mtgrpo ./cmd/mtgrpo
go build -o bin/mtgrpo-sandbox ./cmd/mtgrpo-sandbox
mkdir -p "$prefix/bin" "$prefix/build"
install -m 0755 bin/mtgrpo bin/mtgrpo-sandbox "$prefix/bin/"
install -m 0755 build/libmtgrpo_torch.so "$prefix/build/"
"$prefix/bin/mtgrpo" version
