// libtorch_bench: the reference side of docs/bench/torch.md — the same ops as the Go benchmarks,
// called on libtorch directly from C++ (no shim, no cgo).
//
//   scripts/build_shim.sh bench && build/libtorch_bench [device]     (device: cpu or cuda)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void sync(const at::Tensor& t) {
  if (t.is_cuda()) t.sum().item<double>();  // waits for the queue; no CUDA headers needed
}

// The machine may be shared: every figure is the best of `reps` timed runs.
const int reps = 10;

void bench_add(const at::Device& dev) {
  at::Tensor a = at::rand({4}, at::TensorOptions().device(dev));
  at::Tensor b = at::rand({4}, at::TensorOptions().device(dev));
  const int64_t n = 20000;
  for (int i = 0; i < 1000; i++) at::Tensor r = a.add(b);
  double best = 1e30;
  for (int rep = 0; rep < reps; rep++) {
    auto t0 = std::chrono::steady_clock::now();
    at::Tensor r;
    for (int64_t i = 0; i < n; i++) r = a.add(b);
    sync(r);
    best = std::min(best, seconds_since(t0) / n);
  }
  std::printf("add [4] float32:            %8.0f ns/op\n", best * 1e9);
}

void bench_matmul(const at::Device& dev, int64_t size, at::ScalarType dt, int64_t iters) {
  auto opts = at::TensorOptions().device(dev).dtype(dt);
  at::Tensor a = at::randn({size, size}, opts), b = at::randn({size, size}, opts);
  at::Tensor r = at::matmul(a, b);
  sync(r);
  double s = 1e30;
  for (int rep = 0; rep < reps; rep++) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; i++) r = at::matmul(a, b);
    sync(r);
    s = std::min(s, seconds_since(t0) / iters);
  }
  std::printf("matmul %lldx%lld %-9s:    %8.1f GFLOP/s\n", static_cast<long long>(size),
              static_cast<long long>(size), c10::toString(dt), 2.0 * size * size * size / s / 1e9);
}
}  // namespace

int main(int argc, char** argv) {
  bool cuda = argc > 1 && std::strncmp(argv[1], "cuda", 4) == 0;
  at::Device dev = cuda ? at::Device(argv[1]) : at::Device(at::kCPU);
  at::init_num_threads();
  std::printf("libtorch direct, %s, %d threads\n", dev.str().c_str(), at::get_num_threads());
  bench_add(dev);
  bench_matmul(dev, 512, at::kFloat, cuda ? 200 : 10);
  if (cuda) bench_matmul(dev, 4096, at::kBFloat16, 50);
  return 0;
}
