#!/usr/bin/env bash
# The one place that decides which libtorch mtgrpo builds against.
#
#   LIBTORCH=/path/to/libtorch     an unpacked libtorch (include/, lib/)
#   MTGRPO_TORCH=python            the torch of the python3 on PATH (GPU hosts, Docker)
#   MTGRPO_TORCH=debian            Debian's libtorch-dev (the default on CPU machines)
#   (unset)                        debian if /usr/include/torch exists, else python3's torch if any
#
# Prints shell assignments (eval "$(scripts/libtorch.sh)"):
#   TORCH_SOURCE   debian | libtorch | python
#   TORCH_INC      -I flags for the shim
#   TORCH_LIBDIR   directory holding libtorch*.so (empty when on the default linker path)
#   TORCH_ABI      value for -D_GLIBCXX_USE_CXX11_ABI
#   TORCH_CUDA     1 when libtorch_cuda.so is present
set -euo pipefail

pick=${MTGRPO_TORCH:-}
if [ -n "${LIBTORCH:-}" ]; then
  pick=libtorch
elif [ -z "$pick" ]; then
  if [ -d /usr/include/torch/csrc/api/include ]; then
    pick=debian
  elif command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null; then
    pick=python
  else
    pick=debian
  fi
fi

case "$pick" in
  debian)
    inc="-I/usr/include -I/usr/include/torch/csrc/api/include"
    libdir=/usr/lib/x86_64-linux-gnu
    [ -d "$libdir" ] || libdir=/usr/lib
    abi=1
    ;;
  libtorch)
    root=${LIBTORCH:?LIBTORCH must point at an unpacked libtorch}
    inc="-I$root/include -I$root/include/torch/csrc/api/include"
    libdir=$root/lib
    # grep -q would close the pipe early and nm's SIGPIPE would fail the test under pipefail.
    if nm -DC "$libdir/libc10.so" 2>/dev/null | grep '__cxx11' >/dev/null; then abi=1; else abi=0; fi
    ;;
  python)
    root=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
    inc="-I$root/include -I$root/include/torch/csrc/api/include"
    libdir=$root/lib
    abi=$(python3 -c 'import torch;print(int(torch.compiled_with_cxx11_abi()))')
    ;;
  *)
    echo "scripts/libtorch.sh: unknown MTGRPO_TORCH=$pick (want debian or python, or set LIBTORCH)" >&2
    exit 2
    ;;
esac

cuda=0
[ -e "$libdir/libtorch_cuda.so" ] && cuda=1

printf 'TORCH_SOURCE=%q\nTORCH_INC=%q\nTORCH_LIBDIR=%q\nTORCH_ABI=%q\nTORCH_CUDA=%q\n' \
  "$pick" "$inc" "$libdir" "$abi" "$cuda"
