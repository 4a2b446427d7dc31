package model

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Training is two calls: Train runs the forward pass and returns per-token log-probs (and entropies)
// as leaf tensors that require grad; the caller builds any loss from them; Pass.Backward(loss) then
// backpropagates into the weights' .grad.
//
// Backward works in segments, driven from Go (no C++ callback): first loss → d loss/d log-probs;
// then the head: through the graph Train kept when the logits fit ForwardOptions.HeadMemoryBudget,
// or else recomputed ChunkTokens rows at a time, each chunk backpropagated on its own, so the
// [tokens, vocab] float32 logits never exist for the whole batch, not even in backward; then the
// decoder layers, either through the autograd graph kept by the forward pass (plain) or, with
// Checkpoint, one layer at a time from its saved input (layer-wise gradient checkpointing: forward
// under no-grad keeping each layer's input, then for l = L−1 … 0 recompute layer l with grad,
// backward with the gradient of its output, and pass its input's gradient down); finally the
// embedding.

// Pass is one training forward pass awaiting its backward.
type Pass struct {
	Output

	m      *Model
	b      *Batch
	o      ForwardOptions
	ids    *torch.Tensor
	a      *attention
	inputs []*torch.Tensor // Checkpoint: the input of every layer (no graph)
	last   *torch.Tensor   // output of the last layer: with a graph (plain) or without (Checkpoint)
	hflat  *torch.Tensor   // last, detached and flattened [rows*cols, hidden]: the head's leaf
	kept   *Output         // the head's outputs with their graph to hflat (HeadMemoryBudget), or nil
	seed   uint64          // the pass's LoRA dropout masks (a recomputed layer sees the forward's)
	done   bool
}

// Train runs the training forward pass of b. The weights must be trainable (SetTrainable(true)).
// Output.LogProbs and Output.Entropy require grad; build the loss from them and call Backward.
func (m *Model) Train(b *Batch, o ForwardOptions) (p *Pass, err error) {
	defer torch.Recover(&err)
	if err := m.checkTrainable(); err != nil {
		return nil, err
	}
	if err := b.checkIDs(m.Config.VocabSize); err != nil {
		return nil, err
	}
	if o.HiddenOnly && !o.Hidden {
		return nil, fmt.Errorf("model: HiddenOnly without Hidden leaves the pass no output")
	}
	if o.Weights != nil && !o.Checkpoint {
		return nil, fmt.Errorf("model: weights gathered unit by unit need Checkpoint (the backward re-runs each layer)")
	}
	ids, a := m.inputs(b)
	p = &Pass{m: m, b: b, o: o, ids: ids, a: a, seed: m.nextDropSeed()}
	m.dropping(p.seed, func() { p.forward(ids, a) })
	hidden := int64(m.Config.HiddenSize)
	p.hflat = p.last.View(-1, hidden).Detach().SetRequiresGrad(true)
	if !o.HiddenOnly {
		p.trainHead()
	}
	if o.Hidden {
		// Small ([tokens, hidden]): kept with its graph to hflat rather than recomputed.
		torch.EnableGrad(func() { p.Hidden = m.Norm.Forward(p.hflat).View(p.last.Shape()...) })
	}
	return p, nil
}

// forward runs the decoder layers: without a graph, keeping each layer's input (Checkpoint), or
// with the autograd graph.
func (p *Pass) forward(ids *torch.Tensor, a *attention) {
	m := p.m
	if !p.o.Checkpoint {
		torch.EnableGrad(func() { p.last = m.layers(m.embed(ids), a) }) // even inside a caller's NoGrad
		return
	}
	torch.NoGrad(func() {
		p.gather(0)
		x := m.embed(ids)
		if !m.Config.TieWordEmbeddings {
			p.release(0)
		}
		for i, l := range m.Layers {
			p.inputs = append(p.inputs, x)
			in := x
			p.gather(1 + i)
			x = torch.Scoped(func() *torch.Tensor { return l.Forward(in, a) })
			p.release(1 + i)
		}
		p.last = x
	})
	p.gather(m.NumUnits() - 1)
}

// trainHead computes the head's outputs as leaves that require grad, the loss's inputs. When the
// logits fit the memory budget, they are computed once with grad in one chunk and the graph is kept
// for Backward; otherwise without grad, and Backward recomputes them.
func (p *Pass) trainHead() {
	pred, _, _ := p.b.scored()
	vocab := p.m.Config.VocabSize
	if len(pred) == 0 || !p.o.keepHead(len(pred), vocab) {
		torch.NoGrad(func() { p.Output = *p.m.head(p.b, p.hflat, p.o) })
	} else {
		o := p.o
		o.ChunkTokens = max(1, len(pred))
		torch.EnableGrad(func() { p.kept = p.m.head(p.b, p.hflat, o) })
		p.LogProbs = p.kept.LogProbs.Detach()
		if p.kept.Entropy != nil {
			p.Entropy = p.kept.Entropy.Detach()
		}
	}
	p.LogProbs.SetRequiresGrad(true)
	if p.o.Entropy {
		p.Entropy.SetRequiresGrad(true)
	}
}

// Backward accumulates d loss/d weight into every weight's .grad (add to what is there: call
// torch.ZeroGrad between optimizer steps). loss must be a scalar computed from LogProbs, Entropy
// and Hidden (and anything else: a value head's weights get their gradients too). A pass can be
// backpropagated once.
func (p *Pass) Backward(loss *torch.Tensor) (err error) {
	defer torch.Recover(&err)
	if p.done {
		return fmt.Errorf("model: Backward called twice on one pass")
	}
	p.done = true
	// Into LogProbs.grad, Entropy.grad and, through Hidden, hflat.grad and the final norm.
	torch.Backward([]*torch.Tensor{loss}, torch.BackwardOpts{})
	p.backwardHead()
	g := p.hflat.Grad()
	if g == nil {
		return fmt.Errorf("model: the loss depends on neither the log-probs, the entropies nor the hidden states")
	}
	g = g.View(p.last.Shape()...)
	defer p.free()
	p.ready(p.m.NumUnits() - 1)
	p.release(p.m.NumUnits() - 1)
	if !p.o.Checkpoint {
		torch.Backward([]*torch.Tensor{p.last}, torch.BackwardOpts{GradOutputs: []*torch.Tensor{g}})
		for u := len(p.m.Layers); u >= 0; u-- {
			p.ready(u)
		}
		return nil
	}
	for l := len(p.m.Layers) - 1; l >= 0; l-- {
		p.gather(1 + l)
		g = p.backwardLayer(l, g)
		p.ready(1 + l)
		p.release(1 + l)
	}
	if !p.m.Config.TieWordEmbeddings {
		p.gather(0)
	}
	if !p.m.EmbedTokens.RequiresGrad() { // frozen (LoRA): nothing below the layers to train
		p.ready(0)
		p.release(0)
		return nil
	}
	torch.EnableGrad(func() {
		x := p.m.embed(p.ids)
		torch.Backward([]*torch.Tensor{x}, torch.BackwardOpts{GradOutputs: []*torch.Tensor{g}})
	})
	p.ready(0)
	p.release(0)
	return nil
}

// ready tells ForwardOptions.GradsReady, if set, that unit u's gradients are complete.
func (p *Pass) ready(u int) {
	if p.o.GradsReady != nil {
		p.o.GradsReady(u)
	}
}

// gather and release pass unit u on to ForwardOptions.Weights, if set.
func (p *Pass) gather(u int) {
	if p.o.Weights != nil {
		p.o.Weights.Gather(u)
	}
}

func (p *Pass) release(u int) {
	if p.o.Weights != nil {
		p.o.Weights.Release(u)
	}
}

// free frees what only the backward pass needed (the Output tensors stay for metrics).
func (p *Pass) free() {
	for _, t := range []*torch.Tensor{p.ids, p.a.cos, p.a.sin, p.a.mask, p.last, p.hflat} {
		t.Free() // nil-safe
	}
	if p.kept != nil {
		for _, t := range p.kept.tensors() {
			t.Free()
		}
	}
}

// backwardHead backpropagates d loss/d log-probs (and entropies) through the head into hflat.grad
// and the norm and head weights: through the kept graph, or recomputing the head chunk by chunk and
// backpropagating each chunk with its slice of the gradients.
func (p *Pass) backwardHead() {
	pred, target, at := p.b.scored()
	gradOf := func(t *torch.Tensor) *torch.Tensor {
		if t == nil {
			return nil
		}
		if g := t.Grad(); g != nil {
			return g.View(-1)
		}
		return torch.ZerosLike(t).View(-1)
	}
	if p.LogProbs == nil || p.LogProbs.Grad() == nil && (p.Entropy == nil || p.Entropy.Grad() == nil) {
		return // the loss uses only the hidden states
	}
	glp, gent := gradOf(p.LogProbs), gradOf(p.Entropy)
	if p.kept != nil {
		outs, grads := []*torch.Tensor{p.kept.LogProbs.View(-1)}, []*torch.Tensor{glp}
		if p.kept.Entropy != nil && p.Entropy.Grad() != nil {
			outs, grads = append(outs, p.kept.Entropy.View(-1)), append(grads, gent)
		}
		torch.Backward(outs, torch.BackwardOpts{GradOutputs: grads})
		return
	}
	// The entropies are recomputed only when the loss uses them (an entropy bonus): otherwise a
	// chunk's backward holds two [rows, vocab] tensors fewer.
	o := p.o
	o.Entropy = p.Entropy != nil && p.Entropy.Grad() != nil
	step := o.chunk(p.m.Config.VocabSize)
	for lo := 0; lo < len(pred); lo += step {
		hi := min(lo+step, len(pred))
		s := torch.NewScope()
		where := torch.FromSlice(at[lo:hi]).ToDevice(p.m.Device)
		torch.EnableGrad(func() {
			lp, ent := p.m.scoreChunk(p.hflat, pred[lo:hi], target[lo:hi], o)
			outs, grads := []*torch.Tensor{lp}, []*torch.Tensor{glp.IndexSelect(0, where)}
			if ent != nil {
				outs, grads = append(outs, ent), append(grads, gent.IndexSelect(0, where))
			}
			torch.Backward(outs, torch.BackwardOpts{GradOutputs: grads})
		})
		s.Close()
	}
}

// backwardLayer recomputes layer l from its saved input with grad, backpropagates g (the gradient of
// its output) and returns the gradient of its input. Only this layer's activations are alive.
func (p *Pass) backwardLayer(l int, g *torch.Tensor) *torch.Tensor {
	return torch.Scoped(func() *torch.Tensor {
		x := p.inputs[l].Detach().SetRequiresGrad(true)
		var gin *torch.Tensor
		p.m.dropping(p.seed, func() {
			torch.EnableGrad(func() {
				y := p.m.Layers[l].Forward(x, p.a)
				torch.Backward([]*torch.Tensor{y}, torch.BackwardOpts{GradOutputs: []*torch.Tensor{g}})
				gin = x.Grad()
			})
		})
		p.inputs[l].Free()
		return gin
	})
}
