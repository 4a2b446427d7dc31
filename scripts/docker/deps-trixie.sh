#!/usr/bin/env bash
# Debian trixie's packages for the image's trixie base (Dockerfile, BASE=trixie) and for
# `make check-cuda-build`, which runs this same script in a trixie root:
#
#   deps-trixie.sh build     CUDA libtorch 2.6 with its headers, gloo, NCCL, the CUDA headers, g++
#   deps-trixie.sh runtime   the libraries the binary and shim load, and python3 for the python tool
#
# Debian's CUDA libtorch is in contrib and needs CUDA from non-free, so both are enabled. Its cuDNN
# package downloads cuDNN from NVIDIA while it installs (network needed, as in a docker build).
# MTGRPO_CUDNN_STANDIN=1 (build checks without a GPU or network) installs the stand-in package and
# library of scripts/lib/cudnn_standin.sh instead. The library is built with gcc (the build
# dependencies have it); where /usr/local/lib/libcudnn.so.9 is already there (the image's runtime
# stage copies it from its build stage: the runtime has no gcc) it is used as it is.
#
# The downloaded packages are removed afterwards unless /var/cache/apt/archives is a mount (a
# BuildKit cache mount, or check-cuda-build's download cache), so that no layer keeps them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive

enable_components() {
  local f=/etc/apt/sources.list.d/debian.sources
  if [ -f "$f" ] && ! grep -q '^Components:.*contrib' "$f"; then
    sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$f"
  fi
  if [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list && ! grep -q contrib /etc/apt/sources.list; then
    sed -i 's/^\(deb .* main\)$/\1 contrib non-free non-free-firmware/' /etc/apt/sources.list
  fi
}

install() {
  apt-get update -qq
  apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "$@"
}

case "${1:-}" in
  build)
    pkgs=(libtorch-cuda-dev libgloo-cuda-dev nvidia-cuda-dev libnccl-dev g++ make git ca-certificates) ;;
  runtime)
    # libopenblas0-pthread: without it Debian's libblas.so.3 is the reference BLAS (slow CPU runs).
    pkgs=(libtorch-cuda-2.6 libgloo-cuda-0 libnccl2 libopenblas0-pthread python3 ca-certificates) ;;
  *)
    echo "usage: $0 build|runtime" >&2; exit 2 ;;
esac
enable_components
if [ "${MTGRPO_CUDNN_STANDIN:-}" = 1 ]; then
  "$here/../lib/cudnn_standin.sh" package
fi
install "${pkgs[@]}"
if [ "${MTGRPO_CUDNN_STANDIN:-}" = 1 ]; then
  if [ -f /usr/local/lib/libcudnn.so.9 ]; then
    ldconfig
    echo "deps-trixie: using the stand-in /usr/local/lib/libcudnn.so.9 already there" >&2
  else
    "$here/../lib/cudnn_standin.sh" library
  fi
fi
mountpoint -q /var/cache/apt/archives 2>/dev/null || apt-get clean
rm -rf /var/lib/apt/lists/*
