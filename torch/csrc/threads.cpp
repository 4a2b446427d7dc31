// threads.cpp: the CPU thread pools a process has: libtorch's intra-op pool and the BLAS library's
// own pool. OpenBLAS reads OPENBLAS_NUM_THREADS once, when it is loaded (before main); its setter is
// looked up at run time so that the shim neither links OpenBLAS nor fails beside another BLAS
// (the reference BLAS has no threads; MKL inside a pip libtorch follows at::set_num_threads).
#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <stdexcept>

#include "shim_internal.h"

namespace {
using set_fn = void (*)(int);
using get_fn = int (*)(void);

template <typename F>
F lookup(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}
}  // namespace

mt_err mt_get_threads(int* intra_op, int* blas) {
  MT_BEGIN
  *intra_op = at::get_num_threads();
  auto get = lookup<get_fn>("openblas_get_num_threads");
  *blas = get != nullptr ? get() : -1;
  MT_END
}

mt_err mt_set_blas_threads(int n, int* found) {
  MT_BEGIN
  if (n < 1) throw std::invalid_argument("BLAS threads must be >= 1");
  auto set = lookup<set_fn>("openblas_set_num_threads");
  *found = set != nullptr;
  if (set != nullptr) set(n);
  MT_END
}
