package torch

import (
	"math"
	"os"
	"testing"
)

// testDevice is where the tests put tensors: MTGRPO_TEST_DEVICE=cuda (or cuda:N) runs them on a
// GPU; the default is the CPU.
var testDevice = func() Device {
	s := os.Getenv("MTGRPO_TEST_DEVICE")
	if s == "" {
		return CPU
	}
	d, err := ParseDevice(s)
	if err != nil {
		panic(err)
	}
	return d
}()

// onTorch runs fn on the torch thread. Inside fn use t.Error/t.Errorf, never t.Fatal.
func onTorch(t *testing.T, fn func()) {
	t.Helper()
	if err := Run(func() error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// dev puts a CPU-made tensor on the test device.
func dev(x *Tensor) *Tensor {
	if testDevice == CPU {
		return x
	}
	return x.ToDevice(testDevice)
}

func closeTo(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func expectFloats(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
		return
	}
	for i := range got {
		if !closeTo(float64(got[i]), want[i], tol) {
			t.Errorf("%s[%d] = %v, want %v (all: %v)", what, i, got[i], want[i], got)
			return
		}
	}
}

func expectInts(t *testing.T, what string, got []int64, want []int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

func expectShape(t *testing.T, what string, x *Tensor, want ...int64) {
	t.Helper()
	expectInts(t, what+" shape", x.Shape(), want)
}
