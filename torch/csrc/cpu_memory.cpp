// cpu_memory.cpp: counts libtorch's CPU tensor memory (allocations, frees, live and peak bytes),
// the CPU's counterpart of the CUDA caching allocator's statistics. libtorch keeps no such count
// on the CPU (its profiler's reporter logs every allocation), so mt_cpu_memory_track installs a
// wrapper around the CPU allocator that records each block's size; the blocks keep the base
// allocator's pointers (data = context, as raw_allocate needs) and are freed by it.
//
// The wrapper's interface follows libtorch's: allocate became non-const and copy_data a required
// method in 2.3.
#include <torch/version.h>

#include <c10/core/CPUAllocator.h>

#include <mutex>
#include <unordered_map>

#include "shim_internal.h"

#define MT_ALLOCATOR_2_3 (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3))

namespace {

struct Counts {
  std::mutex mu;
  std::unordered_map<void*, size_t> size;
  int64_t allocs = 0, frees = 0, live = 0, peak = 0;
};

Counts& counts() {
  static Counts* c = new Counts();  // never destroyed: blocks may be freed during exit
  return *c;
}

c10::Allocator* g_base = nullptr;  // the allocator the wrapper was put in front of

void counted_delete(void* p) {
  if (p == nullptr) return;
  Counts& c = counts();
  {
    std::lock_guard<std::mutex> l(c.mu);
    auto it = c.size.find(p);
    if (it != c.size.end()) {
      c.live -= static_cast<int64_t>(it->second);
      c.frees++;
      c.size.erase(it);
    }
  }
  g_base->raw_deleter()(p);
}

struct CountingAllocator final : c10::Allocator {
#if MT_ALLOCATOR_2_3
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    c10::DataPtr d = g_base->allocate(n);
    void* p = d.get();
    if (p == nullptr) return d;  // zero bytes: nothing to count
    if (d.get_context() != p) return d;  // a block the base frees its own way: not counted
    d.release_context();
    Counts& c = counts();
    {
      std::lock_guard<std::mutex> l(c.mu);
      c.size[p] = n;
      c.allocs++;
      c.live += static_cast<int64_t>(n);
      if (c.live > c.peak) c.peak = c.live;
    }
    return c10::DataPtr(p, p, &counted_delete, d.device());
  }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
#if MT_ALLOCATOR_2_3
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
#endif
};

}  // namespace

extern "C" {

mt_err mt_cpu_memory_track(void) {
  MT_BEGIN
  if (g_base != nullptr) return nullptr;
  c10::Allocator* base = c10::GetCPUAllocator();
  if (base->raw_deleter() == nullptr) throw std::runtime_error("the CPU allocator has no raw deleter: its memory cannot be counted");
  g_base = base;
  static CountingAllocator* wrapper = new CountingAllocator();  // never destroyed, as the allocator table's
  c10::SetCPUAllocator(wrapper, 255);
  MT_END
}

mt_err mt_cpu_memory(int64_t* out) {
  MT_BEGIN
  Counts& c = counts();
  std::lock_guard<std::mutex> l(c.mu);
  out[0] = c.allocs;
  out[1] = c.frees;
  out[2] = c.live;
  out[3] = c.peak;
  MT_END
}

mt_err mt_cpu_memory_reset_peak(void) {
  MT_BEGIN
  Counts& c = counts();
  std::lock_guard<std::mutex> l(c.mu);
  c.peak = c.live;
  MT_END
}

}  // extern "C"
