#!/usr/bin/env bash
# GPU check of the torch binding on a CUDA host (PyTorch 2.x in python3, nvcc/g++, no Go needed).
#
# On a machine with Go, from the repository root, build the test binary and ship the tree:
#     go test -c -o build/torch.test ./torch
# On the CUDA host, from the repository root:
#     scripts/gpu_check.sh
#
# It (1) builds the shim against python's torch (MTGRPO_TORCH=python, CUDA on), (2) checks that
# libtorch_cuda is linked and CUDA is available, (3) runs the torch tests on cuda
# (MTGRPO_TEST_DEVICE=cuda; includes memory returned to the allocator when scopes close), (4) runs
# the bf16 matmul and flash-SDPA benchmarks through the binding and the same shapes in python torch,
# and writes the ratios (goal >= 0.95) to build/gpu_check/summary.txt.
#
#   DEVICE=cuda:1 scripts/gpu_check.sh     another GPU
#   BENCHTIME=5s scripts/gpu_check.sh      longer benchmark runs (default 3s)
#   MTGRPO_TORCH=debian scripts/gpu_check.sh   Debian's CUDA libtorch instead of python's torch
#
# Without a GPU it stops after steps 1 and 2's start-up check, with exit status 3 (make
# check-cuda-build runs it that way).
set -euo pipefail
cd "$(dirname "$0")/.."
GPU_SCRIPT=gpu_check
. scripts/lib/gpu.sh

DEVICE=${DEVICE:-cuda}
BENCHTIME=${BENCHTIME:-3s}
# One spelling for Go and python: python's torch.cuda.set_device refuses a bare "cuda".
case "$DEVICE" in
  cuda) DEVICE=cuda:0 ;;
  cuda:[0-9]*) ;;
  *) echo "gpu_check: DEVICE=$DEVICE is not cuda or cuda:N" >&2; exit 2 ;;
esac
DEVICE_INDEX=${DEVICE#cuda:}
OUT=build/gpu_check
TEST_BIN=build/torch.test
mkdir -p "$OUT"
say() { printf 'gpu_check: %s\n' "$*" | tee -a "$OUT/summary.txt"; }
: >"$OUT/summary.txt"

[ -x "$TEST_BIN" ] || { echo "gpu_check: $TEST_BIN missing: run 'go test -c -o $TEST_BIN ./torch' where Go is installed" >&2; exit 1; }

# --- 1. the shim against the CUDA libtorch (python's torch unless told otherwise) ---------------
gpu_shim "$OUT/build.txt"
cat "$OUT/build.txt"
# build_shim.sh and dist.cpp say when the gloo headers or nccl.h were not found (then
# TestDistributedGloo or the NCCL test fail, saying the shim was built without that backend).
grep -E -o '#warning "[^"]*"|build_shim: no .*' "$OUT/build.txt" | sort -u | while read -r l; do say "build: $l"; done || true
say "shim links libtorch_cuda.so: yes ($TORCH_SOURCE libtorch, $TORCH_LIBDIR)"

# --- 2 and 3. version, CUDA availability, the test suite on the GPU ---------------------------
# The test binary runs in the package directory, as `go test` would. It was built elsewhere: a
# glibc older than the build machine's (it needs 2.34) or a library the loader cannot find stops
# it before any test runs; gpu_binary_starts says so plainly.
bin=$PWD/$TEST_BIN
gpu_binary_starts "$bin" torch "$OUT/start.txt"
(cd torch && "$bin" -test.v -test.run '^TestVersion$') 2>&1 | grep -m1 'libtorch .*CUDA available' |
  sed 's/^ *[a-z_]*\.go:[0-9]*: //' | while read -r l; do say "binding (before any device is used): $l"; done || true
gpu_require_device "the torch tests on $DEVICE"
if [ "$TORCH_SOURCE" = python ]; then
  say "python torch: $(python3 -c 'import sys,torch;print(torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(int(sys.argv[1])))' "$DEVICE_INDEX" 2>&1 | tail -1)"
fi
status=0
(cd torch && MTGRPO_TEST_DEVICE=$DEVICE "$bin" -test.v -test.count=1 -test.timeout 20m) >"$OUT/tests.txt" 2>&1 || status=$?
grep -m1 'libtorch .*CUDA available' "$OUT/tests.txt" | sed 's/^ *[a-z_]*\.go:[0-9]*: //' | while read -r l; do say "binding: $l"; done || true
grep -q 'CUDA available: true' "$OUT/tests.txt" || say "CUDA NOT AVAILABLE through the binding (see TestVersion in $OUT/tests.txt)"
grep -E 'allocated before' "$OUT/tests.txt" | sed 's/^ *//' | while read -r l; do say "scope close: $l"; done || true
say "tests on $DEVICE: $(grep -c '^--- PASS' "$OUT/tests.txt") passed, $(grep -c '^--- FAIL' "$OUT/tests.txt") failed (exit $status; log $OUT/tests.txt)"
grep '^--- FAIL' "$OUT/tests.txt" | while read -r l; do say "  $l"; done || true

# --- 4. benchmarks: binding vs python torch on the same shapes --------------------------------
(cd torch && MTGRPO_TEST_DEVICE=$DEVICE "$bin" -test.run '^$' -test.bench 'Matmul4096BF16|SDPAFlashBF16|AddSmall$|CgoCall' \
  -test.benchtime "$BENCHTIME") >"$OUT/bench_go.txt" 2>&1 || true
# A failure here (a traceback in bench_python.txt) must not cost the summary of the other steps.
DEVICE=$DEVICE python3 - >"$OUT/bench_python.txt" 2>&1 <<'PY' || say "python benchmark failed (see $OUT/bench_python.txt)"
import os, time, torch
import torch.nn.functional as F
dev = torch.device(os.environ["DEVICE"])
torch.cuda.set_device(dev)

def rate(fn, flops, seconds=3.0):
    fn(); torch.cuda.synchronize()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            fn()
        n += 10
        torch.cuda.synchronize()
    return flops * n / (time.perf_counter() - t0) / 1e12

a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
print("matmul4096_bf16_tflops", rate(lambda: torch.matmul(a, b), 2 * 4096**3))
B, H, T, D = 4, 16, 2048, 128
q, k, v = (torch.randn(B, H, T, D, device=dev, dtype=torch.bfloat16) for _ in range(3))
print("sdpa_flash_bf16_tflops", rate(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), 4 * B * H * T * T * D / 2))
x = torch.rand(4, device=dev)
y = torch.rand(4, device=dev)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(100000):
    x + y
torch.cuda.synchronize()
print("add_small_ns", (time.perf_counter() - t0) / 100000 * 1e9)
PY

go_metric() { awk -v b="$1" -v u="$2" '$1 ~ "^"b"(-[0-9]+)?$" { for (i = 2; i <= NF; i++) if ($i == u) print $(i-1) }' "$OUT/bench_go.txt" | tail -1; }
py_metric() { awk -v k="$1" '$1 == k { print $2 }' "$OUT/bench_python.txt"; }
ratio() { python3 -c "import sys; g, p = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print('%.3f' % (g / p if p else 0))" "$1" "$2"; }

mm_go=$(go_metric BenchmarkMatmul4096BF16 TFLOP/s); mm_py=$(py_metric matmul4096_bf16_tflops)
sd_go=$(go_metric BenchmarkSDPAFlashBF16 TFLOP/s); sd_py=$(py_metric sdpa_flash_bf16_tflops)
add_go=$(go_metric BenchmarkAddSmall ns/op); add_py=$(py_metric add_small_ns)
say "bf16 matmul 4096^3:          binding ${mm_go:-?} TFLOP/s, python ${mm_py:-?} TFLOP/s, ratio $(ratio "${mm_go:-0}" "${mm_py:-0}") (goal >= 0.95)"
say "flash SDPA [4,16,2048,128]:  binding ${sd_go:-?} TFLOP/s, python ${sd_py:-?} TFLOP/s, ratio $(ratio "${sd_go:-0}" "${sd_py:-0}") (goal >= 0.95)"
say "small add on GPU:            binding ${add_go:-?} ns/op, python ${add_py:-?} ns/op"
say "cgo crossing:                $(go_metric BenchmarkCgoCall ns/op) ns"
echo "gpu_check: details in $OUT/ (tests.txt, bench_go.txt, bench_python.txt, build.txt)"
exit "$status"
