// decode_cuda.cpp: the static decode step captured as CUDA graphs (built only against a CUDA
// libtorch). One graph per (sampling mode, rows, key positions); all of a decoder's graphs allocate
// from one private memory pool, captured largest first so that the smaller ones reuse its blocks.
// Sharing the pool is safe in any replay order here: a graph's intermediates are written and read
// within its own replay, and everything that outlives a replay (inputs, outputs, weights, cache)
// lives outside the pool. Capture runs on a side stream of the torch thread, in thread-local
// capture mode (other threads, such as a process group's watchdog, may keep calling CUDA), after
// one eager warm-up of the step on that stream.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "decode.h"

namespace {

int64_t reserved_bytes(c10::DeviceIndex dev) {
  // Index 0 is StatType::AGGREGATE (the enum moved namespaces across 2.x releases).
  return c10::cuda::CUDACachingAllocator::getDeviceStats(dev).reserved_bytes[0].current;
}

class CudaGraphs : public mt::Graphs {
 public:
  explicit CudaGraphs(int device) : dev_(static_cast<c10::DeviceIndex>(device)) {}

  bool run(const mt::StepKey& key, const std::vector<int>& buckets, const std::vector<const void*>& addrs,
           const std::function<void(int rows)>& forward, mt::StepInfo* info) override {
    if (!reason_.empty()) return false;
    if (!graphs_.empty() && addrs != addrs_) {
      // A weight, the cache or a table was reallocated: the graphs read the old addresses.
      drop();
      info->dropped = 1;
    }
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      if (!capture(key, buckets, addrs, forward, info)) return false;
      it = graphs_.find(key);
    }
    it->second->replay();
    return true;
  }

  const std::string& reason() const override { return reason_; }
  int64_t captures() const override { return captures_; }
  double capture_seconds() const override { return capture_s_; }
  int64_t pool_bytes() const override { return pool_bytes_; }
  int64_t held() const override { return static_cast<int64_t>(graphs_.size()); }

 private:
  void drop() {
    graphs_.clear();  // their pool is freed with the last of them
    have_pool_ = false;
    pool_bytes_ = 0;
  }

  // capture makes the graphs of key's mode and keys for every bucket (and key's own rows), largest
  // first. A failure turns graphs off for good, with its cause in reason_.
  bool capture(const mt::StepKey& key, const std::vector<int>& buckets, const std::vector<const void*>& addrs,
               const std::function<void(int rows)>& forward, mt::StepInfo* info) {
    std::vector<int> rows(buckets.begin(), buckets.end());
    if (std::find(rows.begin(), rows.end(), key.rows) == rows.end()) rows.push_back(key.rows);
    std::sort(rows.rbegin(), rows.rend());
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t before = reserved_bytes(dev_);
    at::cuda::CUDAStream current = at::cuda::getCurrentCUDAStream(dev_);
    if (!side_) side_ = at::cuda::getStreamFromPool(false, dev_);
    std::unique_ptr<at::cuda::CUDAGraph> g;  // the graph being captured (outside the try: fail ends its capture)
    bool open = false;
    try {
      at::cuda::CUDAEvent ready;
      ready.record(current);  // the step's inputs, copied on the current stream
      ready.block(*side_);
      {
        c10::cuda::CUDAStreamGuard on_side(*side_);
        forward(key.rows);  // the warm-up: key's own step, eagerly (the replay rewrites what it wrote)
        for (int r : rows) {
          mt::StepKey k{key.mode, r, key.keys};
          if (graphs_.count(k)) continue;
          if (!have_pool_) pool_ = at::cuda::graph_pool_handle(), have_pool_ = true;
          g = std::make_unique<at::cuda::CUDAGraph>();
#if TORCH_VERSION_MAJOR >= 2
          g->capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
#else
          g->capture_begin(pool_);
#endif
          open = true;
          forward(r);
          open = false;
          g->capture_end();
          graphs_[k] = std::move(g);
          captures_++;
          info->captured++;
        }
      }
      at::cuda::CUDAEvent done;
      done.record(*side_);
      done.block(current);
    } catch (const std::exception& e) {
      fail(open ? g.get() : nullptr, e.what(), info);
      return false;
    }
    addrs_ = addrs;
    capture_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    pool_bytes_ += std::max<int64_t>(0, reserved_bytes(dev_) - before);
    return true;
  }

  // fail ends a capture left open by an exception, clears the error it left behind, drops every
  // graph and records the cause: from now on the decoder runs eagerly.
  void fail(at::cuda::CUDAGraph* open, const char* what, mt::StepInfo* info) {
    if (open != nullptr) {
      try {
        c10::cuda::CUDAStreamGuard on_side(*side_);
        open->capture_end();
      } catch (...) {
        cudaGraph_t g = nullptr;
        if (cudaStreamEndCapture(side_->stream(), &g) == cudaSuccess && g != nullptr) cudaGraphDestroy(g);
      }
    }
    (void)cudaGetLastError();  // a failed capture leaves a sticky error that the next launch check would report
    reason_ = what;
    if (reason_.empty()) reason_ = "unknown error";
    auto nl = reason_.find('\n');
    if (nl != std::string::npos) reason_.resize(nl);
    info->fell_back = 1;
    drop();
  }

  c10::DeviceIndex dev_;
  c10::optional<at::cuda::CUDAStream> side_;
  at::cuda::MempoolId_t pool_{0, 0};
  bool have_pool_ = false;
  std::map<mt::StepKey, std::unique_ptr<at::cuda::CUDAGraph>> graphs_;
  std::vector<const void*> addrs_;
  std::string reason_;
  int64_t captures_ = 0, pool_bytes_ = 0;
  double capture_s_ = 0;
};

}  // namespace

namespace mt {
std::unique_ptr<Graphs> new_cuda_graphs(int device) { return std::make_unique<CudaGraphs>(device); }
}  // namespace mt
