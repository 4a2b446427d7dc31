#!/usr/bin/env bash
# Train with mtgrpo, driven by environment variables as the MT-GRPO scripts are:
#
#   MODEL=models/qwen DATA=train.parquet VAL_DATA=test.parquet BATCH_SIZE=8 EPOCHS=2 LR=1e-6 \
#       scripts/train.sh --config configs/multiturn_grpo_trainer.yaml
#
# Every variable is optional (README: "Environment variables" has the table and defaults); the
# binary reads them itself, so `mtgrpo train` behaves the same without this script. What the
# script adds: a default model (the tiny random model, written once to models/tiny), the binary
# built if missing, and GPU selection through GPUS / N_GPUS. Arguments are passed to
# `mtgrpo train` (flags and KEY=VALUE settings override the variables).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${MTGRPO_BIN:-bin/mtgrpo}
if [[ ! -x $BIN ]]; then
	make build
fi

if [[ -z ${MODEL:-} ]]; then
	MODEL=models/tiny
	if [[ ! -f $MODEL/config.json ]]; then
		"$BIN" init --preset tiny --seed "${SEED:-0}" --out "$MODEL"
	fi
fi
export MODEL

# One process per GPU is the scale-out launcher's job; this build trains on one device.
N_GPUS=${N_GPUS:-1}
if [[ $N_GPUS != 1 ]]; then
	echo "scripts/train.sh: N_GPUS=$N_GPUS: multi-GPU training is not in this build yet; use N_GPUS=1 (GPUS=<index> picks the GPU)" >&2
	exit 2
fi
export N_GPUS
if [[ -n ${GPUS:-} && ${GPUS} != cpu ]]; then
	export CUDA_VISIBLE_DEVICES=$GPUS
	export GPUS=0 # the one visible device
fi

exec "$BIN" train "$@"
