package torch

import "testing"

// Threads reads back what SetNumThreads and SetBLASThreads set; SetBLASThreads reports whether
// the process's BLAS is OpenBLAS, and Threads says -1 for BLAS exactly when it is not.
func TestThreadsReadBack(t *testing.T) {
	onTorch(t, func() {
		intra0, blas0 := Threads()
		defer func() {
			SetNumThreads(intra0)
			if blas0 > 0 {
				SetBLASThreads(blas0)
			}
		}()
		for _, n := range []int{1, 2} {
			SetNumThreads(n)
			found := SetBLASThreads(3 - n)
			intra, blas := Threads()
			if intra != n {
				t.Errorf("intra-op %d after SetNumThreads(%d)", intra, n)
			}
			if found && blas != 3-n || !found && blas != -1 {
				t.Errorf("BLAS %d after SetBLASThreads(%d) (OpenBLAS found: %v)", blas, 3-n, found)
			}
		}
	})
	if err := Run(func() error { return Do(func() error { SetBLASThreads(0); return nil }) }); err == nil {
		t.Error("0 BLAS threads accepted")
	}
}
