#!/usr/bin/env bash
# make check-cuda-build: the CUDA build, checked on a machine without a GPU, against Debian trixie's
# CUDA libtorch 2.6 (contrib; CUDA 12.4 libraries from non-free) in a fresh trixie root
# (scripts/lib/root.sh; cached under ~/.cache/mtgrpo). Several GB of packages: not in every CI
# run; run it when torch/csrc or the build scripts change and record the result in docs/setup.md.
#
# In a clean clone of HEAD (the steps: scripts/lib/cuda_build_steps.sh):
#  1. The Docker image's trixie steps (scripts/docker/deps-trixie.sh build and runtime): Debian's
#     CUDA libtorch, gloo, NCCL, the CUDA headers. cuDNN comes from NVIDIA at install time, which
#     cannot work offline: a stand-in package and library satisfy apt and the linker
#     (MTGRPO_CUDNN_STANDIN=1, scripts/lib/cudnn_standin.sh).
#  2. scripts/docker/build.sh (the image's build step: shim, binaries in /opt/mtgrpo), then
#     scripts/setup.sh (the rest, for the tests) and make build.
#  3. `mtgrpo version` reports the CUDA build, NCCL, and CUDA unavailable, cleanly; the test
#     binaries of torch, model and rollout link (go test -c), and the torch tests pass on the CPU
#     with this CUDA shim (the distributed ones expect what the shim was built with).
#  4. The GPU scripts (gpu_check.sh, fixtures/cuda_model_bench.sh, bench_rollout.sh) build and run
#     against this shim up to the first step that needs a device, where they must stop with exit
#     status 3 and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT_CHECK=check-cuda-build
. scripts/lib/root.sh
. scripts/lib/check.sh

check_start
root_base trixie-cuda trixie "main contrib non-free non-free-firmware"
check_run "$(fresh_preflight)
/work/mtgrpo/scripts/lib/cuda_build_steps.sh"
