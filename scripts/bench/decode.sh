#!/usr/bin/env bash
# CPU decode throughput, side by side: the rollout engine (its static decode step, and the op-by-op
# path it replaced) against plain PyTorch's static-cache loop (scripts/bench/decode.py, Debian's
# python3-torch over the same libtorch), on the same model and prompts, one libtorch thread and one
# OpenBLAS thread each (docs/bench/rollout.md has the figures).
#
#   scripts/bench/decode.sh                      ROUNDS=5 BATCHES=1,16 PROMPT=128 NEW=64
#
# The model is the 39M-parameter Qwen2 of the training benchmark (scripts/bench/trainstep -init:
# hidden 512, 8 layers, 8 query heads over 2 KV heads, vocabulary 32,000, float32), written once
# into OUT/model. Each round runs the engine's process and PyTorch's, in turn (the order swaps every
# round, so that a machine's drift falls on both), each timing every batch size after an untimed
# warm-up. Greedy decoding, every sequence in the KV cache from the start, prefill included in the
# time. The summary gives, per batch size and side, the median over rounds of tokens per second
# (wall) and of tokens per CPU second (user + system over the timed stretch: steadier on a shared
# machine), and the engine / PyTorch ratio of each, round by round.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/bench-decode}
ROUNDS=${ROUNDS:-5}
BATCHES=${BATCHES:-1,16}
PROMPT=${PROMPT:-128}
NEW=${NEW:-64}
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"
"$PY" -P -c 'import torch' 2>/dev/null || { echo "decode.sh: $PY has no torch (make setup --tests installs python3-torch)" >&2; exit 2; }
go build -o "$OUT/decode" ./scripts/bench/decode
go build -o "$OUT/trainstep" ./scripts/bench/trainstep
[ -f "$OUT/model/config.json" ] || "$OUT/trainstep" -init "$OUT/model" >/dev/null
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MTGRPO_THREADS=1
# The same OpenBLAS kernels on both sides (train_step.sh says why).
core=$("$OUT/trainstep" -blas-core)
[ -z "$core" ] || export OPENBLAS_CORETYPE=$core
rm -f "$OUT"/go-*.json "$OUT"/py-*.json
engine() {
  "$OUT/decode" -model "$OUT/model" -device cpu -dtype float32 -batches "$BATCHES" -prompt "$PROMPT" -new "$NEW" \
    -threads 1 -modes graphs,ops -out "$OUT/go-$1.json"
}
plain() {
  "$PY" -P scripts/bench/decode.py --model "$OUT/model" --device cpu --batches "$BATCHES" --prompt "$PROMPT" \
    --new "$NEW" --threads 1 --sides pytorch --out "$OUT/py-$1.json" >/dev/null
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then engine "$r"; plain "$r"; else plain "$r"; engine "$r"; fi
  echo "decode.sh: round $r of $ROUNDS done (load average $(cut -d' ' -f1 /proc/loadavg))"
done
"$PY" -P - "$OUT" "$ROUNDS" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rate, cpu = {}, {}  # (side, batch) -> per round
for r in range(1, rounds + 1):
    sides = json.load(open(os.path.join(out, f"go-{r}.json")))["sides"]
    sides += json.load(open(os.path.join(out, f"py-{r}.json")))["sides"]
    for s in sides:
        for x in s["results"]:
            k = (s["side"], x["batch"])
            n = x["batch"] * x["new"]
            rate.setdefault(k, []).append(n / x["seconds"])
            cpu.setdefault(k, []).append(n / x["cpu_s"])
def spread(xs):
    return f"{statistics.median(xs):.3g} [{min(xs):.3g}-{max(xs):.3g}]"
print("| batch | side | tokens/s (wall) | tokens per CPU second | wall ratio to pytorch | CPU ratio to pytorch |")
print("|---:|---|---:|---:|---:|---:|")
for (side, b) in sorted(rate, key=lambda k: (k[1], k[0])):
    pw, pc = rate.get(("pytorch", b)), cpu.get(("pytorch", b))
    rw = spread([a / p for a, p in zip(rate[side, b], pw)]) if pw and side != "pytorch" else ""
    rc = spread([a / p for a, p in zip(cpu[side, b], pc)]) if pc and side != "pytorch" else ""
    print(f"| {b} | {side} | {spread(rate[side, b])} | {spread(cpu[side, b])} | {rw} | {rc} |")
PY
