#!/usr/bin/env bash
# Builds the C++ shim over libtorch: every torch/csrc/*.cpp -> build/obj/*.o -> build/libmtgrpo_torch.so.
#
# Which libtorch is used is decided by scripts/libtorch.sh (LIBTORCH, MTGRPO_TORCH). Objects are kept
# per source file, so only sources whose file, a header in torch/csrc, or the flags changed recompile;
# sources compile in parallel (JOBS, default: number of cores). Files named *_cuda.cpp are compiled only
# against a CUDA libtorch (TORCH_CUDA=1).
#
#   scripts/build_shim.sh            build (incremental)
#   scripts/build_shim.sh bench      also build build/libtorch_bench (torch/csrc/bench: libtorch
#                                    called directly, the reference for the binding benchmarks)
#   CXXFLAGS_EXTRA=-g scripts/build_shim.sh
set -euo pipefail
cd "$(dirname "$0")/.."

torch_env=$(scripts/libtorch.sh --require) || exit 1
eval "$torch_env"
CXX=${CXX:-g++}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
SRC=torch/csrc
OBJ=build/obj
OUT=build/libmtgrpo_torch.so
mkdir -p "$OBJ"
# One build at a time (make, go generate and people may start it together).
exec 9>build/.shim.lock
command -v flock >/dev/null && flock 9

defs="-D_GLIBCXX_USE_CXX11_ABI=$TORCH_ABI"
libs="-ltorch -ltorch_cpu -lc10"
# Gloo (CPU process groups, dist.cpp) only with the gloo of this libtorch, never a system gloo of
# another version: Debian's libtorch uses libgloo-dev (headers in /usr/include, libgloo.so beside
# the other libraries); other libtorch builds link gloo into libtorch_cpu.so and may ship its
# headers in their include directory.
gloo=
if [ "$TORCH_SOURCE" = debian ]; then
  # bookworm puts libgloo.so in /usr/lib, trixie beside libtorch (the multiarch directory).
  for d in "$TORCH_LIBDIR" /usr/lib; do
    if [ -e "$d/libgloo.so" ] && [ -e /usr/include/gloo/config.h ]; then gloo=1; libs="$libs -L$d -lgloo"; break; fi
  done
else
  for d in $TORCH_INC; do [ -e "${d#-I}/gloo/config.h" ] && gloo=1; done
fi
if [ -n "$gloo" ]; then
  defs="$defs -DUSE_C10D_GLOO"
else
  echo "build_shim: no gloo headers for this libtorch: the shim will have no Gloo (CPU) process groups" >&2
fi
if [ "$TORCH_CUDA" = 1 ]; then
  defs="$defs -DMTGRPO_CUDA -DUSE_C10D_NCCL"
  # CUDA headers (cuda_runtime_api.h for c10/cuda; cublas, cusparse, cusolver for ATen/cuda, which
  # ProcessGroupNCCL pulls in): the toolkit of $CUDA_HOME or of the nvcc on PATH, else the nvidia
  # pip packages beside python's torch (one include/ per library up to CUDA 12, nvidia/cu13/include
  # from CUDA 13). nccl.h (ProcessGroupNCCL in dist.cpp) comes from the nvidia NCCL pip package;
  # without it dist.cpp builds without NCCL and CUDA process groups say so.
  cuda_home=${CUDA_HOME:-}
  if [ -z "$cuda_home" ] && command -v nvcc >/dev/null; then cuda_home=$(dirname "$(dirname "$(command -v nvcc)")"); fi
  cuda_home=${cuda_home:-/usr/local/cuda}
  # The include directories of the nvidia pip packages that hold header $1 (all of them for "*.h").
  nvidia_includes() {
    python3 -c 'import sys,glob,os,nvidia;print(" ".join(sorted({os.path.dirname(x) for p in nvidia.__path__ for x in glob.glob(os.path.join(p,"**","include",sys.argv[1]),recursive=True)})))' "$1" 2>/dev/null || true
  }
  if [ -f "$cuda_home/include/cuda_runtime_api.h" ]; then
    pyincs="$cuda_home/include $(nvidia_includes nccl.h)"
  else
    pyincs=$(nvidia_includes '*.h')
  fi
  for d in $pyincs; do TORCH_INC="$TORCH_INC -I$d"; done
  # The CUDA kernels register themselves in static initialisers of libtorch_cuda.so: force the link.
  libs="$libs -Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed"
fi
# The C++ standard libtorch's headers need: C++17 before 2.12, C++20 once ATen/ATen.h demands it
# (it then has '#error' under '__cplusplus < 202002L'; release notes place that in 2.12 to 2.14).
std=c++17
for d in $TORCH_INC; do
  vh=${d#-I}/torch/version.h
  [ -f "$vh" ] || continue
  major=$(awk '/define TORCH_VERSION_MAJOR/ {print $3}' "$vh")
  minor=$(awk '/define TORCH_VERSION_MINOR/ {print $3}' "$vh")
  if [ "${major:-0}" -gt 2 ] || { [ "${major:-0}" -eq 2 ] && [ "${minor:-0}" -ge 12 ]; }; then std=c++20; fi
  if grep -q '__cplusplus < 202002L' "${d#-I}/ATen/ATen.h" 2>/dev/null; then std=c++20; fi
  break
done
cxxflags="-std=$std -O2 -fPIC -fvisibility=hidden -Wall -Wno-unused-parameter $defs $TORCH_INC -I$SRC ${CXXFLAGS_EXTRA:-}"
ldflags="-shared -L$TORCH_LIBDIR -Wl,-rpath,$TORCH_LIBDIR"

srcs=()
for f in "$SRC"/*.cpp; do
  case "$f" in *_cuda.cpp) [ "$TORCH_CUDA" = 1 ] || continue ;; esac
  srcs+=("$f")
done

# A source is stale when its object is missing or was compiled from other contents of the source,
# the local headers or the flags (content hashes, not mtimes: an edit made while a compile runs
# must not be mistaken for compiled).
hdr_hash=$(cat "$SRC"/*.h 2>/dev/null | sha1sum | cut -c1-40)
stale=()
objs=()
for f in "${srcs[@]}"; do
  o="$OBJ/$(basename "${f%.cpp}").o"
  objs+=("$o")
  h=$( (sha1sum <"$f"; echo "$hdr_hash $CXX $cxxflags") | sha1sum | cut -c1-40)
  if [ ! -e "$o" ] || [ "$(cat "$o.hash" 2>/dev/null)" != "$h" ]; then
    stale+=("$f")
    printf '%s' "$h" >"$o.hash.new"
  fi
done

if [ ${#stale[@]} -gt 0 ]; then
  echo "build_shim: compiling ${#stale[@]} file(s) against $TORCH_SOURCE libtorch (cuda=$TORCH_CUDA)"
  export CXX cxxflags OBJ
  printf '%s\n' "${stale[@]}" | xargs -P "$JOBS" -I{} sh -c \
    'o="$OBJ/$(basename {} .cpp).o"; echo "  $CXX {}"; $CXX $cxxflags -c {} -o "$o.tmp.$$" && mv "$o.tmp.$$" "$o" && mv "$o.hash.new" "$o.hash"'
fi

# Link when an object is newer than the library (or objects were added or removed).
relink=0
[ -e "$OUT" ] || relink=1
for o in "${objs[@]}"; do [ "$o" -nt "$OUT" ] && relink=1; done
listed="$OBJ/objects"
[ "$(cat "$listed" 2>/dev/null)" = "${objs[*]}" ] || relink=1
if [ "$relink" = 1 ]; then
  # shellcheck disable=SC2086
  $CXX $ldflags -o "$OUT.tmp.$$" "${objs[@]}" $libs
  mv "$OUT.tmp.$$" "$OUT"
  printf '%s' "${objs[*]}" >"$listed"
  echo "build_shim: $OUT"
fi

if [ "${1:-}" = bench ]; then
  # shellcheck disable=SC2086
  $CXX $cxxflags -o build/libtorch_bench "$SRC"/bench/*.cpp -L"$TORCH_LIBDIR" -Wl,-rpath,"$TORCH_LIBDIR" $libs
  echo "build_shim: build/libtorch_bench"
fi
