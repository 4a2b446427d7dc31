// runtime_cuda.cpp: CUDA-only entry points (memory statistics, synchronisation, generators).
// Built only against a CUDA libtorch (scripts/build_shim.sh compiles *_cuda.cpp when TORCH_CUDA=1);
// CPU builds get error-returning versions from runtime.cpp.
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <stdexcept>

#include "shim_internal.h"

namespace {
c10::DeviceIndex cuda_index(int device) {
  if (device < 0) throw std::invalid_argument("not a CUDA device: " + std::to_string(device));
  if (device >= static_cast<int>(c10::cuda::device_count())) {
    throw std::invalid_argument("cuda:" + std::to_string(device) + " does not exist (" +
                                std::to_string(c10::cuda::device_count()) + " devices)");
  }
  return static_cast<c10::DeviceIndex>(device);
}
}  // namespace

namespace mt {
at::Generator cuda_generator(int index) { return at::cuda::detail::createCUDAGenerator(cuda_index(index)); }
int cuda_device_count() { return static_cast<int>(c10::cuda::device_count()); }
}  // namespace mt

extern "C" {

mt_err mt_cuda_synchronize(int device) {
  MT_BEGIN
  c10::cuda::CUDAGuard guard(cuda_index(device));
  c10::cuda::device_synchronize();
  MT_END
}

mt_err mt_cuda_set_device(int device) {
  MT_BEGIN
  c10::cuda::set_device(cuda_index(device));
  MT_END
}

mt_err mt_cuda_memory(int device, int64_t* allocated, int64_t* reserved, int64_t* peak, int64_t* peak_reserved) {
  MT_BEGIN
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_index(device));
  // Index 0 is StatType::AGGREGATE (all pools); the enum moved namespaces across 2.x releases.
  *allocated = stats.allocated_bytes[0].current;
  *reserved = stats.reserved_bytes[0].current;
  *peak = stats.allocated_bytes[0].peak;
  *peak_reserved = stats.reserved_bytes[0].peak;
  MT_END
}

mt_err mt_cuda_empty_cache(void) {
  MT_BEGIN
  c10::cuda::CUDACachingAllocator::emptyCache();
  MT_END
}

mt_err mt_cuda_alloc_counts(int device, int64_t* out) {
  MT_BEGIN
  auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_index(device));
  out[0] = st.allocation[0].allocated;
  out[1] = st.allocation[0].freed;
  out[2] = st.segment[0].allocated;
  out[3] = st.segment[0].freed;
  out[4] = st.num_alloc_retries;
  out[5] = st.num_ooms;
  MT_END
}

mt_err mt_cuda_reset_peak(int device) {
  MT_BEGIN
  c10::cuda::CUDACachingAllocator::resetPeakStats(cuda_index(device));
  MT_END
}

}  // extern "C"
