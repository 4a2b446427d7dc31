#!/usr/bin/env bash
# Tests of scripts/libtorch.sh's decisions (run by `make test`): fake Debian trees, fake PyTorch
# packages imported by the real python3, fake unpacked libtorch directories. Each case checks the
# printed assignments or that the failure message names what to install or set.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

real_python=$(command -v python3) || { echo "libtorch_test: needs python3 (scripts/setup.sh installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A python3 that sees only the standard library and PYTHONPATH (-S: no site-packages), so that a
# PyTorch installed on this machine cannot change the outcome.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nexec %s -S "$@"\n' "$real_python" >"$tmp/bin/python3"
chmod +x "$tmp/bin/python3"

# Fake Debian libtorch-dev under $tmp/debian/usr.
deb=$tmp/debian/usr
mkdir -p "$deb/include/torch/csrc/api/include" "$deb/lib/x86_64-linux-gnu"
: >"$deb/lib/x86_64-linux-gnu/libtorch.so"
debcuda=$tmp/debian-cuda/usr # libtorch-cuda-dev (contrib) instead of libtorch-dev
mkdir -p "$debcuda/include/torch/csrc/api/include" "$debcuda/lib/x86_64-linux-gnu"
: >"$debcuda/lib/x86_64-linux-gnu/libtorch.so"
: >"$debcuda/lib/x86_64-linux-gnu/libtorch_cuda.so"
nodeb=$tmp/nodebian/usr
mkdir -p "$nodeb/include"

# fake_torch DIR [lib] [cuda] [include]: a package named torch in DIR that looks like PyTorch.
fake_torch() {
  local d=$1/torch
  shift
  mkdir -p "$d"
  printf 'def compiled_with_cxx11_abi():\n    return True\n' >"$d/__init__.py"
  local part
  for part in "$@"; do
    case "$part" in
      lib) mkdir -p "$d/lib" && : >"$d/lib/libtorch.so" ;;
      cuda) : >"$d/lib/libtorch_cuda.so" ;;
      include) mkdir -p "$d/include/torch" ;;
    esac
  done
}
fake_torch "$tmp/good" lib include
fake_torch "$tmp/cuda" lib cuda include
fake_torch "$tmp/nolib" include # like Debian's python3-torch: the libraries live in /usr/lib
mkdir -p "$tmp/namespace/torch"  # a plain directory named torch (what the checkout's torch/ is)

# Fake unpacked libtorch.
lt=$tmp/libtorch
mkdir -p "$lt/include/torch" "$lt/lib"
: >"$lt/lib/libtorch.so"
: >"$lt/lib/libc10.so"

fails=0
# run VAR=VALUE... : libtorch.sh from the repository root (where torch/ could shadow PyTorch) with
# only the given variables set among those it reads.
run() {
  env -u LIBTORCH -u MTGRPO_TORCH -u PYTHON -u PYTHONPATH MTGRPO_DEBIAN_PREFIX="$nodeb" \
    PATH="$tmp/bin:$PATH" "$@" "$repo/scripts/libtorch.sh" ${ARGS:-}
}

# expect NAME "VAR=VALUE..." "KEY=VALUE..." : success, and each KEY has VALUE in the output.
expect() {
  local name=$1 vars=$2 want=$3 out kv
  # shellcheck disable=SC2086
  if ! out=$(run $vars 2>&1); then
    echo "FAIL $name: exit $?: $out"
    fails=$((fails + 1))
    return
  fi
  for kv in $want; do
    if ! grep -qxF "$kv" <<<"$out"; then
      echo "FAIL $name: want $kv in:"
      echo "$out"
      fails=$((fails + 1))
      return
    fi
  done
  echo "ok   $name"
}

# expect_fail NAME "VAR=VALUE..." "message part" : exit 2 and the message names the remedy.
expect_fail() {
  local name=$1 vars=$2 msg=$3 out status=0
  # shellcheck disable=SC2086
  out=$(run $vars 2>&1) || status=$?
  if [ "$status" != 2 ] || ! grep -qF -- "$msg" <<<"$out"; then
    echo "FAIL $name: exit $status, want 2 and \"$msg\" in: $out"
    fails=$((fails + 1))
    return
  fi
  echo "ok   $name"
}

# Debian by default; an importable PyTorch never changes that.
expect "default is debian" "MTGRPO_DEBIAN_PREFIX=$deb" \
  "TORCH_SOURCE=debian TORCH_INSTALLED=1 TORCH_LIBDIR=$deb/lib/x86_64-linux-gnu TORCH_ABI=1 TORCH_CUDA=0"
expect "nothing installed: debian, never the checkout's torch/ directory" "" \
  "TORCH_SOURCE=debian TORCH_INSTALLED=0"
expect "pytorch importable, debian not installed: still debian" "PYTHONPATH=$tmp/good" \
  "TORCH_SOURCE=debian TORCH_INSTALLED=0 TORCH_LIBDIR=''"
ARGS=--require expect_fail "debian required but missing" "PYTHONPATH=$tmp/good" "apt-get install libtorch-dev"
ARGS=--require expect "debian required and present" "MTGRPO_DEBIAN_PREFIX=$deb" "TORCH_INSTALLED=1"
expect "debian's CUDA build" "MTGRPO_DEBIAN_PREFIX=$debcuda" "TORCH_SOURCE=debian TORCH_INSTALLED=1 TORCH_CUDA=1"
expect "debian explicitly" "MTGRPO_TORCH=debian MTGRPO_DEBIAN_PREFIX=$deb" "TORCH_SOURCE=debian"

# python only when asked, from the checkout's root, whose torch/ must not shadow the package.
expect "python from the repository root" "MTGRPO_TORCH=python PYTHONPATH=$tmp/good" \
  "TORCH_SOURCE=python TORCH_INSTALLED=1 TORCH_LIBDIR=$tmp/good/torch/lib TORCH_ABI=1 TORCH_CUDA=0"
expect "python with CUDA" "MTGRPO_TORCH=python PYTHONPATH=$tmp/cuda" "TORCH_SOURCE=python TORCH_CUDA=1"
expect_fail "python without torch" "MTGRPO_TORCH=python" "cannot import torch"
expect_fail "python torch without lib/" "MTGRPO_TORCH=python PYTHONPATH=$tmp/nolib" "has no lib/libtorch*.so"
expect_fail "python torch is a namespace package" "MTGRPO_TORCH=python PYTHONPATH=$tmp/namespace" "is not PyTorch"
expect_fail "no such python" "MTGRPO_TORCH=python PYTHON=$tmp/bin/python9" "there is no $tmp/bin/python9"
expect_fail "unknown source" "MTGRPO_TORCH=conda" "unknown MTGRPO_TORCH=conda"

# LIBTORCH.
expect "unpacked libtorch" "LIBTORCH=$lt" "TORCH_SOURCE=libtorch TORCH_LIBDIR=$lt/lib TORCH_ABI=0"
expect_fail "LIBTORCH missing" "LIBTORCH=$tmp/none" "LIBTORCH=$tmp/none is not a directory"
expect_fail "LIBTORCH without libraries" "LIBTORCH=$tmp/good" "has no lib/libtorch*.so"
expect_fail "LIBTORCH and python both" "LIBTORCH=$lt MTGRPO_TORCH=python" "unset one of them"

# The scripts that use it stop with its message, not with an unset variable later on.
for s in setup.sh build_shim.sh; do
  status=0
  out=$(env -u LIBTORCH MTGRPO_TORCH=conda "scripts/$s" 2>&1) || status=$?
  if [ "$status" = 0 ] || ! grep -qF "unknown MTGRPO_TORCH=conda" <<<"$out" || grep -q "unbound variable" <<<"$out"; then
    echo "FAIL $s with a bad MTGRPO_TORCH: exit $status: $out"
    fails=$((fails + 1))
  else
    echo "ok   $s stops with libtorch.sh's message"
  fi
done

if [ "$fails" -gt 0 ]; then
  echo "libtorch_test: $fails failed"
  exit 1
fi
echo "libtorch_test: ok"
