package model

import (
	"math"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

func expectClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > tol {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

// x = [1 2 3 4]: mean(x²) = 30/4 = 7.5, 1/√7.5 = 0.3651484; x/rms = [0.3651484 0.7302967
// 1.0954451 1.4605935]; times weight [1 0.5 2 1] = [0.3651484 0.3651484 2.1908902 1.4605935].
func TestRMSNormByHand(t *testing.T) {
	onTorch(t, func() error {
		n := RMSNorm{Weight: torch.FromSlice([]float32{1, 0.5, 2, 1}), Eps: 1e-6}
		got := n.Forward(torch.FromSlice([]float32{1, 2, 3, 4}, 1, 4)).Float32s()
		expectClose(t, "rmsnorm", got, []float64{0.3651484, 0.3651484, 2.1908902, 1.4605935}, 1e-6)
		return nil
	})
}

// θ = 100, d = 4: inv_freq = [1, 0.1]; at position 1 the angles are [1, 0.1] (repeated over both
// halves). x = [1 2 3 4], rotate_half(x) = [−3 −4 1 2]:
//
//	out0 = 1·cos 1 − 3·sin 1     = 0.5403023 − 2.5244130 = −1.9841107
//	out1 = 2·cos .1 − 4·sin .1   = 1.9900083 − 0.3993337 =  1.5906746
//	out2 = 3·cos 1 + 1·sin 1     = 1.6209069 + 0.8414710 =  2.4623779
//	out3 = 4·cos .1 + 2·sin .1   = 3.9800167 + 0.1996668 =  4.1796835
//
// Position 0 leaves x unchanged; each rotated pair (x_i, x_{i+d/2}) keeps its norm.
func TestRopeRotateHalfByHand(t *testing.T) {
	onTorch(t, func() error {
		inv := invFreq(Rope{Type: "default", Theta: 100}, 4)
		cos, sin := ropeTables(inv, []int32{0, 1})
		c := torch.FromSlice(cos, 1, 1, 2, 4)
		s := torch.FromSlice(sin, 1, 1, 2, 4)
		x := torch.FromSlice([]float32{1, 2, 3, 4, 1, 2, 3, 4}, 1, 1, 2, 4)
		got := applyRope(x, c, s).Float32s()
		expectClose(t, "rope", got, []float64{1, 2, 3, 4, -1.9841107, 1.5906746, 2.4623779, 4.1796835}, 1e-6)
		return nil
	})
}

// gate = I, up = 2I, down = I on x = [1 −1]: silu(1)·2 = 0.7310586·2 = 1.4621172 and
// silu(−1)·(−2) = −0.2689414·−2 = 0.5378828.
func TestMLPByHand(t *testing.T) {
	onTorch(t, func() error {
		eye := torch.FromSlice([]float32{1, 0, 0, 1}, 2, 2)
		m := MLP{GateProj: Linear{Weight: eye}, UpProj: Linear{Weight: eye.MulScalar(2)}, DownProj: Linear{Weight: eye}}
		got := m.Forward(torch.FromSlice([]float32{1, -1}, 1, 2)).Float32s()
		expectClose(t, "mlp", got, []float64{1.4621172, 0.5378828}, 1e-6)
		return nil
	})
}

// Linear stores W as [out, in] (HF): y = x Wᵀ + b. W = [[1 2] [3 4] [5 6]], b = [1 0 −1], x = [1 1]
// gives [1+2+1, 3+4, 5+6−1] = [4 7 10].
func TestLinearLayout(t *testing.T) {
	onTorch(t, func() error {
		l := Linear{Weight: torch.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2), Bias: torch.FromSlice([]float32{1, 0, -1})}
		expectClose(t, "linear", l.Forward(torch.FromSlice([]float32{1, 1}, 1, 2)).Float32s(), []float64{4, 7, 10}, 0)
		return nil
	})
}
