#!/usr/bin/env bash
# The one place that decides which libtorch mtgrpo builds against.
#
#   (nothing set)             Debian's libtorch: libtorch-dev (CPU), or libtorch-cuda-dev (contrib)
#                             when that is the one installed. scripts/setup.sh installs libtorch-dev.
#   MTGRPO_TORCH=debian       the same, said explicitly
#   MTGRPO_TORCH=python       the libtorch inside the PyTorch of python3 on PATH (PYTHON=... for
#                             another interpreter): GPU hosts, Docker. Never chosen unless asked for.
#   LIBTORCH=/path/libtorch   an unpacked libtorch (include/, lib/libtorch*.so)
#
#   eval "$(scripts/libtorch.sh)"   is wrong: eval hides a failure. Write
#   env=$(scripts/libtorch.sh) && eval "$env"
#
#   scripts/libtorch.sh             prints the assignments below; for Debian's libtorch it does not
#                                   require it to be installed yet (setup.sh asks to install it)
#   scripts/libtorch.sh --require   fails unless the chosen libtorch is installed (build_shim.sh)
#
# Prints shell assignments:
#   TORCH_SOURCE     debian | python | libtorch
#   TORCH_INSTALLED  1 when its headers and libtorch.so are there
#   TORCH_INC        -I flags for the shim
#   TORCH_LIBDIR     directory holding libtorch*.so
#   TORCH_ABI        value for -D_GLIBCXX_USE_CXX11_ABI
#   TORCH_CUDA       1 when libtorch_cuda.so is there
# Every failure exits 2 with a message that names what to install or set.
#
# MTGRPO_DEBIAN_PREFIX (default /usr) moves where Debian's libtorch is looked for; the tests of this
# script (scripts/libtorch_test.sh) point it at a fake tree.
set -euo pipefail

die() {
  printf 'scripts/libtorch.sh: %s\n' "$*" >&2
  exit 2
}

require=0
case "${1:-}" in
  --require) require=1 ;;
  "") ;;
  *) die "unknown argument $1 (want --require or nothing)" ;;
esac

# The source: explicit choices only. A torch importable by python3 is not a reason to use it: the
# Debian default must not depend on what happens to be installed for Python.
if [ -n "${LIBTORCH:-}" ]; then
  case "${MTGRPO_TORCH:-}" in
    "" | libtorch) ;;
    *) die "LIBTORCH=$LIBTORCH and MTGRPO_TORCH=$MTGRPO_TORCH are both set: unset one of them" ;;
  esac
  source=libtorch
else
  source=${MTGRPO_TORCH:-debian}
fi

# libdir_of DIR... prints the first DIR that holds libtorch.so.
libdir_of() {
  local d
  for d in "$@"; do
    if [ -e "$d/libtorch.so" ]; then
      printf '%s' "$d"
      return 0
    fi
  done
  return 1
}

case "$source" in
  debian)
    prefix=${MTGRPO_DEBIAN_PREFIX:-/usr}
    inc="-I$prefix/include -I$prefix/include/torch/csrc/api/include"
    installed=0
    if libdir=$(libdir_of "$prefix"/lib/*-linux-gnu* "$prefix/lib") &&
      [ -d "$prefix/include/torch/csrc/api/include" ]; then
      installed=1
    else
      libdir=
    fi
    if [ "$require" = 1 ] && [ "$installed" = 0 ]; then
      die "Debian's libtorch is not installed (no $prefix/include/torch/csrc/api/include or libtorch.so):" \
        "run scripts/setup.sh (make setup), or apt-get install libtorch-dev libgloo-dev;" \
        "or use another libtorch: LIBTORCH=/path/to/libtorch, or MTGRPO_TORCH=python for the PyTorch of python3"
    fi
    abi=1 # Debian builds everything with the C++11 ABI
    ;;
  libtorch)
    root=$LIBTORCH
    [ -d "$root" ] || die "LIBTORCH=$root is not a directory (want an unpacked libtorch: include/, lib/)"
    libdir=$root/lib
    compgen -G "$libdir/libtorch*.so" >/dev/null ||
      die "LIBTORCH=$root has no lib/libtorch*.so: not an unpacked libtorch (unset LIBTORCH for Debian's)"
    [ -d "$root/include/torch" ] || die "LIBTORCH=$root has no include/torch: not an unpacked libtorch"
    inc="-I$root/include -I$root/include/torch/csrc/api/include"
    installed=1
    command -v nm >/dev/null || die "needs nm (apt-get install binutils) to read the C++ ABI of $libdir/libc10.so"
    # grep -q would close the pipe early and nm's SIGPIPE would fail the test under pipefail.
    if nm -DC "$libdir/libc10.so" 2>/dev/null | grep '__cxx11' >/dev/null; then abi=1; else abi=0; fi
    ;;
  python)
    py=${PYTHON:-python3}
    pypath=$(command -v "$py") || die "MTGRPO_TORCH=python but there is no $py on PATH" \
      "(install PyTorch for a python3, or set PYTHON=/path/to/python; unset MTGRPO_TORCH for Debian's libtorch)"
    # From /, never from the checkout: there Python would import the repository's own torch/
    # directory as a namespace package instead of PyTorch.
    if ! out=$(cd / && "$pypath" -c 'import os, torch
print(os.path.dirname(torch.__file__ or ""))
print(int(torch.compiled_with_cxx11_abi()) if hasattr(torch, "compiled_with_cxx11_abi") else "")' 2>&1); then
      die "MTGRPO_TORCH=python but $pypath cannot import torch: $(printf '%s' "$out" | tail -1)." \
        "Install PyTorch for it (pip install torch), set PYTHON to one that has it, or unset MTGRPO_TORCH for Debian's libtorch"
    fi
    root=$(printf '%s\n' "$out" | sed -n 1p)
    abi=$(printf '%s\n' "$out" | sed -n 2p)
    [ -n "$root" ] && [ -n "$abi" ] ||
      die "MTGRPO_TORCH=python but the torch that $pypath imports is not PyTorch (no torch.__file__ or" \
        "compiled_with_cxx11_abi; a directory named torch on its path?)"
    libdir=$root/lib
    compgen -G "$libdir/libtorch*.so" >/dev/null ||
      die "MTGRPO_TORCH=python but the PyTorch of $pypath ($root) has no lib/libtorch*.so: it is not a" \
        "complete installation (Debian's python3-torch uses the system libtorch: unset MTGRPO_TORCH" \
        "for Debian's libtorch-dev instead; or set LIBTORCH)"
    [ -d "$root/include/torch" ] ||
      die "MTGRPO_TORCH=python but the PyTorch of $pypath ($root) has no include/torch (C++ headers): reinstall it" \
        "from the PyTorch wheels, or set LIBTORCH to an unpacked libtorch"
    inc="-I$root/include -I$root/include/torch/csrc/api/include"
    installed=1
    ;;
  *)
    die "unknown MTGRPO_TORCH=$source (want debian or python, or set LIBTORCH=/path/to/libtorch)"
    ;;
esac

cuda=0
[ -n "$libdir" ] && [ -e "$libdir/libtorch_cuda.so" ] && cuda=1

printf 'TORCH_SOURCE=%q\nTORCH_INSTALLED=%q\nTORCH_INC=%q\nTORCH_LIBDIR=%q\nTORCH_ABI=%q\nTORCH_CUDA=%q\n' \
  "$source" "$installed" "$inc" "$libdir" "$abi" "$cuda"
