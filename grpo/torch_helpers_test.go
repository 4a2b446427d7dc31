package grpo

import (
	"math"
	"os"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// testDevice is where the tensor tests run: MTGRPO_TEST_DEVICE=cuda runs them on a GPU; the
// default is the CPU.
var testDevice = func() torch.Device {
	s := os.Getenv("MTGRPO_TEST_DEVICE")
	if s == "" {
		return torch.CPU
	}
	d, err := torch.ParseDevice(s)
	if err != nil {
		panic(err)
	}
	return d
}()

// onTorch runs fn on the torch thread. Inside fn use t.Error/t.Errorf, never t.Fatal.
func onTorch(t *testing.T, fn func()) {
	t.Helper()
	if err := torch.Run(func() error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// tf is a float32 tensor on the test device with the given shape.
func tf(vals []float64, shape ...int64) *torch.Tensor {
	f := make([]float32, len(vals))
	for i, v := range vals {
		f[i] = float32(v)
	}
	return torch.FromSlice(f, shape...).ToDevice(testDevice)
}

// leaf is tf with requires grad.
func leaf(vals []float64, shape ...int64) *torch.Tensor {
	return tf(vals, shape...).SetRequiresGrad(true)
}

// ti is an int64 tensor on the test device.
func ti(vals []int64, shape ...int64) *torch.Tensor {
	return torch.FromSlice(vals, shape...).ToDevice(testDevice)
}

// grad is d out/d x as float64s.
func grad(out, x *torch.Tensor) []float64 {
	g := torch.Grads([]*torch.Tensor{out}, []*torch.Tensor{x}, torch.BackwardOpts{RetainGraph: true})[0]
	return g.Float64s()
}

// expectMetrics checks the named metrics within tol; a NaN want means "absent".
func expectMetrics(t *testing.T, what string, got map[string]float64, want map[string]float64, tol float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		switch {
		case math.IsNaN(w) && ok:
			t.Errorf("%s: %s = %v, want absent", what, k, g)
		case math.IsNaN(w):
		case !ok:
			t.Errorf("%s: %s missing (have %v)", what, k, got)
		case !near(g, w, tol):
			t.Errorf("%s: %s = %.9g, want %.9g", what, k, g, w)
		}
	}
}

// addLn returns base[i] + ln(r[i]): log-probs whose ratio to base is r.
func addLn(base, r []float64) []float64 {
	out := make([]float64, len(base))
	for i := range base {
		out[i] = base[i] + math.Log(r[i])
	}
	return out
}
