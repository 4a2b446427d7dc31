#!/usr/bin/env bash
# Generation throughput on a CUDA host, nano-vllm's protocol: the rollout engine against
# transformers' generate() in the same run, on a bf16 Qwen2.5-0.5B-shaped model made by
# `mtgrpo init` with the real Qwen tokenizer (PyTorch 2.x and transformers in python3, g++; no Go).
#
# On a machine with Go, from the repository root, build the binaries and ship the tree together
# with third_party/npm (the Qwen tokenizer files that `mtgrpo init` copies):
#     make build && go test -c -o build/rollout.test ./rollout
# On the CUDA host, from the repository root:
#     scripts/bench_rollout.sh
#
# 1. builds the shim against python's torch;
# 2. bin/mtgrpo init --arch qwen2 --preset qwen2.5-0.5b (random weights, bf16);
# 3. bench_rollout.py prepare: 256 sequences, input/output lengths uniform in 100..1024;
# 4. the engine (TestCUDANanoVLLMThroughput): all 256 sequences at once, temperature 0.6,
#    ignore_eos -> go.json;
# 5. transformers generate() in batches of HF_BATCH (default 64) -> python.json;
# 6. summary: tokens/s of both and the fraction of the memory-bandwidth bound each reached.
# Results in build/bench_rollout/; copy the figures into docs/bench/rollout.md.
#
#   HF_BATCH=256 PEAK_BW_GBS=3350 scripts/bench_rollout.sh
#   MTGRPO_TORCH=debian scripts/bench_rollout.sh   Debian's CUDA libtorch for the shim
#
# Without a GPU it stops after steps 1-3 (and a start-up check of the test binary), with exit
# status 3.
set -euo pipefail
cd "$(dirname "$0")/.."
GPU_SCRIPT=bench_rollout
. scripts/lib/gpu.sh

OUT=${OUT:-build/bench_rollout}
TEST_BIN=build/rollout.test
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -x "$TEST_BIN" ] || { echo "bench_rollout: $TEST_BIN missing: run 'go test -c -o $TEST_BIN ./rollout' where Go is installed" >&2; exit 1; }
[ -x bin/mtgrpo ] || { echo "bench_rollout: bin/mtgrpo missing: run 'make build' where Go is installed" >&2; exit 1; }

gpu_shim "$OUT/build.txt"

[ -f "$OUT/model/config.json" ] || bin/mtgrpo init --arch qwen2 --preset qwen2.5-0.5b --seed 1 --out "$OUT/model"
python3 scripts/bench_rollout.py prepare "$OUT"

bin=$PWD/$TEST_BIN
gpu_binary_starts "$bin" rollout "$OUT/start.txt"
gpu_require_device "the engine benchmark (TestCUDANanoVLLMThroughput) and transformers' generate()"
status=0
(cd rollout && MTGRPO_TEST_DEVICE=cuda MTGRPO_ROLLOUT_BENCH_DIR="$OUT" "$bin" -test.v -test.count=1 \
  -test.run '^TestCUDANanoVLLMThroughput$' -test.timeout 30m) >"$OUT/go.txt" 2>&1 || status=$?
python3 scripts/bench_rollout.py hf "$OUT" "${HF_BATCH:-64}" >"$OUT/python.txt" 2>&1 || status=$?
python3 scripts/bench_rollout.py summary "$OUT" || status=$?
exit $status
