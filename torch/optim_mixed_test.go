package torch

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// TestAdamWMasterKeepsSmallSteps: a bf16 weight at 0.02 trained at lr 1e-6 with a constant
// gradient g = 1, betas (0.9, 0.999), eps 1e-8, no weight decay.
//
// With a constant gradient m̂ = g and v̂ = g² at every step, so each step moves the weight by
// lr·g/(|g| + eps) = 1e-6 (to 1e-14). 0.02 in bf16 is v0 = 1.28125·2⁻⁶ = 0.02001953125; the bf16
// spacing there is 2⁻¹³ = 1.2207e-4, half of it 6.1035e-5. So:
//   - after 1 step the master is v0 − 1e-6 and the bf16 weight is still v0 (1e-6 < 6.1e-5);
//     an update made in place in bf16 would have been lost: v0 − 1e-6 rounds back to v0;
//   - after 50 steps the master is v0 − 5e-5, still nearer v0 (5e-5 < 6.1e-5): the weight is v0;
//   - after 100 steps the master is v0 − 1e-4 = 0.01991953, nearer v0 − 2⁻¹³ = 0.0198974609375
//     (2.2e-5 away) than v0 (1e-4 away): the weight has moved one bf16 step.
//
// The master is float32: 100 subtractions near 0.02 (float32 spacing 1.86e-9) err by at most
// 100·0.93e-9 < 1e-7. A float16 weight gets a master copy too.
func TestAdamWMasterKeepsSmallSteps(t *testing.T) {
	onTorch(t, func() {
		const v0 = 0.02001953125
		p := dev(FromSlice([]float32{0.02})).ToDType(BFloat16).SetRequiresGrad(true)
		h := dev(FromSlice([]float32{0.02})).ToDType(Float16).SetRequiresGrad(true)
		opt := newAdamW([]NamedTensor{{"w", p}, {"h", h}}, AdamWConfig{LR: 1e-6, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		defer opt.Close()
		master := opt.Master("w")
		if master == nil || master.DType() != Float32 || opt.Master("h") == nil {
			t.Error("bf16 and f16 parameters need float32 master copies")
			return
		}
		if lost := noGradT(func() *Tensor { return p.Detach().AddScalar(-1e-6) }); lost.Float() != v0 {
			t.Errorf("v0 − 1e-6 in bf16 = %v: the test's premise (the step is lost in bf16) does not hold", lost.Float())
		}
		for step := 1; step <= 100; step++ {
			s := NewScope()
			p.Sum(false).Add(h.Sum(false).ToDType(BFloat16)).Backward()
			opt.Step()
			opt.ZeroGrad()
			s.Close()
			wantMaster := v0 - float64(step)*1e-6
			want := v0
			if step == 100 {
				want = 0.0198974609375
			}
			if step == 1 || step == 50 || step == 100 {
				if got := master.Float(); math.Abs(got-wantMaster) > 1e-7 {
					t.Errorf("step %d: master %.10f, want %.10f", step, got, wantMaster)
				}
				if got := p.Float(); got != want {
					t.Errorf("step %d: bf16 weight %.10f, want %.10f", step, got, want)
				}
				if !Equal(p, master.ToDType(BFloat16)) {
					t.Errorf("step %d: the bf16 weight is not its master rounded", step)
				}
			}
		}
		if p.DType() != BFloat16 || h.DType() != Float16 {
			t.Errorf("parameters changed dtype: %s, %s", p.DType(), h.DType())
		}
		// float16 has 3 more mantissa bits: spacing 2⁻¹⁶ = 1.53e-5 at 0.02, so 1e-4 of steps shows.
		if got, m := h.Float(), opt.Master("h").Float(); math.Abs(got-m) > 7.7e-6 || math.Abs(m-(0.02-1e-4)) > 2e-5 {
			t.Errorf("float16 weight %v, master %v; want both near %v", got, m, 0.02-1e-4)
		}
	})
}

// noGradT runs fn under NoGrad and returns its result.
func noGradT(fn func() *Tensor) (r *Tensor) {
	NoGrad(func() { r = fn() })
	return r
}

// mixedParams makes a bf16 matrix, a float32 vector and a bf16 bias with seeded values.
func mixedParams(seed uint64) []NamedTensor {
	g := NewGenerator(seed, testDevice)
	defer g.Close()
	return []NamedTensor{
		{"layer.weight", Randn([]int64{3, 4}, Float32, testDevice, g).MulScalar(0.02).ToDType(BFloat16).SetRequiresGrad(true)},
		{"norm.weight", Randn([]int64{4}, Float32, testDevice, g).AddScalar(1).SetRequiresGrad(true)},
		{"layer.bias", Zeros([]int64{3}, BFloat16, testDevice).SetRequiresGrad(true)},
	}
}

// mixedLoss is a smooth loss of mixedParams, scaled by k (k = NaN poisons every gradient).
func mixedLoss(ps []NamedTensor, k float64) *Tensor {
	x := Ones([]int64{2, 4}, Float32, testDevice)
	w, n, b := ps[0].Tensor.ToDType(Float32), ps[1].Tensor, ps[2].Tensor.ToDType(Float32)
	y := Linear(x.Mul(n), w, b).Tanh()
	return y.Square().Sum(false).MulScalar(k).Add(n.Square().Sum(false))
}

// snapshot clones every tensor of the optimizer's state and the parameters.
func snapshot(opt *AdamW, ps []NamedTensor) map[string]*Tensor {
	out := map[string]*Tensor{}
	for k, v := range opt.State() {
		out[k] = v.Clone()
	}
	for _, p := range ps {
		out["param "+p.Name] = p.Tensor.Detach().Clone()
	}
	return out
}

// TestAdamWSkipLeavesStateUntouched: a batch whose gradient is NaN gets a NaN norm from
// ClipGradNorm (which also poisons the gradients); Skip must then leave the weights, the masters,
// the moments and the step counts bit for bit as they were, and the following step must be
// exactly the step an optimizer that never saw the bad batch makes.
func TestAdamWSkipLeavesStateUntouched(t *testing.T) {
	onTorch(t, func() {
		a, b := mixedParams(5), mixedParams(5)
		cfg := AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
		optA, optB := newAdamW(a, cfg), newAdamW(b, cfg)
		defer optA.Close()
		defer optB.Close()
		step := func(o *AdamW, ps []NamedTensor, k float64) float64 {
			mixedLoss(ps, k).Backward()
			n := o.ClipGradNorm(1)
			if math.IsNaN(n) || math.IsInf(n, 0) {
				o.Skip()
			} else {
				o.Step()
				o.ZeroGrad()
			}
			return n
		}
		step(optA, a, 1)
		step(optB, b, 1)
		before := snapshot(optA, a)
		if n := step(optA, a, math.NaN()); !math.IsNaN(n) {
			t.Errorf("norm of a NaN gradient = %v", n)
		}
		after := snapshot(optA, a)
		for k, v := range before {
			if k != "skipped" && !Equal(v, after[k]) {
				t.Errorf("a skipped step changed %s", k)
			}
		}
		if optA.Skipped() != 1 || optA.Steps() != 1 {
			t.Errorf("after a step and a skip: Steps %d, Skipped %d", optA.Steps(), optA.Skipped())
		}
		step(optA, a, 1)
		step(optB, b, 1)
		for i := range a {
			if !Equal(a[i].Tensor, b[i].Tensor) {
				t.Errorf("%s differs from the run without the bad batch", a[i].Name)
			}
		}
	})
}

// roundTrip writes a state through a safetensors file and loads it back as tensors.
func roundTrip(t *testing.T, st map[string]*Tensor) map[string]*Tensor {
	path := filepath.Join(t.TempDir(), "optimizer.safetensors")
	if err := SaveSafetensors(path, st, nil); err != nil {
		t.Error(err)
		return nil
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer f.Close()
	out := map[string]*Tensor{}
	for _, n := range f.Names() {
		info, _ := f.Info(n)
		dt, _ := DTypeOf(info.DType)
		if out[n], err = LoadTensor(f, n, testDevice, dt); err != nil {
			t.Error(err)
		}
	}
	return out
}

// TestAdamWStateRoundTrip: two steps, the state saved to safetensors and loaded into a fresh
// optimizer over copies of the weights given in another order; one more step on both gives the
// same weights bit for bit (masters included: the bf16 weights alone would not resume exactly).
// Bad states are refused with the entry named, and leave the optimizer unchanged.
func TestAdamWStateRoundTrip(t *testing.T) {
	onTorch(t, func() {
		cfg := AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
		a := mixedParams(7)
		optA := newAdamW(a, cfg)
		defer optA.Close()
		optA.NoDecay(a[2].Tensor)
		for range 2 {
			mixedLoss(a, 1).Backward()
			optA.Step()
			optA.ZeroGrad()
		}
		optA.Skip()
		saved := roundTrip(t, optA.State())
		for _, k := range []string{"step", "skipped", "layer.weight.master", "layer.bias.master", "norm.weight.exp_avg_sq"} {
			if saved[k] == nil {
				t.Errorf("state lacks %q", k)
				return
			}
		}
		if _, ok := saved["norm.weight.master"]; ok {
			t.Error("a float32 parameter has a master entry")
		}
		b := mixedParams(99) // other values: the weights are copied, the optimizer state loaded
		b[0], b[1], b[2] = b[2], b[0], b[1]
		NoGrad(func() {
			b[0].Tensor.Copy_(a[2].Tensor)
			b[1].Tensor.Copy_(a[0].Tensor)
			b[2].Tensor.Copy_(a[1].Tensor)
		})
		b[0].Name, b[1].Name, b[2].Name = a[2].Name, a[0].Name, a[1].Name
		optB := newAdamW(b, cfg)
		defer optB.Close()
		optB.NoDecay(b[0].Tensor)
		checkBadStates(t, optB, saved)
		if err := optB.LoadState(saved); err != nil {
			t.Error(err)
			return
		}
		if optB.Steps() != 2 || optB.Skipped() != 1 {
			t.Errorf("loaded counts: steps %d skipped %d", optB.Steps(), optB.Skipped())
		}
		mixedLoss(a, 1).Backward()
		optA.Step()
		mixedLoss([]NamedTensor{b[1], b[2], b[0]}, 1).Backward()
		optB.Step()
		for _, pa := range a {
			for _, pb := range b {
				if pa.Name == pb.Name && !Equal(pa.Tensor, pb.Tensor) {
					t.Errorf("%s differs after resuming from the saved state", pa.Name)
				}
			}
		}
	})
}

// checkBadStates feeds opt broken copies of good and checks each error names the broken entry and
// the optimizer still loads nothing of it.
func checkBadStates(t *testing.T, opt *AdamW, good map[string]*Tensor) {
	edit := func(fn func(st map[string]*Tensor)) map[string]*Tensor {
		st := map[string]*Tensor{}
		for k, v := range good {
			st[k] = v
		}
		fn(st)
		return st
	}
	before := snapshot(opt, nil)
	for _, c := range []struct {
		st   map[string]*Tensor
		want string
	}{
		{edit(func(st map[string]*Tensor) { delete(st, "layer.weight.master") }), `missing "layer.weight.master"`},
		{edit(func(st map[string]*Tensor) { delete(st, "step") }), `missing "step"`},
		{edit(func(st map[string]*Tensor) { st["layer.bias.exp_avg"] = Zeros([]int64{4}, Float32, testDevice) }),
			`"layer.bias.exp_avg" has shape [4], want [3]`},
		{edit(func(st map[string]*Tensor) { st["norm.weight.exp_avg"] = Zeros([]int64{4}, BFloat16, testDevice) }),
			`"norm.weight.exp_avg" is bfloat16, want float32`},
		{edit(func(st map[string]*Tensor) { st["norm.weight.master"] = Zeros([]int64{4}, Float32, testDevice) }),
			`unexpected entries ["norm.weight.master"]`},
		{edit(func(st map[string]*Tensor) { st["layer.weight.step"] = Scalar(-1, Int64, CPU) }), `"layer.weight.step" is -1`},
		{edit(func(st map[string]*Tensor) { st["skipped"] = Scalar(1, Float32, CPU) }), `"skipped" is float32`},
	} {
		if err := opt.LoadState(c.st); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bad state: error %v, want one containing %q", err, c.want)
		}
	}
	after := snapshot(opt, nil)
	for k, v := range before {
		if !Equal(v, after[k]) {
			t.Errorf("a refused state changed %s", k)
		}
	}
}

// TestAdamWMultiTensorMatchesPerTensor: libtorch's multi-tensor AdamW (fused or _foreach_, as
// AdamWKernel says) against the per-parameter reference, over six steps of mixedParams (bf16
// weights with float32 masters, a float32 vector) plus a float32 matrix that gets a gradient only
// on even steps (its own step count, hence bias correction, lags), with weight decay 0.1 except on
// the bias. The loss is linear in the weights, Σ r·w with r drawn afresh each step, so both
// optimizers get the same gradients whatever their weights. Both orders of operations are
// float32 AdamW and may differ by rounding only: masters, moments and float32 weights agree to
// 1e-6 relative (a few float32 ulps after six steps) or to atol absolutely, and every bf16 weight is
// its master rounded. The absolute bound is for values the steps have moved close to zero: each
// step's update is at most about lr in size and its rounding differs by up to a couple of float32
// ulps of that (lr·2^-22), so six steps may differ by 6·lr·2^-22 = 1.4e-8 however small the value
// (the fused kernel of libtorch 2.x differs from the per-parameter step by 1.9e-9 on a master of
// 7.8e-4 at step 5).
func TestAdamWMultiTensorMatchesPerTensor(t *testing.T) {
	onTorch(t, func() {
		cfg := AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
		const steps = 6
		atol := steps * cfg.LR * 0x1p-22
		mk := func() []NamedTensor {
			g := NewGenerator(11, testDevice)
			defer g.Close()
			return append(mixedParams(3), NamedTensor{"extra.weight", Randn([]int64{5, 2}, Float32, testDevice, g).SetRequiresGrad(true)})
		}
		ref, got := mk(), mk()
		optRef, optGot := newAdamW(ref, cfg), newAdamW(got, cfg)
		defer optRef.Close()
		defer optGot.Close()
		optRef.perTensor = true
		optRef.NoDecay(ref[2].Tensor)
		optGot.NoDecay(got[2].Tensor)
		for step := range steps {
			for _, c := range []struct {
				o  *AdamW
				ps []NamedTensor
			}{{optRef, ref}, {optGot, got}} {
				s := NewScope()
				g := NewGenerator(uint64(100+step), testDevice)
				loss := Zeros(nil, Float32, testDevice)
				for i, p := range c.ps {
					r := Randn(p.Tensor.Shape(), Float32, testDevice, g)
					if i < 3 || step%2 == 0 {
						loss = loss.Add(p.Tensor.ToDType(Float32).Mul(r).Sum(false))
					}
				}
				g.Close()
				loss.Backward()
				c.o.Step()
				c.o.ZeroGrad()
				s.Close()
			}
			a, b := optRef.State(), optGot.State()
			for k, v := range a {
				if v.DType().IsFloat() && !AllClose(v, b[k], 1e-6, atol) {
					t.Errorf("step %d (%s kernel): %s differs from the per-parameter step", step, AdamWKernel(), k)
				}
				if !v.DType().IsFloat() && !Equal(v, b[k]) {
					t.Errorf("step %d: %s = %v, want %v", step, k, b[k], v)
				}
			}
			for i := range got {
				w := got[i].Tensor
				if m := optGot.Master(got[i].Name); m != nil && !Equal(w, m.ToDType(w.DType())) {
					t.Errorf("step %d: %s is not its master rounded", step, got[i].Name)
				}
				if w.DType() == Float32 && !AllClose(w, ref[i].Tensor, 1e-6, atol) {
					t.Errorf("step %d: %s differs from the per-parameter step", step, got[i].Name)
				}
			}
		}
		// extra.weight had gradients on steps 0, 2 and 4 only.
		if st := optGot.State()["extra.weight.step"]; st == nil || st.Int() != 3 {
			t.Errorf("extra.weight's own step count = %v, want 3", st)
		}
	})
}
