// bench.cpp: the same small ops run in a C++ loop, to measure what a Go->C crossing adds.
#include <chrono>

#include "shim_internal.h"

namespace {
template <class F>
double ns_per_op(int64_t iters, F f) {
  for (int64_t i = 0; i < 10; i++) f();  // warm-up: allocator, first-call dispatch
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; i++) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
}
}  // namespace

extern "C" {

mt_err mt_bench_add_loop(mt_tensor a, mt_tensor b, int64_t iters, double* ns) {
  MT_BEGIN
  const at::Tensor& x = mt::T(a);
  const at::Tensor& y = mt::T(b);
  *ns = ns_per_op(iters, [&] { at::Tensor r = x.add(y); });
  MT_END
}

mt_err mt_bench_matmul_loop(mt_tensor a, mt_tensor b, int64_t iters, double* ns) {
  MT_BEGIN
  const at::Tensor& x = mt::T(a);
  const at::Tensor& y = mt::T(b);
  at::Tensor last;
  *ns = ns_per_op(iters, [&] { last = at::matmul(x, y); });
  // On CUDA the loop only queued kernels: wait for them so the figure is throughput, and
  // re-time with the wait inside the measured span.
  if (last.is_cuda()) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; i++) last = at::matmul(x, y);
    last.sum().item<double>();
    auto t1 = std::chrono::steady_clock::now();
    *ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  }
  MT_END
}

}  // extern "C"
