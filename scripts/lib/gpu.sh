# shellcheck shell=bash
# Shared steps of the CUDA-host scripts (scripts/gpu_check.sh, scripts/bench_rollout.sh,
# scripts/fixtures/cuda_model_bench.sh). Sourced from the repository root, after `set -euo pipefail`.
#
# The libtorch is the PyTorch of python3 (MTGRPO_TORCH=python) unless LIBTORCH or MTGRPO_TORCH says
# otherwise: make check-cuda-build runs these scripts with MTGRPO_TORCH=debian against Debian's
# CUDA libtorch on a machine without a GPU, where they stop, with exit status 3 (GPU_NO_DEVICE),
# at the first step that needs a device.

GPU_NO_DEVICE=3

gpu_say() { printf '%s: %s\n' "${GPU_SCRIPT:-gpu}" "$*" >&2; }

# gpu_shim LOG: chooses the CUDA libtorch (scripts/libtorch.sh), builds the shim against it into
# build/ (output in LOG), checks that the shim links libtorch_cuda (without it CUDA is silently
# unavailable), and exports LD_LIBRARY_PATH for the binaries. Sets the TORCH_* variables.
gpu_shim() {
  local log=$1 env
  [ -n "${LIBTORCH:-}" ] || export MTGRPO_TORCH=${MTGRPO_TORCH:-python}
  env=$(scripts/libtorch.sh --require) || exit 1
  eval "$env"
  [ "$TORCH_CUDA" = 1 ] || { gpu_say "the $TORCH_SOURCE libtorch ($TORCH_LIBDIR) has no libtorch_cuda.so"; exit 1; }
  if ! scripts/build_shim.sh >"$log" 2>&1; then
    tail -20 "$log" >&2
    gpu_say "the shim did not build against $TORCH_SOURCE libtorch (log: $log)"
    exit 1
  fi
  readelf -d build/libmtgrpo_torch.so | grep -q 'libtorch_cuda.so' ||
    { gpu_say "the shim does not link libtorch_cuda.so (CUDA would silently be unavailable)"; exit 1; }
  export LD_LIBRARY_PATH="$PWD/build:$TORCH_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# gpu_binary_starts BIN PKGDIR LOG: the Go test binary BIN (built on another machine) starts here
# against this shim, run from PKGDIR as `go test` would; if not, says why (an older glibc, a library
# the loader cannot find, a shim of another ABI) and exits.
gpu_binary_starts() {
  local bin=$1 dir=$2 log
  log=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
  if ! (cd "$dir" && "$bin" -test.list '.' >"$log" 2>&1); then
    gpu_say "$(basename "$bin") does not start here: $(head -3 "$log" | tr '\n' ' ')"
    exit 1
  fi
}

# gpu_require_device WHAT: exits with GPU_NO_DEVICE unless this machine has an NVIDIA GPU, saying
# that the script stops before WHAT, the first step that needs one.
gpu_require_device() {
  local found=0
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L 2>/dev/null | grep -q '^GPU' && found=1
  elif compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
    found=1
  fi
  if [ "$found" = 0 ]; then
    gpu_say "no CUDA device here: stopping before $1 (everything before it ran)"
    exit "$GPU_NO_DEVICE"
  fi
}
