#!/usr/bin/env bash
# The steps of make check-cuda-build (scripts/check_cuda_build.sh), run as root inside the fresh
# trixie root from the clean clone at /work/mtgrpo. See check_cuda_build.sh for what they prove.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
say() { printf 'check-cuda-build: %s\n' "$*"; }
step() {
  say "\$ $*"
  local t=$SECONDS
  "$@"
  say "$* took $((SECONDS - t)) s"
}
mkdir -p build

# 1-2. The image's trixie build and runtime steps (Dockerfile, BASE=trixie), with the stand-in
# cuDNN: Debian's CUDA libtorch and the rest, then the shim and binaries installed in /opt/mtgrpo;
# then setup.sh for what the tests need (it keeps the CUDA libtorch) and make build.
export MTGRPO_CUDNN_STANDIN=1
step scripts/docker/deps-trixie.sh build
step scripts/docker/deps-trixie.sh runtime
step scripts/docker/build.sh /opt/mtgrpo
step /opt/mtgrpo/bin/mtgrpo version
step scripts/setup.sh
step make build
step go test -c -o build/torch.test ./torch
step go test -c -o build/model.test ./model
step go test -c -o build/rollout.test ./rollout

# 3. The binary reports the build cleanly; the torch tests pass on the CPU with this shim.
v=$(bin/mtgrpo version)
say "$v"
for want in 'libtorch 2.' 'CUDA available: false' 'process groups: gloo, nccl' 'built for CUDA but no device works'; do
  case "$v" in *"$want"*) ;; *) say "mtgrpo version does not say '$want'" >&2; exit 1 ;; esac
done
torch_tests() { (cd torch && ../build/torch.test -test.count=1 -test.timeout 30m); }
step torch_tests

# 4. The GPU scripts, up to the first step that needs a device (exit status 3).
for s in scripts/gpu_check.sh scripts/fixtures/cuda_model_bench.sh scripts/bench_rollout.sh; do
  log=build/check-$(basename "$s" .sh).log
  say "\$ MTGRPO_TORCH=debian $s"
  t=$SECONDS st=0
  MTGRPO_TORCH=debian "$s" >"$log" 2>&1 || st=$?
  if [ "$st" != 3 ] || ! grep -q 'no CUDA device here: stopping before' "$log"; then
    cat "$log"
    say "$s ended with exit status $st, not at the first step that needs a device" >&2
    exit 1
  fi
  say "$s: $(grep 'no CUDA device here' "$log") ($((SECONDS - t)) s)"
done
