package torch

import (
	"math"
	"strings"
	"testing"
)

// TestAdamWTwoSteps checks two AdamW steps on one scalar against values worked by hand.
//
// lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.1, p0 = 1.
// Step 1, g = 0.5:  p = 1·(1 − 0.1·0.1) = 0.99;  m = 0.1·0.5 = 0.05;  v = 0.001·0.25 = 0.00025;
//
//	m̂ = 0.05/0.1 = 0.5;  v̂ = 0.00025/0.001 = 0.25;  p = 0.99 − 0.1·0.5/(0.5 + 1e-8) = 0.890000002.
//
// Step 2, g = −1:  p = 0.890000002·0.99 = 0.88110000198;  m = 0.9·0.05 − 0.1 = −0.055;
//
//	v = 0.999·0.00025 + 0.001 = 0.00124975;  m̂ = −0.055/0.19 = −0.28947368;
//	v̂ = 0.00124975/0.001999 = 0.62518759, √v̂ = 0.79068805;
//	p = 0.88110000198 + 0.1·0.28947368/0.79068805 = 0.91771035422.
func TestAdamWTwoSteps(t *testing.T) {
	onTorch(t, func() {
		p := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		opt := NewAdamW([]*Tensor{p}, AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1})
		defer opt.Close()
		p.MulScalar(0.5).Sum(false).Backward() // g = 0.5
		opt.Step()
		opt.ZeroGrad()
		if got := p.Float(); math.Abs(got-0.890000002) > 1e-12 {
			t.Errorf("after step 1: p = %.12f, want 0.890000002", got)
		}
		p.Neg().Sum(false).Backward() // g = -1
		opt.Step()
		if got := p.Float(); math.Abs(got-0.9177103542205653) > 1e-12 {
			t.Errorf("after step 2: p = %.12f, want 0.917710354221", got)
		}
		st := opt.State()
		if st["step"].Int() != 2 || st["0.step"].Int() != 2 || math.Abs(st["0.exp_avg"].Float()+0.055) > 1e-15 ||
			math.Abs(st["0.exp_avg_sq"].Float()-0.00124975) > 1e-15 {
			t.Errorf("state: step %d m %v v %v", st["step"].Int(), st["0.exp_avg"].Float(), st["0.exp_avg_sq"].Float())
		}
	})
}

func TestAdamWStateRoundTrip(t *testing.T) {
	onTorch(t, func() {
		g := NewGenerator(3, testDevice)
		defer g.Close()
		mk := func() []*Tensor {
			g.Seed(3)
			return []*Tensor{Randn([]int64{3, 2}, Float32, testDevice, g).SetRequiresGrad(true),
				Randn([]int64{4}, Float32, testDevice, g).SetRequiresGrad(true)}
		}
		loss := func(ps []*Tensor) *Tensor { return ps[0].Square().Sum(false).Add(ps[1].Exp().Sum(false)) }
		a, b := mk(), mk()
		optA := NewAdamW(a, DefaultAdamW())
		defer optA.Close()
		for i := 0; i < 2; i++ {
			loss(a).Backward()
			optA.Step()
			optA.ZeroGrad()
		}
		// b catches up by copying a's weights and optimizer state.
		for i := range a {
			NoGrad(func() { b[i].Copy_(a[i]) })
		}
		optB := NewAdamW(b, DefaultAdamW())
		defer optB.Close()
		if err := optB.LoadState(optA.State()); err != nil {
			t.Error(err)
			return
		}
		for _, o := range []struct {
			opt *AdamW
			ps  []*Tensor
		}{{optA, a}, {optB, b}} {
			loss(o.ps).Backward()
			o.opt.Step()
		}
		for i := range a {
			if !Equal(a[i], b[i]) {
				t.Errorf("param %d differs after resuming from saved state", i)
			}
		}
		if optB.Steps() != 3 {
			t.Errorf("steps = %d", optB.Steps())
		}
		bad := optA.State()
		delete(bad, "1.exp_avg")
		if err := optB.LoadState(bad); err == nil {
			t.Error("state with a missing entry accepted")
		}
		bad = optA.State()
		bad["0.exp_avg"] = Zeros([]int64{5}, Float32, testDevice)
		if err := optB.LoadState(bad); err == nil {
			t.Error("state with a wrong shape accepted")
		}
	})
}

// TestAdamWNoDecay: with zero gradient the moments stay zero and the update is 0/(0+eps) = 0, so
// only weight decay moves a parameter: p = 1·(1 − 0.1·0.5) = 0.95, and 1 for the exempt one.
func TestAdamWNoDecay(t *testing.T) {
	onTorch(t, func() {
		w := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		bias := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		opt := NewAdamW([]*Tensor{w, bias}, AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.5})
		defer opt.Close()
		opt.NoDecay(bias)
		w.MulScalar(0).Add(bias.MulScalar(0)).Sum(false).Backward()
		opt.Step()
		if w.Float() != 0.95 || bias.Float() != 1 {
			t.Errorf("after a zero-gradient step: w %v (want 0.95), bias %v (want 1)", w.Float(), bias.Float())
		}
		if Do(func() error { opt.NoDecay(dev(FromSlice([]float64{1}))); return nil }) == nil {
			t.Error("NoDecay of a foreign tensor accepted")
		}
	})
}

// TestAdamWStepCountPerParameter: as in PyTorch, a parameter without a gradient is skipped and
// its own step count stays put, so its first update, whenever it comes, is a first-step update.
//
// lr 0.1, betas (0.9, 0.999), eps 1e-8, no weight decay; q = 1 gets its first gradient, g = 2, at
// the optimizer's second Step. Its step count is then 1: m = 0.1·2 = 0.2, v = 0.001·4 = 0.004,
// m̂ = 0.2/0.1 = 2, √v̂ = √(0.004/0.001) = 2, q = 1 − 0.1·2/(2 + 1e-8) = 0.9000000005.
// (With the optimizer's count, 2, it would be 1 − 0.1·(0.2/0.19)/√(0.004/0.001999) = 0.92559.)
func TestAdamWStepCountPerParameter(t *testing.T) {
	onTorch(t, func() {
		p := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		q := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		opt := NewAdamW([]*Tensor{p, q}, AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		defer opt.Close()
		p.Sum(false).Backward() // q has no gradient yet
		opt.Step()
		if q.Float() != 1 {
			t.Errorf("q moved without a gradient: %v", q.Float())
		}
		opt.ZeroGrad()
		p.Add(q.MulScalar(2)).Sum(false).Backward()
		opt.Step()
		if got := q.Float(); math.Abs(got-0.9000000005) > 1e-12 {
			t.Errorf("q after its first update = %.12f, want 0.9000000005", got)
		}
		st := opt.State()
		if st["step"].Int() != 2 || st["0.step"].Int() != 2 || st["1.step"].Int() != 1 {
			t.Errorf("step counts: optimizer %d, p %d, q %d; want 2, 2, 1", st["step"].Int(), st["0.step"].Int(), st["1.step"].Int())
		}
		// The per-parameter counts survive a save and load.
		opt2 := NewAdamW([]*Tensor{p, q}, DefaultAdamW())
		defer opt2.Close()
		if err := opt2.LoadState(st); err != nil {
			t.Error(err)
			return
		}
		if st2 := opt2.State(); st2["1.step"].Int() != 1 || st2["0.step"].Int() != 2 {
			t.Errorf("loaded step counts p %d, q %d; want 2, 1", st2["0.step"].Int(), st2["1.step"].Int())
		}
		delete(st, "1.step")
		if err := opt2.LoadState(st); err == nil || !strings.Contains(err.Error(), `"1.step"`) {
			t.Errorf("state without 1.step: %v", err)
		}
	})
}

// TestClipGradNorm: gradients [3, 4] and [12] have global norm √(9+16+144) = 13; clipping to 6.5
// scales them by 6.5/(13+1e-6) ≈ 0.5.
func TestClipGradNorm(t *testing.T) {
	onTorch(t, func() {
		a := dev(FromSlice([]float32{0, 0})).SetRequiresGrad(true)
		b := dev(FromSlice([]float32{0})).SetRequiresGrad(true)
		c := dev(FromSlice([]float32{0})).SetRequiresGrad(true) // no gradient: ignored
		a.Mul(dev(FromSlice([]float32{3, 4}))).Sum(false).Add(b.MulScalar(12).Sum(false)).Backward()
		total := ClipGradNorm([]*Tensor{a, b, c}, 6.5)
		if math.Abs(total-13) > 1e-5 {
			t.Errorf("total norm %v, want 13", total)
		}
		expectFloats(t, "clipped a", a.Grad().Float32s(), []float64{1.5, 2}, 1e-5)
		expectFloats(t, "clipped b", b.Grad().Float32s(), []float64{6}, 1e-5)
		// Below the limit nothing changes (the coefficient is clamped to 1).
		if n := ClipGradNorm([]*Tensor{a, b}, 100); math.Abs(n-6.5) > 1e-4 {
			t.Errorf("second norm %v, want 6.5", n)
		}
		expectFloats(t, "unclipped b", b.Grad().Float32s(), []float64{6}, 1e-5)
	})
}

// TestClipGradNormNonFinite: as torch.nn.utils.clip_grad_norm_ (error_if_nonfinite=False), a
// non-finite total norm comes back as such and the gradients are scaled by max/(norm+1e-6): by 0
// for +Inf (so the Inf element becomes Inf·0 = NaN and the finite one 0), by NaN for NaN. The
// caller must check the returned norm and skip the step (as verl does).
func TestClipGradNormNonFinite(t *testing.T) {
	onTorch(t, func() {
		a := dev(FromSlice([]float32{0, 0})).SetRequiresGrad(true)
		a.Mul(dev(FromSlice([]float32{float32(math.Inf(1)), 2}))).Sum(false).Backward() // grad [Inf, 2]
		if n := ClipGradNorm([]*Tensor{a}, 1); !math.IsInf(n, 1) {
			t.Errorf("norm of [Inf, 2] = %v, want +Inf", n)
		}
		g := a.Grad().Float32s()
		if !math.IsNaN(float64(g[0])) || g[1] != 0 {
			t.Errorf("grad after clipping an Inf norm: %v, want [NaN 0]", g)
		}
		b := dev(FromSlice([]float32{0})).SetRequiresGrad(true)
		b.MulScalar(math.NaN()).Sum(false).Backward()
		if n := ClipGradNorm([]*Tensor{b}, 1); !math.IsNaN(n) {
			t.Errorf("norm of [NaN] = %v, want NaN", n)
		}
	})
}
