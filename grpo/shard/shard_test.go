package shard

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/mtgrpo/mtgrpo/internal/expect"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// fakeEngine records what an Optimizer asks of its engine; passes answers most (the count the
// ranks agree on) and clip norm.
type fakeEngine struct {
	log  []string
	most int
	norm float64
}

func (f *fakeEngine) add(format string, a ...any) { f.log = append(f.log, fmt.Sprintf(format, a...)) }

func (f *fakeEngine) options() model.ForwardOptions {
	return model.ForwardOptions{GradsReady: func(u int) { f.add("ready %d", u) }}
}
func (f *fakeEngine) arm() { f.add("arm") }
func (f *fakeEngine) passes(n int) int {
	f.add("passes %d", n)
	return max(n, f.most)
}
func (f *fakeEngine) idle()    { f.add("idle") }
func (f *fakeEngine) shard()   { f.add("shard") }
func (f *fakeEngine) unshard() { f.add("unshard") }
func (f *fakeEngine) clip(maxNorm float64) float64 {
	f.add("clip %v", maxNorm)
	return f.norm
}
func (f *fakeEngine) step(lr float64)                          { f.add("step %v", lr) }
func (f *fakeEngine) skip()                                    { f.add("skip") }
func (f *fakeEngine) steps() int                               { return 0 }
func (f *fakeEngine) state() map[string]*torch.Tensor          { return nil }
func (f *fakeEngine) loadState(map[string]*torch.Tensor) error { return nil }
func (f *fakeEngine) close()                                   {}

// A mini-batch's choreography, with a fake engine and a fake pass that calls the pass options'
// hook: this rank's passes in order, the reduction armed before the last of them, as many idle
// passes as the busiest rank has micro-batches more (4 agreed, 2 here: 2 idle), one clip at
// the configured bound, and the step with the learning rate given to Step. A non-finite norm
// makes Step skip; Update brackets the mini-batches with shard and unshard; a pass's error comes
// back as it is, before any reduction.
func TestPassesChoreography(t *testing.T) {
	onTorch(t, func() {
		f := &fakeEngine{most: 4, norm: 2.5}
		o := &Optimizer{e: f, maxNorm: 1}
		pass := func(i int, fo model.ForwardOptions) error {
			f.add("pass %d", i)
			fo.GradsReady(i)
			return nil
		}
		err := o.Update(func() error {
			norm, err := o.Passes(2, pass)
			if err != nil || norm != 2.5 {
				t.Errorf("Passes: %v, %v; want 2.5", norm, err)
			}
			if stepped, err := o.Step(0.25); !stepped || err != nil {
				t.Errorf("Step: %v, %v; want a step", stepped, err)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		want := []string{"shard", "passes 2", "pass 0", "ready 0", "arm", "pass 1", "ready 1", "idle", "idle", "clip 1",
			"step 0.25", "unshard"}
		if !slices.Equal(f.log, want) {
			t.Errorf("calls %q,\nwant  %q", f.log, want)
		}

		for _, norm := range []float64{math.NaN(), math.Inf(1)} {
			f.log, f.norm, f.most = nil, norm, 0
			if _, err := o.Passes(1, pass); err != nil {
				t.Error(err)
			}
			if stepped, err := o.Step(0.25); stepped || err != nil {
				t.Errorf("norm %v: Step: %v, %v; want a skip", norm, stepped, err)
			}
			if want := []string{"passes 1", "arm", "pass 0", "ready 0", "clip 1", "skip"}; !slices.Equal(f.log, want) {
				t.Errorf("norm %v: calls %q, want %q", norm, f.log, want)
			}
		}

		if _, err := o.Step(0.25); err == nil {
			t.Errorf("a second Step after one Passes: no error")
		}
		f.log = nil
		bad := errors.New("bad batch")
		_, err = o.Passes(2, func(i int, _ model.ForwardOptions) error { f.add("pass %d", i); return bad })
		if !errors.Is(err, bad) || err.Error() != "bad batch" {
			t.Errorf("a pass's error came back as %v", err)
		}
		if want := []string{"passes 2", "pass 0"}; !slices.Equal(f.log, want) {
			t.Errorf("after a failed pass: calls %q, want %q", f.log, want)
		}
		if _, err := o.Step(0.25); err == nil {
			t.Errorf("Step after a failed Passes: no error")
		}
	})
}

// One process, two mini-batches of one pass each over w (float32, decayed) and b.bias (exempt
// from decay), with a fake pass whose loss is Σ g·w, so that its gradient is the constant g.
//
// Mini-batch 1: g = (3, 4) on w and 0 on the bias: the norm is 5, clipped to 1 by the factor
// 1/(5 + 1e-6) (torch.nn.utils.clip_grad_norm_), so w's gradient is (0.6, 0.8) before the step.
// AdamW's first step at lr 0.1 (β 0.9, 0.999, ε 1e-8, decay 0.01): m̂ = g, v̂ = g², so
// w ← w·(1 − 0.1·0.01) − 0.1·g/(|g| + 1e-8) = (1·0.999 − 0.1, −2·0.999 − 0.1) = (0.899, −2.098);
// the bias has a zero gradient and no decay: it stays 0.5.
//
// Mini-batch 2, at lr 0.05: g = (0.3, −0.4), norm 0.5, not clipped; both moments carry the first
// step: m = 0.9·0.1·(0.6, 0.8) + 0.1·g = (0.084, 0.032), v = 0.999·0.001·(0.36, 0.64) +
// 0.001·g² = (0.00044964, 0.00079936); bias-corrected by 1 − 0.9² = 0.19 and 1 − 0.999² = 0.001999:
// m/0.19 = (0.4421053, 0.1684211), √(v/0.001999) = (0.4742705, 0.6323606), so
// w ← w·(1 − 0.05·0.01) − 0.05·(m/0.19)/(√(v/0.001999) + 1e-8)
//
//	= (0.8985505 − 0.0466086, −2.0969510 − 0.0133167) = (0.8519419, −2.1102677).
func TestStepIsAdamW(t *testing.T) {
	onTorch(t, func() {
		w := torch.FromSlice([]float32{1, -2}).SetRequiresGrad(true)
		b := torch.FromSlice([]float32{0.5}).SetRequiresGrad(true)
		o, err := New([]torch.NamedTensor{{Name: "w", Tensor: w}, {Name: "b.bias", Tensor: b}}, Units{}, nil,
			Settings{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxGradNorm: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		minibatch := func(g []float32, lr float64, wantNorm float64, wantGrad []float64) {
			t.Helper()
			norm, err := o.Passes(1, func(int, model.ForwardOptions) error {
				s := torch.NewScope()
				defer s.Close()
				loss := w.Mul(torch.FromSlice(g)).Sum(false).Add(b.Sum(false).MulScalar(0))
				loss.Backward()
				return nil
			})
			if err != nil || !expect.Near(norm, wantNorm, 1e-6) {
				t.Errorf("lr %v: norm %v, %v; want %v", lr, norm, err, wantNorm)
			}
			expect.Slice(t, fmt.Sprintf("lr %v: clipped gradient", lr), w.Grad().Float64s(), wantGrad, 1e-7)
			if stepped, err := o.Step(lr); !stepped || err != nil {
				t.Errorf("lr %v: stepped %v, %v", lr, stepped, err)
			}
		}
		minibatch([]float32{3, 4}, 0.1, 5, []float64{3 / (5 + 1e-6), 4 / (5 + 1e-6)})
		expect.Slice(t, "w after step 1", w.Float64s(), []float64{0.899, -2.098}, 1e-6)
		expect.Slice(t, "b.bias after step 1", b.Float64s(), []float64{0.5}, 0)
		minibatch([]float32{0.3, -0.4}, 0.05, 0.5, []float64{0.3, -0.4})
		expect.Slice(t, "w after step 2", w.Float64s(), []float64{0.8519419, -2.1102677}, 1e-6)
		if o.Steps() != 2 {
			t.Errorf("Steps %d, want 2", o.Steps())
		}
	})
}

// A NaN gradient makes the norm NaN: Step skips, leaving the weights, the bfloat16 weight's
// float32 master and the moments as they were, and the next mini-batch's step is the first step
// of TestStepIsAdamW: w = (0.899, −2.098) and, for h (bfloat16, gradient 0, decayed),
// master 0.25·(1 − 0.1·0.01) = 0.24975, which rounds back to 0.25 in bfloat16. The skip counts in
// Steps but not in the parameters' own step counts (their bias correction).
func TestNonFiniteNormSkips(t *testing.T) {
	onTorch(t, func() {
		w := torch.FromSlice([]float32{1, -2}).SetRequiresGrad(true)
		h := torch.FromSlice([]float32{0.25}).ToDType(torch.BFloat16).SetRequiresGrad(true)
		o, err := New([]torch.NamedTensor{{Name: "w", Tensor: w}, {Name: "h", Tensor: h}}, Units{}, nil,
			Settings{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxGradNorm: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		minibatch := func(g float32) (float64, bool) {
			norm, err := o.Passes(1, func(int, model.ForwardOptions) error {
				s := torch.NewScope()
				defer s.Close()
				gw := torch.FromSlice([]float32{3, 4}).MulScalar(float64(g))
				loss := w.Mul(gw).Sum(false).Add(h.ToDType(torch.Float32).Sum(false).MulScalar(float64(g) - 1))
				loss.Backward()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			stepped, err := o.Step(0.1)
			if err != nil {
				t.Fatal(err)
			}
			return norm, stepped
		}
		before := snapshot(o.State())
		if norm, stepped := minibatch(float32(math.NaN())); !math.IsNaN(norm) || stepped {
			t.Errorf("NaN gradient: norm %v, stepped %v; want NaN, a skip", norm, stepped)
		}
		for k, v := range snapshot(o.State()) {
			if k != "skipped" && !slices.Equal(v, before[k]) {
				t.Errorf("after the skip, state %s is %v, was %v", k, v, before[k])
			}
		}
		expect.Slice(t, "w after the skip", w.Float64s(), []float64{1, -2}, 0)
		if norm, stepped := minibatch(1); !expect.Near(norm, 5, 1e-6) || !stepped {
			t.Errorf("good gradient: norm %v, stepped %v; want 5, a step", norm, stepped)
		}
		st := o.State()
		expect.Slice(t, "w", w.Float64s(), []float64{0.899, -2.098}, 1e-6)
		expect.Slice(t, "h", h.Float64s(), []float64{0.25}, 0)
		expect.Slice(t, "h's master", st["h.master"].Float64s(), []float64{0.24975}, 1e-8)
		if o.Steps() != 2 || st["w.step"].Int() != 1 || st["skipped"].Int() != 1 {
			t.Errorf("Steps %d, w.step %d, skipped %d; want 2, 1, 1", o.Steps(), st["w.step"].Int(), st["skipped"].Int())
		}
	})
}

// snapshot copies a state's tensors as float64s.
func snapshot(st map[string]*torch.Tensor) map[string][]float64 {
	out := map[string][]float64{}
	for k, v := range st {
		out[k] = v.ToDType(torch.Float64).Float64s()
	}
	return out
}
