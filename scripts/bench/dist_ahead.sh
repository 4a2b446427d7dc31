#!/usr/bin/env bash
# Rollout ahead of training against plain data parallel, two CPU processes (Gloo), side by side:
# ROUNDS rounds, each running both settings once, on the tiny model (calc_mult, 4 tasks × 4
# trajectories, 64 new tokens, STEPS RL steps). Prints the mean step time of each run (steps 2..N:
# the first step of rollout ahead has nothing generated ahead yet). docs/bench/dist.md has figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${MTGRPO_BIN:-bin/mtgrpo}
ROUNDS=${ROUNDS:-2} STEPS=${STEPS:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$BIN" init --preset tiny --seed 1 --out "$work/model" >/dev/null
common=(--model "$work/model" --env calc_mult --threads 1 --seed 3 --steps "$STEPS" --set rollout.tasks=4
  --set rollout.group=4 --set rollout.max_new_tokens=64 --set data.train_size=64 --set data.val_size=2
  --set eval.before=false --set train.report=false --set train.export=false --set train.checkpoint_every=0)
mean_step() { # mean timing_s/step over steps 2..N of a run directory
  python3 -c 'import json,sys
v=[json.loads(l).get("timing_s/step") for l in open(sys.argv[1]+"/metrics.jsonl")]
v=[x for x in v if x is not None][1:]
print("%.3f" % (sum(v)/len(v)))' "$1"
}
for r in $(seq "$ROUNDS"); do
  MTGRPO_PROGRESS=0 "$BIN" train --nproc 2 "${common[@]}" --run-dir "$work/dp$r" >/dev/null 2>&1
  MTGRPO_PROGRESS=0 "$BIN" train --nproc 2 "${common[@]}" --set dist.rollout_ranks=1 --set loss.is=token_truncate \
    --run-dir "$work/ahead$r" >/dev/null 2>&1
  echo "round $r: data parallel $(mean_step "$work/dp$r") s/step, rollout ahead $(mean_step "$work/ahead$r") s/step"
done
