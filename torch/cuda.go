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

// CUDAAllocCounts are the CUDA caching allocator's counters of one device since start: what
// tells a step that reuses its memory from one that keeps asking the driver for more.
type CUDAAllocCounts struct {
	Allocs, Frees         int64 // blocks handed out to tensors and given back
	Segments, SegmentFree int64 // cudaMalloc and cudaFree calls
	Retries               int64 // allocations that failed, flushed the cache and tried again
	OOMs                  int64 // out-of-memory errors
}

// Sub is c − d, counter by counter: what happened between two readings.
func (c CUDAAllocCounts) Sub(d CUDAAllocCounts) CUDAAllocCounts {
	return CUDAAllocCounts{c.Allocs - d.Allocs, c.Frees - d.Frees, c.Segments - d.Segments,
		c.SegmentFree - d.SegmentFree, c.Retries - d.Retries, c.OOMs - d.OOMs}
}

// CUDAAllocCountsOf reads dev's allocator counters (an error on CPU builds).
func CUDAAllocCountsOf(dev Device) CUDAAllocCounts {
	var v [C.MT_ALLOC_STATS]C.int64_t
	check("CUDAAllocCountsOf", C.mt_cuda_alloc_counts(C.int(dev), &v[0]))
	return CUDAAllocCounts{int64(v[0]), int64(v[1]), int64(v[2]), int64(v[3]), int64(v[4]), int64(v[5])}
}

// HostSyncs counts the values copied from a device to the host so far (Float, Int, ToSlice and the
// like on a CUDA tensor, ClipGradNorm's norm, a bucket's non-finite check): each one waits for the
// device's queue to drain. Tensors on the CPU are not counted.
func HostSyncs() int64 { return int64(C.mt_host_syncs()) }
