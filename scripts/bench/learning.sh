#!/usr/bin/env bash
# Learning curves of the tiny demo model on calc_mult with three factors (two calculator calls,
# then the answer: 3 turns): the "Estimators and contexts" tables of docs/bench/learning.md.
#
#   contexts    STEPS RL steps with the full history and with keep-last-1 condensed contexts,
#               each after a warm-up of SFT_STEPS steps (constant rate) on demonstrations played
#               with its own contexts (a model warmed up on full histories scores 0 on keep-last-1
#               contexts).
#   estimators  from the keep-last-1 warm-up, STEPS RL steps with trajectory-level multi-turn GRPO
#               (grpo_multiturn, the contexts comparison's keep-last-1 run) and with MT-GRPO
#               (mt_grpo, turn-level credit).
#
# The model and every other setting are configs/demo.yaml's. Every run evaluates on the same
# held-out tasks every EVERY RL steps (greedy, as the demo does) and before the first RL step.
# Prints one table per comparison: held-out score per RL step, and each run's largest context.
# Runs stay under OUT. The two warm-ups run side by side, one thread each: about 20 minutes on 2
# cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${MTGRPO_BIN:-bin/mtgrpo}
OUT=${OUT:-runs/bench-learning}
SFT_STEPS=${SFT_STEPS:-560} STEPS=${STEPS:-30} EVERY=${EVERY:-5}
export MTGRPO_PROGRESS=0 MTGRPO_THREADS=1
mkdir -p "$OUT"
quiet=(--set train.report=false --set train.samples=0)

# warm NAME STEPS [--set ...]: STEPS warm-up steps (and the one RL step a run needs), exported as
# OUT/NAME-model from the checkpoint at the end of the warm-up.
warm() {
  local name=$1 steps=$2
  shift 2
  rm -rf "${OUT:?}/$name" "$OUT/$name-model"
  "$BIN" train --config configs/demo.yaml --run-dir "$OUT/$name" --set sft.steps="$steps" --steps 1 \
    --set train.checkpoint_every="$steps" --set train.keep_checkpoints=2 --set train.export=false \
    --set sft.schedule=constant --set eval.before=false "${quiet[@]}" "$@" >"$OUT/$name.log" 2>&1
  "$BIN" export "$OUT/$name/checkpoints/step-$(printf %08d "$steps")" --out "$OUT/$name-model" --force >/dev/null
}

# rl NAME MODEL [--set ...]: STEPS RL steps from MODEL, evaluated at the start and every EVERY steps.
rl() {
  local name=$1 model=$2
  shift 2
  rm -rf "${OUT:?}/$name"
  "$BIN" train --config configs/demo.yaml --model "$model" --run-dir "$OUT/$name" --set sft.steps=0 \
    --steps "$STEPS" --set train.eval_every="$EVERY" --set train.checkpoint_every=0 --set train.export=false \
    "${quiet[@]}" "$@" >"$OUT/$name.log" 2>&1
}

# table RUN...: held-out score of each run per RL step, and its largest context in tokens.
table() {
  python3 - "$OUT" "$@" <<'EOF'
import json, sys
out, runs = sys.argv[1], sys.argv[2:]
scores, ctx = {}, {}
for r in runs:
    scores[r], ctx[r] = {}, 0
    for line in open(f"{out}/{r}/metrics.jsonl"):
        m = json.loads(line)
        if "val/score" in m:
            scores[r][m["step"]] = m["val/score"]
        ctx[r] = max(ctx[r], m.get("context/max_tokens/max", 0))
steps = sorted(set().union(*[s.keys() for s in scores.values()]))
print("| RL step | " + " | ".join(runs) + " |")
print("|---:|" + "---:|" * len(runs))
for s in steps:
    print(f"| {s} | " + " | ".join("%.3f" % scores[r][s] if s in scores[r] else "" for r in runs) + " |")
print("| largest context (tokens) | " + " | ".join("%d" % ctx[r] for r in runs) + " |")
EOF
}

three=(--set env.factors=3 --set rollout.max_turns=4)
full=(--set rollout.condenser.type=full)
last1=(--set rollout.condenser.type=last_n --set rollout.condenser.keep_last_n=1)

keep_last_1() {
  warm warm3last1 "$SFT_STEPS" "${three[@]}" "${last1[@]}"
  rl keep_last_1 "$OUT/warm3last1-model" "${three[@]}" "${last1[@]}" --set advantage.estimator=grpo_multiturn
  rl mt_grpo "$OUT/warm3last1-model" "${three[@]}" "${last1[@]}" --set advantage.estimator=mt_grpo
}
full_history() {
  warm warm3 "$SFT_STEPS" "${three[@]}" "${full[@]}"
  rl full "$OUT/warm3-model" "${three[@]}" "${full[@]}"
}

keep_last_1 &
a=$!
full_history &
b=$!
wait "$a"
wait "$b"
echo "contexts (calc_mult, 3 factors; each after $SFT_STEPS SFT steps on its own contexts):"
table full keep_last_1
echo
echo "estimators (from the keep-last-1 warm-up):"
table keep_last_1 mt_grpo
