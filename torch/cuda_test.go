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
