package torch

import (
	"math"
	"testing"
)

// TestGradBuffersMatchPlainGradients: four steps of two accumulated backward passes each over
// mixedParams (a bf16 matrix, a float32 vector, a bf16 bias), a float32 matrix that backward
// reaches only on even steps and a frozen vector, once with the gradients in GradBuffers (clip,
// StepGrads, AdamW.StepWith, Zero) and once as plain .grad tensors (ClipGradNorm, Step,
// ZeroGrad). The loss is Σ r·w with r drawn afresh per pass, so both get the same gradients
// whatever their weights. The accumulated gradients are the same additions in the same order:
// equal bit for bit. The norm is summed over two buffers instead of four tensors: equal to 1e-6
// relative, and so are the clipped gradients, the weights and the state after each step (float32
// rounding). The matrix not reached has no gradient, as without buffers, and its own step count
// lags (2 of 4); the frozen vector is not held.
func TestGradBuffersMatchPlainGradients(t *testing.T) {
	onTorch(t, func() {
		cfg := AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
		mk := func() ([]NamedTensor, *Tensor) {
			g := NewGenerator(21, testDevice)
			defer g.Close()
			ps := append(mixedParams(5), NamedTensor{"extra.weight", Randn([]int64{5, 2}, Float32, testDevice, g).SetRequiresGrad(true)})
			return ps, Randn([]int64{3}, Float32, testDevice, g)
		}
		ref, frozenRef := mk()
		got, frozen := mk()
		optRef, optGot := newAdamW(ref, cfg), newAdamW(got, cfg)
		defer optRef.Close()
		defer optGot.Close()
		var gotParams []*Tensor
		for _, p := range got {
			gotParams = append(gotParams, p.Tensor)
		}
		buf := NewGradBuffers(append(gotParams, frozen))
		defer buf.Close()
		// float32: 4 + 10 elements; bfloat16: 12 + 3.
		if buf.Params() != 4 || buf.Buffers() != 2 || buf.Bytes() != 14*4+15*2 {
			t.Errorf("buffers: %d parameters, %d buffers, %d bytes; want 4, 2, 86", buf.Params(), buf.Buffers(), buf.Bytes())
		}
		backward := func(ps []NamedTensor, fz *Tensor, step, pass int) {
			s := NewScope()
			defer s.Close()
			g := NewGenerator(uint64(100+10*step+pass), testDevice)
			defer g.Close()
			loss := fz.Sum(false)
			for i, p := range ps {
				r := Randn(p.Tensor.Shape(), Float32, testDevice, g)
				if i < 3 || step%2 == 0 {
					loss = loss.Add(p.Tensor.ToDType(Float32).Mul(r).Sum(false))
				}
			}
			loss.Backward()
		}
		for step := range 4 {
			for pass := range 2 {
				backward(ref, frozenRef, step, pass)
				backward(got, frozen, step, pass)
			}
			reached := buf.Settle()
			for i, p := range got {
				want := ref[i].Tensor.Grad()
				if reached[i] != (want != nil) {
					t.Errorf("step %d: %s reached %v, has a plain gradient %v", step, p.Name, reached[i], want != nil)
				}
				if g := p.Tensor.Grad(); (g == nil) != (want == nil) || g != nil && !Equal(g, want) {
					t.Errorf("step %d: %s's accumulated gradient differs from the plain one", step, p.Name)
				}
			}
			if frozen.Grad() != nil {
				t.Errorf("step %d: the frozen vector has a gradient", step)
			}
			nRef, nGot := ClipGradNorm(optRef.params, 0.5), buf.ClipGradNorm(0.5)
			if math.Abs(nRef-nGot) > 1e-6*nRef || nRef < 0.5 {
				t.Errorf("step %d: norm %v, plain %v (want equal, above the bound 0.5)", step, nGot, nRef)
			}
			for i, p := range got {
				if g, want := p.Tensor.Grad(), ref[i].Tensor.Grad(); g != nil && !AllClose(g.ToDType(Float32), want.ToDType(Float32), 1e-6, 1e-9) {
					t.Errorf("step %d: %s's clipped gradient differs from the plain one", step, p.Name)
				}
			}
			optRef.Step()
			optRef.ZeroGrad()
			s := NewScope()
			optGot.StepWith(buf.StepGrads())
			s.Close()
			buf.Zero()
			for k, v := range optRef.State() {
				w := optGot.State()[k]
				if v.DType().IsFloat() && !AllClose(v, w, 1e-6, 1e-9) || !v.DType().IsFloat() && !Equal(v, w) {
					t.Errorf("step %d: state %s differs from the plain step's", step, k)
				}
			}
			for i, p := range got {
				if g := p.Tensor.Grad(); g == nil || g.Abs().Max(false).Float() != 0 {
					t.Errorf("step %d: after Zero, %s's gradient is %v, want zeros", step, p.Name, g)
				}
				if m := optGot.Master(p.Name); m != nil && !Equal(p.Tensor, m.ToDType(p.Tensor.DType())) {
					t.Errorf("step %d: %s is not its master rounded", step, p.Name)
				}
				if w := ref[i].Tensor; w.DType() == Float32 && !AllClose(p.Tensor, w, 1e-6, 1e-9) {
					t.Errorf("step %d: %s differs from the plain step's", step, p.Name)
				}
			}
		}
		if st := optGot.State()["extra.weight.step"]; st == nil || st.Int() != 2 {
			t.Errorf("extra.weight's own step count = %v, want 2", st)
		}
	})
}

// A gradient replaced behind the buffers' back (ZeroGrad sets it to none, the next backward makes
// a fresh tensor) is copied into its region: Settle reports it reached, the view is its gradient
// again (the buffer sees the value: the norm is |(3, 4)| = 5), and Zero clears it.
func TestGradBuffersTakeBackReplacedGradients(t *testing.T) {
	onTorch(t, func() {
		w := dev(FromSlice([]float32{1, 2})).SetRequiresGrad(true)
		buf := NewGradBuffers([]*Tensor{w})
		defer buf.Close()
		ZeroGrad([]*Tensor{w})
		w.Mul(dev(FromSlice([]float32{3, 4}))).Sum(false).Backward()
		if r := buf.Settle(); len(r) != 1 || !r[0] {
			t.Errorf("reached %v, want [true]", r)
		}
		if n := buf.ClipGradNorm(math.Inf(1)); math.Abs(n-5) > 1e-6 {
			t.Errorf("norm %v, want 5", n)
		}
		buf.Zero()
		if g := w.Grad(); g == nil || !Equal(g, dev(FromSlice([]float32{0, 0}))) {
			t.Errorf("after Zero the gradient is %v, want zeros", g)
		}
		if r := buf.Settle(); r[0] || w.Grad() != nil {
			t.Errorf("no backward since Zero: reached %v, gradient %v; want false, none", r[0], w.Grad())
		}
		buf.Close()
		buf.Close()
		if w.Grad() != nil {
			t.Errorf("Close left a gradient")
		}
	})
}

// TrackCPUMemory counts CPU tensor blocks: a new [256, 1024] float32 tensor is one allocation of
// exactly 1 MiB, live until freed, and the peak remembers it after the free; ResetCPUPeak starts
// from what is live.
func TestCPUMemoryCounts(t *testing.T) {
	onTorch(t, func() {
		TrackCPUMemory()
		TrackCPUMemory() // a second call changes nothing
		ResetCPUPeak()
		c0 := CPUMemoryStats()
		x := Empty([]int64{256, 1024}, Float32, CPU)
		c1 := CPUMemoryStats()
		if d := c1.Sub(c0); d.Allocs != 1 || d.Frees != 0 || c1.Live-c0.Live != 1<<20 {
			t.Errorf("one 1 MiB tensor: %+v then %+v", c0, c1)
		}
		x.Free()
		c2 := CPUMemoryStats()
		if d := c2.Sub(c1); d.Frees != 1 || c2.Live != c0.Live || c2.Peak < c0.Live+1<<20 {
			t.Errorf("freed: %+v then %+v", c1, c2)
		}
		ResetCPUPeak()
		if c := CPUMemoryStats(); c.Peak != c.Live {
			t.Errorf("after ResetCPUPeak: %+v", c)
		}
	})
}
