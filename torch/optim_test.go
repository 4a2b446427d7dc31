package torch

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// named names tensors p0, p1, ... for NewAdamW.
func named(ps ...*Tensor) []NamedTensor {
	out := make([]NamedTensor, len(ps))
	for i, p := range ps {
		out[i] = NamedTensor{Name: fmt.Sprintf("p%d", i), Tensor: p}
	}
	return out
}

// newAdamW is NewAdamW for tests (inside onTorch): an error fails the test by panicking out of Run.
func newAdamW(ps []NamedTensor, cfg AdamWConfig) *AdamW {
	o, err := NewAdamW(ps, cfg)
	if err != nil {
		panic(err)
	}
	return o
}

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
		opt := newAdamW(named(p), AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1})
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
		if st["step"].Int() != 2 || st["p0.step"].Int() != 2 || math.Abs(st["p0.exp_avg"].Float()+0.055) > 1e-15 ||
			math.Abs(st["p0.exp_avg_sq"].Float()-0.00124975) > 1e-15 {
			t.Errorf("state: step %d m %v v %v", st["step"].Int(), st["p0.exp_avg"].Float(), st["p0.exp_avg_sq"].Float())
		}
		if _, ok := st["p0.master"]; ok || opt.Master("p0") != nil {
			t.Error("a float64 parameter got a master copy")
		}
	})
}

// TestAdamWLRChangesPerStep: the schedule sets Config.LR before each Step, on the same optimizer.
// Step 1 as in TestAdamWTwoSteps (lr 0.1): p = 0.890000002, m = 0.05, v = 0.00025. Step 2 at lr
// 0.05, g = −1: decay uses the new lr, p = 0.890000002·(1 − 0.05·0.1) = 0.88555000199; m̂ and √v̂
// as before (−0.28947368, 0.79068805); p = 0.88555000199 + 0.05·0.28947368/0.79068805 =
// 0.90385517811.
func TestAdamWLRChangesPerStep(t *testing.T) {
	onTorch(t, func() {
		p := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		opt := newAdamW(named(p), AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1})
		defer opt.Close()
		p.MulScalar(0.5).Sum(false).Backward()
		opt.Step()
		opt.ZeroGrad()
		opt.Config.LR = 0.05
		p.Neg().Sum(false).Backward()
		opt.Step()
		if got := p.Float(); math.Abs(got-0.9038551781102827) > 1e-12 {
			t.Errorf("after a step at lr 0.05: p = %.12f, want 0.903855178110", got)
		}
	})
}

// TestAdamWRefusesBadParameters: names must be unique and non-empty, tensors floating-point and
// listed once.
func TestAdamWRefusesBadParameters(t *testing.T) {
	onTorch(t, func() {
		a := dev(FromSlice([]float32{1}))
		b := dev(FromSlice([]float32{2}))
		for _, c := range []struct {
			ps   []NamedTensor
			want string
		}{
			{[]NamedTensor{{"a", a}, {"a", b}}, `"a" is listed twice`},
			{[]NamedTensor{{"", a}}, "empty name"},
			{[]NamedTensor{{"ids", dev(FromSlice([]int64{1}))}}, "floating-point"},
			{[]NamedTensor{{"embed", a}, {"lm_head", a}}, "same tensor"},
			{[]NamedTensor{{"gone", nil}}, "nil or freed"},
		} {
			if _, err := NewAdamW(c.ps, DefaultAdamW()); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: error %v, want one containing %q", c.ps, err, c.want)
			}
		}
	})
}

// TestAdamWNoDecay: with zero gradient the moments stay zero and the update is 0/(0+eps) = 0, so
// only weight decay moves a parameter: p = 1·(1 − 0.1·0.5) = 0.95, and 1 for the exempt one.
func TestAdamWNoDecay(t *testing.T) {
	onTorch(t, func() {
		w := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		bias := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		norm := dev(FromSlice([]float64{1})).SetRequiresGrad(true)
		ps := []NamedTensor{{"w", w}, {"bias", bias}, {"norm.weight", norm}}
		opt := newAdamW(ps, AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.5})
		defer opt.Close()
		opt.NoDecay(bias)
		if err := opt.NoDecayNames("norm.weight", "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("NoDecayNames with an unknown name: %v", err)
		}
		if !opt.Decays("norm.weight") {
			t.Error("a failed NoDecayNames changed a parameter")
		}
		if err := opt.NoDecayNames("norm.weight"); err != nil {
			t.Error(err)
		}
		w.MulScalar(0).Add(bias.MulScalar(0)).Add(norm.MulScalar(0)).Sum(false).Backward()
		opt.Step()
		if w.Float() != 0.95 || bias.Float() != 1 || norm.Float() != 1 {
			t.Errorf("after a zero-gradient step: w %v (want 0.95), bias %v, norm %v (want 1)", w.Float(), bias.Float(), norm.Float())
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
		opt := newAdamW(named(p, q), AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
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
		if st["step"].Int() != 2 || st["p0.step"].Int() != 2 || st["p1.step"].Int() != 1 {
			t.Errorf("step counts: optimizer %d, p %d, q %d; want 2, 2, 1", st["step"].Int(), st["p0.step"].Int(), st["p1.step"].Int())
		}
		// The per-parameter counts survive a save and load.
		opt2 := newAdamW(named(p, q), DefaultAdamW())
		defer opt2.Close()
		if err := opt2.LoadState(st); err != nil {
			t.Error(err)
			return
		}
		if st2 := opt2.State(); st2["p1.step"].Int() != 1 || st2["p0.step"].Int() != 2 {
			t.Errorf("loaded step counts p %d, q %d; want 2, 1", st2["p0.step"].Int(), st2["p1.step"].Int())
		}
		delete(st, "p1.step")
		if err := opt2.LoadState(st); err == nil || !strings.Contains(err.Error(), `"p1.step"`) {
			t.Errorf("state without p1.step: %v", err)
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
		// Mixed dtypes: the same gradients as float64 and bfloat16 (3, 4 and 12 are exact in both).
		a64 := dev(FromSlice([]float64{0, 0})).SetRequiresGrad(true)
		b16 := dev(FromSlice([]float32{0})).ToDType(BFloat16).SetRequiresGrad(true)
		a64.Mul(dev(FromSlice([]float64{3, 4}))).Sum(false).Add(b16.MulScalar(12).Sum(false).ToDType(Float64)).Backward()
		if n := ClipGradNorm([]*Tensor{a64, b16}, 6.5); math.Abs(n-13) > 1e-5 {
			t.Errorf("float64 + bfloat16 norm %v, want 13", n)
		}
		expectFloats(t, "clipped bf16 b", b16.Grad().Float32s(), []float64{6}, 0)
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
