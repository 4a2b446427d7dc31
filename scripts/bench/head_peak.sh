#!/usr/bin/env bash
# The peak memory of one training update at Qwen's vocabulary (151,936) on the CPU, the head in
# chunks against the head kept whole (docs/bench/grpo.md, "The head at Qwen's vocabulary").
#
#   scripts/bench/head_peak.sh                              16 × 1,024 tokens, both sides
#   SIZES="4x256 8x256" SIDES="chunked kept" scripts/bench/head_peak.sh
#
# The model is the tiny preset (hidden 64, 4 layers, 4 query heads over 2 key/value heads,
# intermediate 192) with a 151,936-token vocabulary, float32: the head is most of the work and of
# the memory, as it is for a small model with a large vocabulary. Each side is a fresh
# scripts/bench/trainstep process making one update (forward with the entropies, as the trainer's
# passes do; loss on the log-probs; backward; AdamW), one side after the other, never two at once:
#
#   chunked  -head-budget=-1: the log-probs and entropies computed 441 tokens at a time (64 Mi
#            logits), each chunk recomputed in the backward pass (update.head_memory_budget's
#            path past its budget)
#   kept     -head-budget=1TiB: the head over every token at once with its autograd graph kept,
#            as before chunking existed and as PyTorch code that takes log_softmax of the full
#            logits does
#
# SIZES   space-separated COUNTxLEN: COUNT sequences of LEN tokens (plain causal attention)
# SIDES   which sides to run (chunked, kept)
# THREADS libtorch's intra-op threads and OpenBLAS' (default 1 each)
# Prints one line per run: the process's peak RSS (VmHWM), its growth over the RSS after loading
# the model, and the tensors' own bytes (torch.TrackCPUMemory): the weights, AdamW's state, what
# the forward pass leaves for the backward, and each phase's peak. Raw replies go to
# build/bench_head/raw.jsonl. The kept side at 16,384 tokens needs about 40 GB of memory.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-16x1024}
SIDES=${SIDES:-chunked kept}
THREADS=${THREADS:-1}
PY=${PY:-python3}
out=build/bench_head
mkdir -p "$out"
ts=build/trainstep
go build -o "$ts" ./scripts/bench/trainstep
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
# One line of a run from its replies (ready, step, done), which also go to raw.jsonl.
read -r -d '' summary <<'PY' || true
import json, sys
size, side, raw = sys.argv[1:4]
lines = [json.loads(l) for l in sys.stdin]
with open(raw, "a") as f:
    for l in lines:
        f.write(json.dumps({"size": size, "side": side, **l}) + "\n")
ready, step, done = lines[0], lines[1], lines[2]
peak = ready["base_rss_mb"] + done["peak_growth_mb"]
print(f"{size:>8} {side:>8}: tokens {ready['tokens']}, peak RSS {peak:,.0f} MB (growth {done['peak_growth_mb']:,.0f}), "
      f"tensors: weights {ready['tensor_weights_mb']:,.0f}, AdamW {ready['tensor_optimizer_mb']:,.0f}, "
      f"after forward {step['tensor_after_forward_mb']:,.0f}, peak forward {step['tensor_peak_forward_mb']:,.0f}, "
      f"backward {step['tensor_peak_backward_mb']:,.0f}, AdamW step {step['tensor_peak_optimizer_mb']:,.0f} MB; "
      f"cpu {step['cpu_s']:.1f} s, wall {step['wall_s']:.1f} s")
PY
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, $(free -g | awk '/Mem:/ {print $2}') GB," \
  "load $(cut -d' ' -f1-3 /proc/loadavg), threads $THREADS"
for size in $SIZES; do
  count=${size%x*} len=${size#*x}
  dir=$out/v151936-$size
  lens=$(printf "$len,%.0s" $(seq "$count"))
  [ -f "$dir/ids.json" ] || "$ts" -init "$dir" -preset tiny -vocab 151936 -lens "${lens%,}" >/dev/null
  for side in $SIDES; do
    case $side in
    chunked) budget=-1 ;;
    kept) budget=1099511627776 ;;
    *) echo "unknown side $side (chunked, kept)" >&2; exit 2 ;;
    esac
    printf 'step\ndone\n' | "$ts" -model "$dir" -threads "$THREADS" -entropy -head-budget "$budget" -name "$side" |
      "$PY" -c "$summary" "$size" "$side" "$out/raw.jsonl"
  done
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
