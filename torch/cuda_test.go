package torch

import "testing"

// TestCUDAMemoryFreedWithScope runs only with MTGRPO_TEST_DEVICE=cuda: closing a scope gives its
// tensors' memory back to the caching allocator.
func TestCUDAMemoryFreedWithScope(t *testing.T) {
	if !testDevice.IsCUDA() {
		// On CPU builds the CUDA entry points must fail cleanly, not crash.
		onTorch(t, func() {
			if Do(func() error { CUDAMemoryStats(CUDA(0)); return nil }) == nil {
				t.Error("CUDAMemoryStats worked without CUDA")
			}
		})
		return
	}
	onTorch(t, func() {
		Synchronize(testDevice)
		before := CUDAMemoryStats(testDevice).Allocated
		s := NewScope()
		x := Zeros([]int64{1024, 1024}, Float32, testDevice) // 4 MiB
		x.AddScalar(1).Exp()
		during := CUDAMemoryStats(testDevice).Allocated
		s.Close()
		Synchronize(testDevice)
		after := CUDAMemoryStats(testDevice)
		t.Logf("allocated before %d, during %d, after %d; reserved %d", before, during, after.Allocated, after.Reserved)
		if during-before < 3*4<<20 {
			t.Errorf("three 4 MiB tensors added only %d bytes", during-before)
		}
		if after.Allocated != before {
			t.Errorf("allocated %d after Close, want %d", after.Allocated, before)
		}
	})
}

// TestCUDAAllocCountsAndHostSyncs: three new 4 MiB tensors are at least three block allocations
// and, once their scope closes, three frees; reading a CUDA scalar (Float), a CUDA tensor's values
// and ClipGradNorm's norm are one host synchronisation each. On the CPU the counters do not exist
// (an error, not a crash) and CPU reads are not synchronisations.
func TestCUDAAllocCountsAndHostSyncs(t *testing.T) {
	onTorch(t, func() {
		x := Ones([]int64{2}, Float32, testDevice).SetRequiresGrad(true)
		x.Square().Sum(false).Backward()
		s0 := HostSyncs()
		x.Sum(false).Float()
		x.Float32s()
		ClipGradNorm([]*Tensor{x}, 1)
		want := int64(3)
		if !testDevice.IsCUDA() {
			want = 0
			if Do(func() error { CUDAAllocCountsOf(CUDA(0)); return nil }) == nil {
				t.Error("CUDAAllocCountsOf worked without CUDA")
			}
		}
		if got := HostSyncs() - s0; got != want {
			t.Errorf("host syncs = %d, want %d", got, want)
		}
		if !testDevice.IsCUDA() {
			return
		}
		c0 := CUDAAllocCountsOf(testDevice)
		s := NewScope()
		Zeros([]int64{1024, 1024}, Float32, testDevice).AddScalar(1).Exp()
		s.Close()
		c := CUDAAllocCountsOf(testDevice).Sub(c0)
		if c.Allocs < 3 || c.Frees < 3 || c.OOMs != 0 {
			t.Errorf("three 4 MiB tensors made and freed: counts %+v", c)
		}
	})
}
