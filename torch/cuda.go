package torch

/*
#include "shim.h"
*/
import "C"

// CUDAMemory is the CUDA caching allocator's view of one device.
type CUDAMemory struct {
	Allocated int64 // bytes held by live tensors
	Reserved  int64 // bytes the allocator holds from the driver (allocated + cached)
	Peak      int64 // the most Allocated has been since start or ResetPeak
	// PeakReserved is the most Reserved has been since start or ResetPeak.
	PeakReserved int64
}

// CUDAMemoryStats reports the allocator statistics of a CUDA device (an error on CPU builds).
func CUDAMemoryStats(dev Device) CUDAMemory {
	var a, r, p, pr C.int64_t
	check("CUDAMemoryStats", C.mt_cuda_memory(C.int(dev), &a, &r, &p, &pr))
	return CUDAMemory{Allocated: int64(a), Reserved: int64(r), Peak: int64(p), PeakReserved: int64(pr)}
}

// CUDAResetPeak restarts the peak statistic of dev.
func CUDAResetPeak(dev Device) { check("CUDAResetPeak", C.mt_cuda_reset_peak(C.int(dev))) }

// CUDAEmptyCache returns cached, unused blocks to the driver.
func CUDAEmptyCache() { check("CUDAEmptyCache", C.mt_cuda_empty_cache()) }

// SetCUDADevice makes dev the torch thread's current CUDA device, as torch.cuda.set_device: set it
// before creating NCCL process groups. A no-op for the CPU.
func SetCUDADevice(dev Device) {
	if !dev.IsCUDA() {
		return
	}
	check("SetCUDADevice", C.mt_cuda_set_device(C.int(dev)))
}

// Synchronize waits for all queued work on dev; on the CPU it returns at once.
func Synchronize(dev Device) {
	if !dev.IsCUDA() {
		return
	}
	check("Synchronize", C.mt_cuda_synchronize(C.int(dev)))
}
