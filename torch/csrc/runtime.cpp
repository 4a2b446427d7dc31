// runtime.cpp: the shim's plumbing: errors, thread ownership, handles, dtype/device codes, version.
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "shim_internal.h"

namespace {
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_created{0};
std::atomic<bool> g_has_owner{false};
pthread_t g_owner;
}  // namespace

namespace mt {
std::atomic<int64_t> host_syncs{0};

char* errmsg(const char* msg) {
  if (msg == nullptr || *msg == 0) msg = "unknown error";
  size_t n = std::strlen(msg);
  char* p = static_cast<char*>(std::malloc(n + 1));
  if (p == nullptr) return nullptr;  // out of memory: nothing better to report
  std::memcpy(p, msg, n + 1);
  return p;
}

// pthread_self is a register read: cheap enough for every call.
bool on_owner() { return g_has_owner.load(std::memory_order_acquire) && pthread_equal(pthread_self(), g_owner); }

char* check_thread() {
  if (on_owner()) return nullptr;
  if (!g_has_owner.load(std::memory_order_acquire)) {
    return errmsg("no torch thread yet: run torch work through torch.Run");
  }
  return errmsg("called from a thread that is not the torch thread: run torch work through torch.Run");
}

at::Tensor& T(mt_tensor h) {
  if (h == nullptr) throw std::invalid_argument("nil tensor handle");
  return *reinterpret_cast<at::Tensor*>(h);
}

c10::optional<at::Tensor> opt(mt_tensor h) {
  if (h == nullptr) return c10::nullopt;
  return T(h);
}

mt_tensor wrap(at::Tensor t) {
  auto* p = new at::Tensor(std::move(t));
  g_live.fetch_add(1, std::memory_order_relaxed);
  g_created.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<mt_tensor>(p);
}

std::vector<at::Tensor> list(mt_tensor* hs, int n) {
  std::vector<at::Tensor> v;
  v.reserve(n > 0 ? n : 0);
  for (int i = 0; i < n; i++) v.push_back(T(hs[i]));
  return v;
}

at::ScalarType dtype(int code) {
  switch (code) {
    case MT_F32: return at::kFloat;
    case MT_F16: return at::kHalf;
    case MT_BF16: return at::kBFloat16;
    case MT_I64: return at::kLong;
    case MT_I32: return at::kInt;
    case MT_U8: return at::kByte;
    case MT_BOOL: return at::kBool;
    case MT_F64: return at::kDouble;
  }
  throw std::invalid_argument("unknown dtype code " + std::to_string(code));
}

int dtype_code(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return MT_F32;
    case at::kHalf: return MT_F16;
    case at::kBFloat16: return MT_BF16;
    case at::kLong: return MT_I64;
    case at::kInt: return MT_I32;
    case at::kByte: return MT_U8;
    case at::kBool: return MT_BOOL;
    case at::kDouble: return MT_F64;
    default: break;
  }
  throw std::invalid_argument(std::string("dtype not supported by mtgrpo: ") + c10::toString(t));
}

at::Device device(int code) {
  if (code == MT_CPU) return at::Device(at::kCPU);
  if (code >= 0) return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(code));
  throw std::invalid_argument("unknown device code " + std::to_string(code));
}

int device_code(const at::Device& d) {
  if (d.is_cpu()) return MT_CPU;
  if (d.is_cuda()) return d.has_index() ? d.index() : 0;
  throw std::invalid_argument("device not supported by mtgrpo: " + d.str());
}

at::IntArrayRef dims(const int64_t* p, int n) { return at::IntArrayRef(p, n > 0 ? n : 0); }

at::TensorOptions options(int dt, int dev) { return at::TensorOptions().dtype(dtype(dt)).device(device(dev)); }

at::Scalar scalar_for(const at::Tensor& t, double v) {
  if (!at::isFloatingType(t.scalar_type()) && v == static_cast<double>(static_cast<int64_t>(v))) {
    return at::Scalar(static_cast<int64_t>(v));
  }
  return at::Scalar(v);
}

}  // namespace mt

extern "C" {

int mt_abi_version(void) { return MT_ABI_VERSION; }

mt_err mt_claim_thread(void) {
  g_owner = pthread_self();
  g_has_owner.store(true, std::memory_order_release);
  return nullptr;
}

int mt_on_torch_thread(void) { return mt::on_owner() ? 1 : 0; }

mt_err mt_version(char* buf, size_t cap, int* cuda_built, int* cuda_available, int* cuda_devices) {
  MT_BEGIN
  std::snprintf(buf, cap, "%s", TORCH_VERSION);
#ifdef MTGRPO_CUDA
  *cuda_built = 1;
#else
  *cuda_built = 0;
#endif
  *cuda_available = at::hasCUDA() ? 1 : 0;
#ifdef MTGRPO_CUDA
  *cuda_devices = at::hasCUDA() ? mt::cuda_device_count() : 0;
#else
  *cuda_devices = 0;
#endif
  MT_END
}

int64_t mt_live_tensors(void) { return g_live.load(std::memory_order_relaxed); }

int64_t mt_tensors_created(void) { return g_created.load(std::memory_order_relaxed); }

mt_err mt_free(mt_tensor* hs, size_t n) {
  MT_BEGIN
  for (size_t i = 0; i < n; i++) {
    if (hs[i] == nullptr) continue;
    delete reinterpret_cast<at::Tensor*>(hs[i]);
    g_live.fetch_sub(1, std::memory_order_relaxed);
  }
  MT_END
}

mt_err mt_set_num_threads(int n) {
  MT_BEGIN
  at::set_num_threads(n);
  MT_END
}

mt_err mt_manual_seed(uint64_t seed) {
  MT_BEGIN
  at::manual_seed(seed);
  MT_END
}

#ifndef MTGRPO_CUDA
// CPU builds: the CUDA entry points exist (the ABI is the same) and say why they cannot work.
static const char* kNoCUDA = "this shim was built without CUDA (rebuild against a CUDA libtorch)";
mt_err mt_cuda_synchronize(int) { MT_BEGIN throw std::runtime_error(kNoCUDA); MT_END }
mt_err mt_cuda_set_device(int) { MT_BEGIN throw std::runtime_error(kNoCUDA); MT_END }
mt_err mt_cuda_memory(int, int64_t*, int64_t*, int64_t*, int64_t*) { MT_BEGIN throw std::runtime_error(kNoCUDA); MT_END }
mt_err mt_cuda_empty_cache(void) { MT_BEGIN throw std::runtime_error(kNoCUDA); MT_END }
mt_err mt_cuda_reset_peak(int) { MT_BEGIN throw std::runtime_error(kNoCUDA); MT_END }
mt_err mt_cuda_alloc_counts(int, int64_t*) { MT_BEGIN throw std::runtime_error(kNoCUDA); MT_END }
#endif

int64_t mt_host_syncs(void) { return mt::host_syncs.load(std::memory_order_relaxed); }

}  // extern "C"
