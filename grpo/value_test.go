package grpo

import (
	"math"
	"testing"
)

func TestValueLossHandWorked(t *testing.T) {
	// ε_v = 0.1, w = 1/3 on three trained tokens, a fourth padding token with NaN everywhere.
	//	t0: V = 1, V_old = 0.8, R = 1.5: clip(V) = 0.9; (V−R)² = 0.25 < (0.9−R)² = 0.36 → 0.36,
	//	    the clipped branch, whose V is saturated: gradient 0.
	//	t1: V = V_old = 2, R = 1: both branches (V−R)² = 1, gradient ½·w·2·(V−R) = 1/3.
	//	t2: V = 0, V_old = 0.5, R = 0: clip(V) = 0.4; 0 < 0.16 → 0.16, clipped, gradient 0.
	// Loss ½·(1/3)·(0.36 + 1 + 0.16) = 0.25333333; clipfrac 2/3; vpred mean (1 + 2 + 0)/3 = 1.
	nan := math.NaN()
	onTorch(t, func() {
		in := ValueInputs{
			Values:  leaf([]float64{1, 2, 0, nan}, 2, 2),
			Old:     tf([]float64{0.8, 2, 0.5, nan}, 2, 2),
			Returns: tf([]float64{1.5, 1, 0, nan}, 2, 2),
			Weights: tf([]float64{1. / 3, 1. / 3, 1. / 3, nan}, 2, 2),
			Mask:    tf([]float64{1, 1, 1, 0}, 2, 2),
		}
		loss, st, err := ValueLoss(0.1, in)
		if err != nil {
			t.Error(err)
			return
		}
		if got := loss.Float(); !near(got, 1.52/6, 1e-6) {
			t.Errorf("loss = %.8g, want %.8g", got, 1.52/6)
		}
		expectSlice(t, "dloss/dV", grad(loss, in.Values), []float64{0, 1. / 3, 0, 0}, 1e-6)
		expectMetrics(t, "value", st.Metrics(1), map[string]float64{
			"critic/vf_loss": 1.52 / 6, "critic/vf_clipfrac": 2. / 3, "critic/vpred_mean": 1,
		}, 1e-6)

		// Without clipping (+Inf): ½·(1/3)·(0.25 + 1 + 0) = 0.20833333, gradient (1/3)·(V − R).
		loss, _, _ = ValueLoss(math.Inf(1), in)
		if got := loss.Float(); !near(got, 1.25/6, 1e-6) {
			t.Errorf("no clip: loss = %.8g, want %.8g", got, 1.25/6)
		}
		expectSlice(t, "no clip: dloss/dV", grad(loss, in.Values), []float64{-0.5 / 3, 1. / 3, 0, 0}, 1e-6)

		_, _, err = ValueLoss(0, in)
		expectErr(t, "clip 0", err, "clip = 0")
		bad := in
		bad.Returns = tf([]float64{1, 2}, 2)
		_, _, err = ValueLoss(0.1, bad)
		expectErr(t, "shape", err, "Returns has shape [2]", "Values [2 2]")
	})
}
