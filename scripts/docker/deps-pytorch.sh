#!/usr/bin/env bash
# The build tools the image's PyTorch base (Dockerfile, BASE=pytorch: an official PyTorch CUDA
# "devel" image, Ubuntu) lacks: g++, make, git. Its libtorch is the one inside its PyTorch
# (MTGRPO_TORCH=python, scripts/libtorch.sh).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -q --no-install-recommends g++ make git ca-certificates
rm -rf /var/lib/apt/lists/*
