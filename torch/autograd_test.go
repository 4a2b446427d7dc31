package torch

import (
	"testing"
)

func TestBackwardBasics(t *testing.T) {
	onTorch(t, func() {
		// y = sum(x² · w): dy/dx = 2·x·w = [2·1·3, 2·2·4] = [6, 16]; dy/dw = x² = [1, 4].
		x := dev(FromSlice([]float32{1, 2})).SetRequiresGrad(true)
		w := dev(FromSlice([]float32{3, 4})).SetRequiresGrad(true)
		x.Square().Mul(w).Sum(false).Backward()
		expectFloats(t, "dx", x.Grad().Float32s(), []float64{6, 16}, 0)
		expectFloats(t, "dw", w.Grad().Float32s(), []float64{1, 4}, 0)
		// A second backward accumulates: dx = 6+6, 16+16.
		x.Square().Mul(w).Sum(false).Backward()
		expectFloats(t, "dx accumulated", x.Grad().Float32s(), []float64{12, 32}, 0)
		ZeroGrad([]*Tensor{x, w})
		if x.Grad() != nil {
			t.Error("ZeroGrad left a gradient")
		}

		// Vector output with a gradient argument: y = 3x, dy = [1, 2] -> dx = [3, 6].
		y := x.MulScalar(3)
		Backward([]*Tensor{y}, BackwardOpts{GradOutputs: []*Tensor{dev(FromSlice([]float32{1, 2}))}})
		expectFloats(t, "dx with grad", x.Grad().Float32s(), []float64{3, 6}, 0)
		ZeroGradInPlace([]*Tensor{x})
		expectFloats(t, "zeroed in place", x.Grad().Float32s(), []float64{0, 0}, 0)

		// Inputs limits accumulation to w.
		ZeroGrad([]*Tensor{x, w})
		Backward([]*Tensor{x.Mul(w).Sum(false)}, BackwardOpts{Inputs: []*Tensor{w}})
		if x.Grad() != nil {
			t.Error("x got a gradient though only w was an input")
		}
		expectFloats(t, "dw only", w.Grad().Float32s(), []float64{1, 2}, 0)

		// Grads leaves .grad alone: d(sum(x·w))/dx = w.
		ZeroGrad([]*Tensor{x, w})
		g := Grads([]*Tensor{x.Mul(w).Sum(false)}, []*Tensor{x}, BackwardOpts{})
		expectFloats(t, "autograd.grad", g[0].Float32s(), []float64{3, 4}, 0)
		if x.Grad() != nil {
			t.Error("Grads wrote .grad")
		}
		// An unused input is an error unless AllowUnused.
		z := dev(FromSlice([]float32{1})).SetRequiresGrad(true)
		if Do(func() error { Grads([]*Tensor{x.Sum(false)}, []*Tensor{z}, BackwardOpts{}); return nil }) == nil {
			t.Error("unused input accepted")
		}
		if g := Grads([]*Tensor{x.Sum(false)}, []*Tensor{z}, BackwardOpts{AllowUnused: true}); g[0] != nil {
			t.Error("unused input got a gradient")
		}
	})
}

func TestGradModes(t *testing.T) {
	onTorch(t, func() {
		x := dev(FromSlice([]float32{1})).SetRequiresGrad(true)
		if !GradEnabled() {
			t.Error("grad disabled by default")
		}
		NoGrad(func() {
			if GradEnabled() || x.MulScalar(2).RequiresGrad() {
				t.Error("NoGrad still records")
			}
			EnableGrad(func() {
				if !x.MulScalar(2).RequiresGrad() {
					t.Error("EnableGrad inside NoGrad does not record")
				}
			})
		})
		InferenceMode(func() {
			if x.MulScalar(2).RequiresGrad() {
				t.Error("InferenceMode records")
			}
		})
		if !GradEnabled() || !x.MulScalar(2).RequiresGrad() {
			t.Error("grad mode not restored")
		}
		// Restored even when the closure panics.
		_ = Do(func() error { NoGrad(func() { errorf("test", "boom") }); return nil })
		if !GradEnabled() {
			t.Error("grad mode not restored after a panic")
		}
		d := x.MulScalar(2).Detach()
		if d.RequiresGrad() {
			t.Error("Detach kept requires_grad")
		}
	})
}

// tinyNet is a small residual network: embedding, L layers h += silu(h W_l^T), then a head and the
// mean negative log-likelihood of targets.
type tinyNet struct {
	emb, head *Tensor
	layers    []*Tensor
}

func (n *tinyNet) params() []*Tensor { return append([]*Tensor{n.emb, n.head}, n.layers...) }

func (n *tinyNet) layer(l int, h *Tensor) *Tensor { return h.Add(Linear(h, n.layers[l], nil).Silu()) }

func (n *tinyNet) loss(h, targets *Tensor) *Tensor {
	return TokenLogprobs(Linear(h, n.head, nil), targets).Mean(false).Neg()
}

// grads copies every parameter's gradient out and clears it.
func (n *tinyNet) grads() [][]float32 {
	var out [][]float32
	for _, p := range n.params() {
		out = append(out, p.Grad().Float32s())
	}
	ZeroGrad(n.params())
	return out
}

// TestCheckpointedBackwardMatchesPlain drives layer-wise gradient checkpointing from Go (forward
// under no-grad keeping layer inputs, then recompute and backpropagate one layer at a time) and
// checks every parameter gradient against ordinary backprop.
func TestCheckpointedBackwardMatchesPlain(t *testing.T) {
	onTorch(t, func() {
		g := NewGenerator(7, testDevice)
		defer g.Close()
		const vocab, d, layers = 11, 8, 3
		n := &tinyNet{
			emb:  Randn([]int64{vocab, d}, Float32, testDevice, g).SetRequiresGrad(true),
			head: Randn([]int64{vocab, d}, Float32, testDevice, g).MulScalar(0.3).SetRequiresGrad(true),
		}
		for l := 0; l < layers; l++ {
			n.layers = append(n.layers, Randn([]int64{d, d}, Float32, testDevice, g).MulScalar(0.3).SetRequiresGrad(true))
		}
		ids := Randint(0, vocab, []int64{2, 5}, Int64, testDevice, g)
		targets := Randint(0, vocab, []int64{2, 5}, Int64, testDevice, g)

		// Plain backprop.
		h := Embedding(n.emb, ids, NoPadding)
		for l := 0; l < layers; l++ {
			h = n.layer(l, h)
		}
		plainLoss := n.loss(h, targets)
		plainLoss.Backward()
		want := n.grads()

		// 1. Forward without a graph, keeping each layer's input.
		inputs := make([]*Tensor, layers+1)
		NoGrad(func() {
			inputs[0] = Embedding(n.emb, ids, NoPadding)
			for l := 0; l < layers; l++ {
				inputs[l+1] = n.layer(l, inputs[l])
			}
		})
		// 2. Loss from the last hidden state, as a leaf.
		x := inputs[layers].Detach().SetRequiresGrad(true)
		ckptLoss := n.loss(x, targets)
		ckptLoss.Backward()
		grad := x.Grad()
		// 3. Recompute each layer with a graph and push the gradient through it.
		for l := layers - 1; l >= 0; l-- {
			x := inputs[l].Detach().SetRequiresGrad(true)
			y := n.layer(l, x)
			Backward([]*Tensor{y}, BackwardOpts{GradOutputs: []*Tensor{grad}})
			grad = x.Grad()
		}
		// 4. Into the embedding.
		Backward([]*Tensor{Embedding(n.emb, ids, NoPadding)}, BackwardOpts{GradOutputs: []*Tensor{grad}})
		got := n.grads()

		if !closeTo(plainLoss.Float(), ckptLoss.Float(), 1e-6) {
			t.Errorf("loss %v vs %v", plainLoss.Float(), ckptLoss.Float())
		}
		names := []string{"emb", "head", "layer0", "layer1", "layer2"}
		for i := range want {
			w := make([]float64, len(want[i]))
			nonzero := false
			for k, v := range want[i] {
				w[k] = float64(v)
				nonzero = nonzero || v != 0
			}
			if !nonzero {
				t.Errorf("%s: plain gradient is all zero (test would prove nothing)", names[i])
			}
			expectFloats(t, names[i]+" grad", got[i], w, 1e-5)
		}
	})
}
