package torch

/*
#include "shim.h"
*/
import "C"

// CPUMemory counts libtorch's CPU tensor memory since TrackCPUMemory: the CPU's counterpart of
// CUDAMemoryOf and CUDAAllocCountsOf, for tests and benchmarks that measure how many blocks a step
// allocates and how many bytes its tensors hold at their peak.
type CPUMemory struct {
	Allocs, Frees int64 // blocks allocated and freed
	Live          int64 // bytes held by live tensors (those allocated since tracking began)
	Peak          int64 // the most Live was since tracking began or the last ResetCPUPeak
}

// Sub is c − d for the counters (Live and Peak are c's): what happened between two readings.
func (c CPUMemory) Sub(d CPUMemory) CPUMemory {
	return CPUMemory{Allocs: c.Allocs - d.Allocs, Frees: c.Frees - d.Frees, Live: c.Live, Peak: c.Peak}
}

// TrackCPUMemory makes libtorch's CPU allocations go through a counter, for the rest of the
// process (later calls do nothing). Tensors allocated before are not counted; the cost is a lock
// and a map entry per allocation. Call on the torch thread.
func TrackCPUMemory() { check("TrackCPUMemory", C.mt_cpu_memory_track()) }

// CPUMemoryStats reads the counters (all zero before TrackCPUMemory).
func CPUMemoryStats() CPUMemory {
	var v [C.MT_CPU_STATS]C.int64_t
	check("CPUMemoryStats", C.mt_cpu_memory(&v[0]))
	return CPUMemory{Allocs: int64(v[0]), Frees: int64(v[1]), Live: int64(v[2]), Peak: int64(v[3])}
}

// ResetCPUPeak starts the peak afresh from the bytes live now.
func ResetCPUPeak() { check("ResetCPUPeak", C.mt_cpu_memory_reset_peak()) }
