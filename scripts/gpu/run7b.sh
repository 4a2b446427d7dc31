#!/usr/bin/env bash
# The Qwen2.5-7B-shaped run of scripts/gpu/run.sh (its part 7b) on one GPU, with a budget of its
# own (default 480 s: the shim, then the part). The same options and the same pack:
#     scripts/gpu/run.sh --pack          (where Go is set up)
#     scripts/gpu/run7b.sh OUTDIR        (on the CUDA host; --budget SECONDS)
# On the CPU at tiny widths: scripts/gpu/run7b.sh --dry-run OUTDIR (make test runs the part in
# run.sh's dry run). docs/bench/gpu.md says how to read the figures.
exec "$(dirname "$0")/run.sh" --only 7b "$@"
