#!/usr/bin/env bash
# The CPU figures of docs/bench/torch.md: per-call overhead and matmul rate through the Go binding
# against libtorch called directly from C++, and fused vs unfused RMSNorm.
#
#   scripts/bench_torch.sh              (make bench-torch)
#   THREADS=2 scripts/bench_torch.sh    BLAS threads for the matmul (default 1: a steady figure on a
#                                       shared machine; the binding's overhead does not depend on it)
#
# The machine may be busy: every figure is the best of several runs (COUNT, default 8).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-1}
COUNT=${COUNT:-8}
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS

scripts/build_shim.sh bench >/dev/null
go test -c -o build/torch.test ./torch
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg), BLAS threads $THREADS"
build/libtorch_bench
(cd torch && ../build/torch.test -test.run '^$' -test.bench 'CgoCall|AddSmall|Matmul512|RMSNorm|RoPE' \
  -test.benchtime 0.3s -test.count "$COUNT") >build/bench_torch.txt
# Best (lowest ns/op, highest rate) of the runs of each benchmark.
awk '/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  for (i = 3; i < NF; i += 2) {
    v = $i + 0; u = $(i + 1); k = name SUBSEP u
    better = (u ~ /\/s$/) ? (v > best[k]) : (!(k in best) || v < best[k])
    if (better) best[k] = v
    if (!(name in seen)) { seen[name] = 1; order[++n] = name }
    units[name] = units[name] " " u
  }
}
END {
  for (j = 1; j <= n; j++) {
    name = order[j]; line = sprintf("%-32s", name); split(units[name], us, " "); delete done
    for (i in us) if (!(us[i] in done)) { done[us[i]] = 1; line = line sprintf("  %10.4g %s", best[name SUBSEP us[i]], us[i]) }
    print line
  }
}' build/bench_torch.txt
