#!/usr/bin/env bash
# Evaluate a model or a run's checkpoint with mtgrpo, driven by environment variables:
#
#   CHECKPOINT=runs/train scripts/eval.sh                  # the run's newest checkpoint, its own settings
#   MODEL=runs/train/model ENV_NAME=calc_mult scripts/eval.sh --tasks 200
#   MODEL=models/qwen VAL_DATA=test.parquet SAMPLES=8 scripts/eval.sh --greedy=false --temperature 0.7
#
# CHECKPOINT (a checkpoint or run directory) or MODEL must be set; VAL_DATA, ENV_NAME, SEED and
# GPUS are read by the binary itself; SAMPLES sets the samples per task (pass@k). Arguments are
# passed to `mtgrpo eval`. It runs from any directory: paths are the caller's; MODEL may also be
# a Hugging Face Hub id (ORG/NAME).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

BIN=${MTGRPO_BIN:-$root/bin/mtgrpo}
if [[ ! -x $BIN ]]; then
	make -C "$root" build
fi

args=()
if [[ -n ${CHECKPOINT:-} ]]; then
	args+=(--checkpoint "$CHECKPOINT")
elif [[ -z ${MODEL:-} ]]; then
	echo "scripts/eval.sh: set CHECKPOINT (a checkpoint or run directory) or MODEL (a model directory or a Hub id ORG/NAME)" >&2
	exit 2
fi
if [[ -n ${SAMPLES:-} ]]; then
	args+=(--samples "$SAMPLES")
fi
if [[ -n ${GPUS:-} && ${GPUS} != cpu ]]; then
	export CUDA_VISIBLE_DEVICES=$GPUS
	export GPUS=0
fi

exec "$BIN" eval "${args[@]}" "$@"
