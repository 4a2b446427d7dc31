#!/usr/bin/env bash
# The training-update benchmark of docs/bench/grpo.md: mtgrpo's update (model.Train + loss +
# Pass.Backward + AdamW.Step, scripts/bench/trainstep) against the same model, weights, batch and
# update in plain PyTorch (scripts/bench/train_step.py, Debian's python3-torch 1.13: the libtorch the
# shim links), alternated step by step (scripts/bench/interleave.py; PyTorch is the reference).
#
#   scripts/bench/train_step.sh
#   VARIANTS="keep recompute:-head-budget=-1 ckpt:-checkpoint" REPS=4 STEPS=4 scripts/bench/train_step.sh
#   CASE=mixed VARIANTS="padded packed:-packed" scripts/bench/train_step.sh
#   THREADS=1 BLAS_THREADS=2 scripts/bench/train_step.sh
#
# CASE      equal: 8 sequences of 256 tokens (plain causal attention on both sides); mixed: 8 of 32 to
#           256 (1,152 tokens), which PyTorch pads to 256 with an attention mask
# VARIANTS  the Go sides, each NAME or NAME:FLAGS (trainstep flags, commas for spaces)
# THREADS   libtorch's intra-op threads on every side (torch.set_num_threads, OMP_NUM_THREADS)
# BLAS_THREADS  OpenBLAS' own pool on every side (OPENBLAS_NUM_THREADS)
#           Both default to 1: the core count for both oversubscribes the cores, and with one of
#           each the CPU time per step depends least on what else the machine runs.
# MMAP_THRESHOLD  if set, glibc's MALLOC_MMAP_THRESHOLD_ on every side (fixes the threshold, so that
#           RSS follows live memory in every process alike)
# TRAINSTEP  a trainstep binary to use instead of building build/trainstep
# Results and raw replies go to build/bench_train_step/.
set -euo pipefail
cd "$(dirname "$0")/../.."
CASE=${CASE:-equal}
VARIANTS=${VARIANTS:-go}
THREADS=${THREADS:-1}
BLAS_THREADS=${BLAS_THREADS:-1}
REPS=${REPS:-3}
STEPS=${STEPS:-4}
PY=${PY:-/usr/bin/python3}
out=build/bench_train_step
case $CASE in
equal) lens="" ;;
mixed) lens="-lens 32,256,64,224,96,192,128,160" ;;
*) echo "CASE must be equal or mixed" >&2; exit 2 ;;
esac
mkdir -p "$out"
ts=${TRAINSTEP:-build/trainstep}
[ -n "${TRAINSTEP:-}" ] || go build -o "$ts" ./scripts/bench/trainstep
[ -f "$out/$CASE/ids.json" ] || "$ts" -init "$out/$CASE" $lens
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$BLAS_THREADS
# The same OpenBLAS kernels on every side: mtgrpo's processes set OPENBLAS_CORETYPE where OpenBLAS
# took the CPU for an older one (torch/blascore.go); PyTorch is given the same.
core=$("$ts" -blas-core)
[ -z "$core" ] || export OPENBLAS_CORETYPE=$core
[ -z "${MMAP_THRESHOLD:-}" ] || export MALLOC_MMAP_THRESHOLD_=$MMAP_THRESHOLD
sides=()
for v in $VARIANTS; do
  name=${v%%:*}
  flags=""
  [[ $v == *:* ]] && flags=${v#*:}
  sides+=("$ts -model $out/$CASE -threads $THREADS -name $name ${flags//,/ }")
done
sides+=("$PY -P scripts/bench/train_step.py --model $out/$CASE --threads $THREADS")
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "case $CASE, malloc mmap threshold ${MMAP_THRESHOLD:-dynamic}"
"$PY" -P scripts/bench/interleave.py --reps "$REPS" --steps "$STEPS" --raw "$out/raw.jsonl" "${sides[@]}"
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
