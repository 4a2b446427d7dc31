#!/usr/bin/env bash
# PPO with a critic on the demo's recipe (docs/bench/learning.md, "PPO with a critic"): the
# critic's health per step, and held-out curves of PPO (token-level and bi-level GAE) against
# multi-turn GRPO from one warm-up.
#
#   scripts/bench/critic.sh [critic|curves|all]      (default all)
#
#   critic   CRITIC_STEPS RL steps of PPO with token-level GAE at critic.lr 1e-5 (verl's fixed
#            rate) and at the default (10x the actor's 1e-4): critic/vf_loss, vf_explained_var,
#            values and returns mean per step. No evaluation.
#   curves   STEPS RL steps each of grpo_multiturn, gae (token-level) and gae with bi_level, held-out
#            score (4 samples per task at temperature 1, the demo's evaluation) every EVERY steps.
#
# Every run starts from the same warm-up: the demo's 800 SFT steps with seed SEED (default 2),
# exported once and reused. RL runs with seed RL_SEED (default SEED; another draws other tasks and
# episodes from the same warm-up); their directories end in _sRL_SEED. One thread per run, one run
# at a time. Runs stay under OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${MTGRPO_BIN:-bin/mtgrpo}
OUT=${OUT:-runs/bench-critic}
WHAT=${1:-all}
case "$WHAT" in critic | curves | all) ;; *) echo "usage: $0 [critic|curves|all]" >&2; exit 2 ;; esac
SEED=${SEED:-2} RL_SEED=${RL_SEED:-${SEED:-2}} STEPS=${STEPS:-30} EVERY=${EVERY:-10} CRITIC_STEPS=${CRITIC_STEPS:-10}
export MTGRPO_PROGRESS=0 MTGRPO_THREADS=1
mkdir -p "$OUT"
quiet=(--set train.report=false --set train.samples=0 --set train.export=false --set train.checkpoint_every=0)

warm="$OUT/warm_s$SEED"
if [ ! -f "$warm-model/config.json" ]; then
  rm -rf "$warm" "$warm-model"
  "$BIN" train --config configs/demo.yaml --run-dir "$warm" --seed "$SEED" --steps 1 \
    --set train.checkpoint_every=800 --set train.keep_checkpoints=2 --set train.export=false \
    --set eval.before=false --set train.report=false --set train.samples=0 >"$warm.log" 2>&1
  "$BIN" export "$warm/checkpoints/step-00000800" --out "$warm-model" --force >/dev/null
fi

# rl NAME STEPS [--set ...]: STEPS RL steps from the warm-up.
rl() {
  local name=$1_s$RL_SEED steps=$2
  shift 2
  rm -rf "${OUT:?}/$name"
  "$BIN" train --config configs/demo.yaml --model "$warm-model" --seed "$RL_SEED" --run-dir "$OUT/$name" \
    --set sft.steps=0 --steps "$steps" "${quiet[@]}" "$@" >"$OUT/$name.log" 2>&1
}

# show RUN KEY...: one row per step of RUN's metrics KEY....
show() {
  python3 - "$OUT/$1_s$RL_SEED/metrics.jsonl" "${@:2}" <<'PY'
import json, sys
path, keys = sys.argv[1], sys.argv[2:]
print("| step | " + " | ".join(keys) + " |")
print("|---:|" + "---:|" * len(keys))
for line in open(path):
    m = json.loads(line)
    if any(k in m for k in keys):
        print("| %d | " % m["step"] + " | ".join("%.3f" % m[k] if k in m else "" for k in keys) + " |")
PY
}

critic() {
  local keys=(critic/vf_loss critic/vf_explained_var critic/values/mean critic/returns/mean critic/vf_clipfrac)
  rl critic_1e-5 "$CRITIC_STEPS" --set advantage.estimator=gae --set critic.lr=1e-5 --set train.eval_every=0 --set eval.before=false
  rl critic_default "$CRITIC_STEPS" --set advantage.estimator=gae --set train.eval_every=0 --set eval.before=false
  echo "critic.lr 1e-5:"
  show critic_1e-5 "${keys[@]}"
  echo
  echo "critic.lr default (10 x optim.lr = 1e-3):"
  show critic_default "${keys[@]}"
}

curves() {
  local ev=(--set train.eval_every="$EVERY")
  rl grpo "$STEPS" "${ev[@]}" --set advantage.estimator=grpo_multiturn
  rl gae "$STEPS" "${ev[@]}" --set advantage.estimator=gae
  rl gae_bilevel "$STEPS" "${ev[@]}" --set advantage.estimator=gae --set advantage.bi_level=true
  for r in grpo gae gae_bilevel; do
    echo "$r:"
    show "$r" val/score val/tool_call_counts/mean
  done
  echo "critic, token-level and bi-level GAE:"
  show gae critic/vf_explained_var critic/values/mean critic/returns/mean
  show gae_bilevel critic/vf_explained_var critic/values/mean critic/returns/mean
}

case "$WHAT" in
critic) critic ;;
curves) curves ;;
all) critic && echo && curves ;;
esac
