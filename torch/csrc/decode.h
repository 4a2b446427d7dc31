// decode.h: what the static decode step (decode.cpp) and its CUDA graphs (decode_cuda.cpp) share.
// Never seen by Go.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shim_internal.h"

namespace mt {

// A step's shape: the sampling mode (MT_SAMPLE_*), the rows computed (real rows padded up to a
// bucket) and the key positions each row's attention reads.
struct StepKey {
  int mode;
  int rows;
  int64_t keys;
  bool operator<(const StepKey& o) const {
    if (mode != o.mode) return mode < o.mode;
    if (rows != o.rows) return rows < o.rows;
    return keys < o.keys;
  }
};

// What one step did (mt_decoder_step's info array, MT_STEP_*).
struct StepInfo {
  int replayed = 0;   // the step ran as a CUDA graph replay
  int captured = 0;   // graphs captured in this call
  int dropped = 0;    // graphs dropped because what they read moved
  int fell_back = 0;  // a capture failed in this call: graphs are off for this decoder from now on
  int relaid = 0;     // fused weight groups laid out again (copied) in this call
};

// The CUDA graphs of one decoder: one per StepKey, in one memory pool, captured on a side stream.
class Graphs {
 public:
  virtual ~Graphs() = default;
  // Runs the step of key as a graph replay on the current stream. When key has no graph yet, it
  // first runs forward once, eagerly, on a side stream (the warm-up: lazy set-up such as cuBLAS
  // workspaces happens outside any capture; its writes are overwritten by the replay), then captures
  // the graphs of every bucket in buckets at key's mode and keys, largest first. addrs are the
  // addresses of everything forward reads that is not a static buffer (weights, cache, tables):
  // when they differ from those at capture, every graph is dropped and captured again. Returns
  // false when graphs are off (a capture failed, now or before): the caller runs forward itself.
  virtual bool run(const StepKey& key, const std::vector<int>& buckets, const std::vector<const void*>& addrs,
                   const std::function<void(int rows)>& forward, StepInfo* info) = 0;
  // Why graphs are off ("" while they are on).
  virtual const std::string& reason() const = 0;
  virtual int64_t captures() const = 0;
  virtual double capture_seconds() const = 0;
  virtual int64_t pool_bytes() const = 0;
  virtual int64_t held() const = 0;
};

// The CUDA graphs of a decoder on CUDA device index (decode_cuda.cpp); CPU-only builds have none.
std::unique_ptr<Graphs> new_cuda_graphs(int device);

}  // namespace mt
