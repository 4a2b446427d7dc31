#!/usr/bin/env bash
# Learning curves of the tiny demo model on calc_mult, wiki_qa, FrozenLake and GSM8K-style
# questions: the tables of docs/bench/learning.md's "RL after imperfect demonstrations" (demos),
# "Estimators and contexts" (contexts, estimators), "MT-GRPO against trajectory-level GRPO on
# wiki_qa" (wikiqa), "PPO on FrozenLake" (lake) and "Single-turn GRPO on GSM8K-style questions"
# (gsm8k).
#
#   scripts/bench/learning.sh [demos|lora|contexts|wikiqa|lake|gsm8k|all]   (default all: demos and contexts)
#
#   demos       the demo's recipe (30% of the demonstrations without the calculator, sampled
#               evaluation) with seeds SEEDS: an SFT_DEMO_STEPS-step warm-up, then STEPS RL steps
#               of grpo_multiturn, and of mt_grpo for the first two seeds. Held-out score and tool
#               calls per episode every EVERY RL steps. About 25 minutes on 2 cores.
#
#   lora        the demo's recipe with seeds LORA_SEEDS (0 1): from each seed's warm-up (demos' own
#               when it is there: OUT/demo_sN-model), STEPS RL steps of full training (optim.lr 1e-4, the demo's) and of
#               LoRA adapters (rank LORA_RANK, alpha 2×rank, every linear layer, optim.lr LORA_LR),
#               side by side. Sampled held-out score and tool calls every EVERY RL steps.
#
# On three factors (two calculator calls, then the answer: 3 turns), with every demonstration
# calling the calculator and greedy evaluation:
#
#   contexts    STEPS RL steps with the full history and with keep-last-1 condensed contexts,
#               each after a warm-up of SFT_STEPS steps (constant rate) on demonstrations played
#               with its own contexts (a model warmed up on full histories scores 0 on keep-last-1
#               contexts).
#   estimators  from the keep-last-1 warm-up, STEPS RL steps with trajectory-level multi-turn GRPO
#               (grpo_multiturn, the contexts comparison's keep-last-1 run) and with MT-GRPO
#               (mt_grpo, turn-level credit).
#
# On wiki_qa (search for the question's country, then answer from the passages found):
#
#   wikiqa      for each seed of WIKI_SEEDS, one warm-up of SFT_WIKI_STEPS steps on the
#               demonstrations of WIKI_TRAIN questions over WIKI_COUNTRIES invented countries
#               (env.countries), of which 30% answer at once without searching (env.direct_demos), then from it STEPS
#               RL steps with trajectory-level multi-turn GRPO (grpo_multiturn) and STEPS with
#               MT-GRPO (mt_grpo, turn reward: the search call ran and its result holds the
#               answer), one run at a time. Held-out score, the share of episodes whose search
#               ran, and tool calls per episode every EVERY RL steps.
#
# On FrozenLake (LAKE_SIZE x LAKE_SIZE, default 3x3; firm ice, up to 5 turns of up to 3 moves;
# reward 1 at the goal):
#
#   lake        for each seed of LAKE_SEEDS, one warm-up of SFT_LAKE_STEPS steps on shortest-path
#               demonstrations of which 30% start with a wrong move, then from it STEPS RL steps
#               each of multi-turn GRPO (grpo_multiturn), PPO with token-level GAE and PPO with
#               bi-level GAE (advantage.bi_level, turn gamma 0.95). Held-out score and turns per
#               episode every EVERY RL steps, on the 256 generated validation lakes less those
#               that are training lakes (3x3 lakes repeat: about 100 are left).
#
# On GSM8K-style word problems (one turn, no tool: the answer after "####"):
#
#   gsm8k       for each seed of GSM_SEEDS (side by side), one warm-up of SFT_GSM_STEPS steps on
#               worked solutions of which 30% state the answer at once, then STEPS RL steps of
#               single-turn GRPO (grpo). Every number of the problems is at most GSM_MAX
#               (env.max_number, default 20; 0: the templates' own ranges, up to 1728). Held-out
#               score and response length every EVERY RL steps, on the 256 generated validation
#               problems less those that are training problems.
#
# The model and every other setting are configs/demo.yaml's. Every run evaluates on the same
# held-out tasks every EVERY RL steps and before the first RL step. Prints one table per
# comparison: held-out score per RL step, and each run's largest context (or tool calls). Runs
# stay under OUT. Warm-ups run side by side, one thread each: about 20 minutes on 2 cores; each
# checkpoints every WARM_EVERY (100) steps, and running the script again resumes one that was
# stopped and reuses one that finished.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${MTGRPO_BIN:-bin/mtgrpo}
OUT=${OUT:-runs/bench-learning}
WHAT=${1:-all}
case "$WHAT" in demos | contexts | wikiqa | lake | gsm8k | lora | all) ;; *) echo "usage: $0 [demos|contexts|wikiqa|lake|gsm8k|lora|all]" >&2; exit 2 ;; esac
SFT_STEPS=${SFT_STEPS:-560} SFT_DEMO_STEPS=${SFT_DEMO_STEPS:-800} SEEDS=${SEEDS:-0 1 2}
SFT_WIKI_STEPS=${SFT_WIKI_STEPS:-600} WIKI_SEEDS=${WIKI_SEEDS:-0} WIKI_COUNTRIES=${WIKI_COUNTRIES:-1000} WIKI_TRAIN=${WIKI_TRAIN:-2048}
SFT_LAKE_STEPS=${SFT_LAKE_STEPS:-800} LAKE_SEEDS=${LAKE_SEEDS:-0 1} LAKE_SIZE=${LAKE_SIZE:-3}
SFT_GSM_STEPS=${SFT_GSM_STEPS:-800} GSM_SEEDS=${GSM_SEEDS:-0 1} GSM_MAX=${GSM_MAX:-20}
LORA_SEEDS=${LORA_SEEDS:-0 1} LORA_RANK=${LORA_RANK:-16} LORA_LR=${LORA_LR:-1e-3}
STEPS=${STEPS:-30} EVERY=${EVERY:-5} WARM_EVERY=${WARM_EVERY:-100}
export MTGRPO_PROGRESS=0 MTGRPO_THREADS=1
mkdir -p "$OUT"
quiet=(--set train.report=false --set train.samples=0)

# waitall PID...: waits for each run, then fails if any failed: a run that fails or is killed
# neither stops the script while its twin still runs nor goes unnoticed.
waitall() {
  local p rc=0
  for p; do wait "$p" || rc=$?; done
  return "$rc"
}

# warm NAME STEPS [--set ...]: STEPS warm-up steps (and the one RL step a run needs), exported as
# OUT/NAME-model from the checkpoint at the end of the warm-up. It checkpoints every WARM_EVERY
# steps, and a warm-up that was stopped (OUT/NAME holds a checkpoint but the end's is missing)
# resumes from its newest checkpoint, bit for bit as if it had not stopped.
warm() {
  local name=$1 steps=$2 end
  shift 2
  end="$OUT/$name/checkpoints/step-$(printf %08d "$steps")"
  rm -rf "${OUT:?}/$name-model"
  if [ ! -d "$end" ] && compgen -G "$OUT/$name/checkpoints/step-*" >/dev/null; then
    echo "resuming the warm-up $OUT/$name" >&2
    "$BIN" train --resume --run-dir "$OUT/$name" >>"$OUT/$name.log" 2>&1
  elif [ ! -d "$end" ]; then
    rm -rf "${OUT:?}/$name"
    "$BIN" train --config configs/demo.yaml --run-dir "$OUT/$name" --set sft.steps="$steps" --steps 1 \
      --set train.checkpoint_every="$WARM_EVERY" --set train.keep_checkpoints=2 --set train.export=false \
      --set eval.before=false "${quiet[@]}" "$@" >"$OUT/$name.log" 2>&1
  fi
  "$BIN" export "$end" --out "$OUT/$name-model" --force >/dev/null
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
# TOOLS=1 shows each run's held-out tool calls per episode beside its score instead of contexts;
# TOOLS=2 also the share of episodes with a tool call that ran (tool_success); TOOLS=3 turns per
# episode instead; TOOLS=4 response length in tokens.
table() {
  TOOLS=${TOOLS:-0} python3 - "$OUT" "$@" <<'EOF'
import json, os, sys
out, runs = sys.argv[1], sys.argv[2:]
tools = int(os.environ["TOOLS"])
kinds = {0: ("score",), 1: ("score", "tools"), 2: ("score", "ran", "tools"), 3: ("score", "turns"), 4: ("score", "length")}[tools]
heads = {"score": None, "ran": "search ran", "tools": "tool calls", "turns": "turns", "length": "response tokens"}
keys = {"score": "val/score", "ran": "val/tool_success/mean", "tools": "val/tool_call_counts/mean",
        "turns": "val/num_turns/mean", "length": "val/response_length/mean"}
vals, ctx = {}, {}
for r in runs:
    vals[r], ctx[r] = {}, 0
    for line in open(f"{out}/{r}/metrics.jsonl"):
        m = json.loads(line)
        if "val/score" in m:
            vals[r][m["step"]] = {k: m.get(keys[k], float("nan")) for k in kinds}
        ctx[r] = max(ctx[r], m.get("context/max_tokens/max", 0))
steps = sorted(set().union(*[s.keys() for s in vals.values()]))
cols = [(r, k) for r in runs for k in kinds]
print("| RL step | " + " | ".join(heads[k] or r for r, k in cols) + " |")
print("|---:|" + "---:|" * len(cols))
def cell(r, k, s):
    if s not in vals[r]:
        return ""
    return {"tools": "%.2f", "turns": "%.2f", "length": "%.0f"}.get(k, "%.3f") % vals[r][s][k]
for s in steps:
    print(f"| {s} | " + " | ".join(cell(r, k, s) for r, k in cols) + " |")
if not tools:
    print("| largest context (tokens) | " + " | ".join("%d" % ctx[r] for r in runs) + " |")
EOF
}

three=(--set env.factors=3 --set rollout.max_turns=4 --set env.direct_demos=0 --set sft.schedule=constant
  --set eval.greedy=true --set eval.samples=1)
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

# demos: the demo's recipe on each seed (warm-ups side by side), then its RL runs two at a time.
demos() {
  local s pids=() runs=() n=0
  for s in $SEEDS; do
    warm "demo_s$s" "$SFT_DEMO_STEPS" --seed "$s" &
    pids+=($!)
  done
  waitall "${pids[@]}"
  for s in $SEEDS; do
    rl "grpo_s$s" "$OUT/demo_s$s-model" --seed "$s" &
    pids=($!)
    runs+=("grpo_s$s")
    if [ "$n" -lt 2 ]; then
      rl "mt_grpo_s$s" "$OUT/demo_s$s-model" --seed "$s" --set advantage.estimator=mt_grpo &
      pids+=($!)
      runs+=("mt_grpo_s$s")
    fi
    waitall "${pids[@]}"
    n=$((n + 1))
  done
  echo "the demo's recipe (calc_mult, 2 factors, 30% direct demonstrations; sampled held-out score):"
  TOOLS=1 table "${runs[@]}"
}

contexts() {
  keep_last_1 &
  local a=$!
  full_history &
  waitall "$a" $!
  echo "contexts (calc_mult, 3 factors; each after $SFT_STEPS SFT steps on its own contexts):"
  table full keep_last_1
  echo
  echo "estimators (from the keep-last-1 warm-up):"
  table keep_last_1 mt_grpo
}

# wikiqa: on wiki_qa, for each seed one warm-up, then grpo_multiturn and mt_grpo from it, one
# run at a time. 2048 training tasks drawn from the 4000 questions of 1000 countries leave about
# 60% of the 64 validation questions unseen and too many countries to memorise (WIKI_COUNTRIES=100
# WIKI_TRAIN=256 SFT_WIKI_STEPS=300 is the earlier recipe, whose warm-up memorised its questions);
# 120 new tokens fit the search call (about 80 bytes with the country).
wiki=(--set env.name=wiki_qa --set env.countries="$WIKI_COUNTRIES" --set data.train_size="$WIKI_TRAIN"
  --set rollout.max_new_tokens=120 --set rollout.max_context_tokens=1280)
wikiqa() {
  local s runs=()
  for s in $WIKI_SEEDS; do
    warm "wiki_s$s" "$SFT_WIKI_STEPS" --seed "$s" "${wiki[@]}"
    python3 -c 'import json, sys; l = [json.loads(x) for x in open(sys.argv[1])]
print("seed %s: SFT loss %.3f at step 1, %.3f at the end" % (sys.argv[2], l[0]["sft/loss"], [m for m in l if "sft/loss" in m][-1]["sft/loss"]))' \
      "$OUT/wiki_s$s/metrics.jsonl" "$s"
    rl "wiki_grpo_s$s" "$OUT/wiki_s$s-model" --seed "$s" "${wiki[@]}"
    rl "wiki_mt_grpo_s$s" "$OUT/wiki_s$s-model" --seed "$s" "${wiki[@]}" --set advantage.estimator=mt_grpo
    runs+=("wiki_grpo_s$s" "wiki_mt_grpo_s$s")
  done
  echo "wiki_qa (30% direct demonstrations; sampled held-out score, share of episodes whose search ran):"
  TOOLS=2 table "${runs[@]}"
}

# lake: on FrozenLake, for each seed one warm-up, then grpo_multiturn, PPO with token-level GAE
# and PPO with bi-level GAE from it, two runs side by side. An answer is at most 39 bytes
# ("<answer>Right || Right || Down</answer>"), so 48 new tokens bound a turn.
lakeset=(--set env.name=frozenlake --set env.lake_size="$LAKE_SIZE" --set rollout.max_turns=5 --set rollout.max_new_tokens=48
  --set data.val_size=256)
lake() {
  local s runs=()
  for s in $LAKE_SEEDS; do
    warm "lake_s$s" "$SFT_LAKE_STEPS" --seed "$s" "${lakeset[@]}"
    rl "lake_grpo_s$s" "$OUT/lake_s$s-model" --seed "$s" "${lakeset[@]}" &
    local a=$!
    rl "lake_gae_s$s" "$OUT/lake_s$s-model" --seed "$s" "${lakeset[@]}" --set advantage.estimator=gae &
    waitall "$a" $!
    rl "lake_bilevel_s$s" "$OUT/lake_s$s-model" --seed "$s" "${lakeset[@]}" --set advantage.estimator=gae \
      --set advantage.bi_level=true
    runs+=("lake_grpo_s$s" "lake_gae_s$s" "lake_bilevel_s$s")
  done
  echo "FrozenLake (firm ice, 30% of demonstrations start with a wrong move; sampled held-out score, turns per episode):"
  TOOLS=3 table "${runs[@]}"
}

# gsm8k: single-turn GRPO on GSM8K-style questions, for each seed one warm-up, then RL from it;
# the seeds side by side. A worked solution is at most about 230 bytes.
gsmset=(--set env.name=gsm8k --set env.max_number="$GSM_MAX" --set rollout.max_turns=1 --set rollout.max_new_tokens=256
  --set rollout.condenser.type=full --set data.val_size=256)
gsm8k() {
  local s pids=() runs=()
  for s in $GSM_SEEDS; do
    (warm "gsm_s$s" "$SFT_GSM_STEPS" --seed "$s" "${gsmset[@]}" &&
      rl "gsm_grpo_s$s" "$OUT/gsm_s$s-model" --seed "$s" "${gsmset[@]}" --set advantage.estimator=grpo) &
    pids+=($!)
    runs+=("gsm_grpo_s$s")
  done
  waitall "${pids[@]}"
  echo "GSM8K-style questions, numbers up to $GSM_MAX (0: the templates' own, up to 1728; 30% of demonstrations answer at once; sampled held-out score, response length):"
  TOOLS=4 table "${runs[@]}"
}

# lora: full training against LoRA adapters from the same warm-ups, with the same seeds; the
# warm-ups side by side, then each seed's two RL runs side by side.
lora() {
  local s pids=() runs=()
  for s in $LORA_SEEDS; do
    if [ ! -f "$OUT/demo_s$s-model/config.json" ]; then
      warm "demo_s$s" "$SFT_DEMO_STEPS" --seed "$s" &
      pids+=($!)
    fi
  done
  waitall "${pids[@]}"
  for s in $LORA_SEEDS; do
    rl "full_s$s" "$OUT/demo_s$s-model" --seed "$s" &
    local a=$!
    rl "lora_s$s" "$OUT/demo_s$s-model" --seed "$s" --set lora.rank="$LORA_RANK" --set lora.alpha="$((2 * LORA_RANK))" \
      --set lora.target_modules=all-linear --set optim.lr="$LORA_LR" &
    waitall "$a" $!
    runs+=("full_s$s" "lora_s$s")
  done
  echo "full training against LoRA (rank $LORA_RANK, alpha $((2 * LORA_RANK)), all linear layers, lr $LORA_LR) from the demo's warm-ups; sampled held-out score, tool calls:"
  TOOLS=1 table "${runs[@]}"
}

case "$WHAT" in
demos) demos ;;
lora) lora ;;
wikiqa) wikiqa ;;
lake) lake ;;
gsm8k) gsm8k ;;
contexts) contexts ;;
all) demos && echo && contexts ;;
esac
