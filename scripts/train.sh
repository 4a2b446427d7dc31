#!/usr/bin/env bash
# Train with mtgrpo, driven by environment variables as the MT-GRPO scripts are:
#
#   MODEL=models/qwen DATA=train.parquet VAL_DATA=test.parquet BATCH_SIZE=8 EPOCHS=2 LR=1e-6 \
#       scripts/train.sh --config configs/multiturn_grpo_trainer.yaml
#
# Every variable is optional (README: "Environment variables" has the table and defaults); the
# binary reads them itself, so `mtgrpo train` behaves the same without this script. What the
# script adds: a default model (the tiny random model, written once to models/tiny), the binary
# built if missing. Arguments are passed to
# `mtgrpo train` (flags and KEY=VALUE settings override the variables). It runs from any
# directory: paths (MODEL=./mymodel, DATA, --config) are the caller's, and models/ and runs/ are
# written under the caller's directory; MODEL may also be a Hugging Face Hub id (ORG/NAME).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

BIN=${MTGRPO_BIN:-$root/bin/mtgrpo}
if [[ ! -x $BIN ]]; then
	make -C "$root" build
fi

if [[ -z ${MODEL:-} ]]; then
	MODEL=models/tiny
	if [[ ! -f $MODEL/config.json ]]; then
		"$BIN" init --preset tiny --seed "${SEED:-0}" --out "$MODEL"
	fi
fi
export MODEL

# GPUS (an index, a list such as 0,1,2,3, or cpu) and N_GPUS (processes, one per GPU) are read by
# the binary: `mtgrpo train` starts N_GPUS data-parallel processes itself (docs/distributed.md).
exec "$BIN" train "$@"
