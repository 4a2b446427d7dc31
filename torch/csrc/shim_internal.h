// shim_internal.h: helpers shared by the shim's .cpp files (never seen by Go).
//
// Every entry point is written as
//
//   mt_err mt_thing(mt_tensor a, mt_tensor* out) {
//     MT_BEGIN
//     *out = mt::wrap(mt::T(a).thing());
//     MT_END
//   }
//
// MT_BEGIN checks that the caller is the torch thread; MT_END turns any C++ exception into a
// malloc'd message returned by the same call.
#pragma once

#include <ATen/ATen.h>
// Grad mode (NoGradGuard, AutoGradMode): ATen/ATen.h brought it in by accident up to 1.13, not in 2.x.
#include <ATen/core/grad_mode.h>
#include <c10/util/Optional.h>

#include <atomic>
#include <string>
#include <vector>

#include "shim.h"

namespace mt {

// A malloc'd copy of msg (the caller of the entry point frees it).
char* errmsg(const char* msg);
// Whether the calling thread is the torch thread.
bool on_owner();
// NULL when the calling thread is the torch thread, else a malloc'd message.
char* check_thread();

// Host synchronisations so far (mt_host_syncs); note_sync counts one when t is not on the CPU.
extern std::atomic<int64_t> host_syncs;
inline void note_sync(const at::Tensor& t) {
  if (!t.device().is_cpu()) host_syncs.fetch_add(1, std::memory_order_relaxed);
}

// The at::Tensor behind a handle; throws on a NULL handle.
at::Tensor& T(mt_tensor h);
// An optional tensor argument (NULL = absent).
c10::optional<at::Tensor> opt(mt_tensor h);
// A new handle owning a reference to t (counted by mt_live_tensors).
mt_tensor wrap(at::Tensor t);
// Handles to tensors, for list arguments.
std::vector<at::Tensor> list(mt_tensor* hs, int n);

at::ScalarType dtype(int code);
int dtype_code(at::ScalarType t);
at::Device device(int code);
int device_code(const at::Device& d);
at::IntArrayRef dims(const int64_t* p, int n);
at::TensorOptions options(int dtype, int device);
// A Scalar that keeps integer tensors integral when the value is integral.
at::Scalar scalar_for(const at::Tensor& t, double v);

// The layers of nn.cpp, shared with the static decode step (decode.cpp).
// Scaled dot-product attention with grouped-query heads (mt_sdpa).
at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, c10::optional<at::Tensor> mask,
                bool causal, double scale);
// HF's RMSNorm: normalised in float32, cast back, times the weight (mt_rms_norm).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);
// Rotary embedding, HF layout (mt_rope).
at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// x Wᵀ + b as at::linear, as a matrix-vector product when x is one row on the CPU (mt_linear).
at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& b);
// One token per row of float32 logits under the [rows, MT_SP_COLS] settings (sample.cpp, mt_sample):
// [rows, 4] float64 id, log-prob, tempered log-prob, finiteness witness.
at::Tensor sample(const at::Tensor& logits, const at::Tensor& params, int mode);
// Lays the parts out back to back and returns the whole (fuse.cpp, mt_fuse_rows); *moved tells
// whether they had to be copied.
at::Tensor fuse_rows(const std::vector<at::Tensor>& parts, bool* moved);

#ifdef MTGRPO_CUDA
// A fresh CUDA generator for device index (runtime_cuda.cpp).
at::Generator cuda_generator(int index);
// The number of CUDA devices (runtime_cuda.cpp).
int cuda_device_count();
#endif

}  // namespace mt

#define MT_BEGIN                                     \
  if (char* mt_thread_err_ = mt::check_thread()) {   \
    return mt_thread_err_;                           \
  }                                                  \
  try {
#define MT_END                                       \
  }                                                  \
  catch (const c10::Error& e) {                      \
    return mt::errmsg(e.what_without_backtrace());   \
  }                                                  \
  catch (const std::exception& e) {                  \
    return mt::errmsg(e.what());                     \
  }                                                  \
  catch (...) {                                      \
    return mt::errmsg("unknown C++ exception");      \
  }                                                  \
  return nullptr;
