package model

import "github.com/mtgrpo/mtgrpo/torch"

// Fused projections. Generation runs each layer's q, k and v projections as one matrix product,
// and gate and up as another, over their weights laid out back to back in one storage
// (torch.FuseRows). The weight table is unchanged: q_proj.weight, k_proj.weight, ... stay the
// parameters that load, export, the optimizer and checkpoints see; each is a view of its rows of
// the layer's fused storage, so every update in place (an AdamW step, a bf16 weight rewritten from
// its float32 master, a broadcast from rank 0) shows in the fused weight without a copy, and the
// sampler computes with exactly the trainer's weights. Training keeps the separate products (their
// gradients are the parameters'). Whatever replaces a parameter instead of updating it in place
// (ZeRO-3 swaps the weights out for the update and gathers new ones after) is laid out again by
// the next generation pass: one copy of the layer's weights, then views again. LoRA adapters (the
// trained tensors then, the base weights frozen) are added to each projection's part of the
// fused product, as Linear.Forward adds them to its own.

// fusedLayer is one layer's q/k/v and gate/up weights laid out back to back, with their biases
// where the architecture has them (nil otherwise).
type fusedLayer struct {
	qkv, qkvBias, gateUp, gateUpBias *torch.Tensor
	q, kv, inter                     int64 // the widths of q, of k (= v), of gate (= up)
}

// fuseGroups are the groups fuse lays out, layer by layer: q/k/v weights, gate/up weights, then
// the q/k/v and gate/up biases where the architecture has them.
func (m *Model) fuseGroups() [][]*torch.Tensor {
	var groups [][]*torch.Tensor
	for _, l := range m.Layers {
		p := l.parts()
		groups = append(groups, []*torch.Tensor{p.q.Weight, p.k.Weight, p.v.Weight},
			[]*torch.Tensor{p.mlp.GateProj.Weight, p.mlp.UpProj.Weight})
		if p.q.Bias != nil {
			groups = append(groups, []*torch.Tensor{p.q.Bias, p.k.Bias, p.v.Bias})
		}
		if p.mlp.GateProj.Bias != nil {
			groups = append(groups, []*torch.Tensor{p.mlp.GateProj.Bias, p.mlp.UpProj.Bias})
		}
	}
	return groups
}

// fuse lays every layer's projections out (a check of pointers when they already are, one
// crossing) and returns the fused weights, views in the current scope.
func (m *Model) fuse() []fusedLayer {
	wholes, _ := torch.FuseRows(m.fuseGroups())
	out := make([]fusedLayer, len(m.Layers))
	i := 0
	for li, l := range m.Layers {
		p := l.parts()
		f := &out[li]
		f.qkv, f.gateUp = wholes[i], wholes[i+1]
		i += 2
		if p.q.Bias != nil {
			f.qkvBias = wholes[i]
			i++
		}
		if p.mlp.GateProj.Bias != nil {
			f.gateUpBias = wholes[i]
			i++
		}
		f.q, f.kv, f.inter = p.q.Weight.Size(0), p.k.Weight.Size(0), p.mlp.GateProj.Weight.Size(0)
	}
	return out
}

// project computes the q, k and v projections of x [B, T, hidden]: one product over the fused
// weights in generation, three products otherwise.
func (a *attention) project(layer int, x *torch.Tensor, q, k, v *Linear) (*torch.Tensor, *torch.Tensor, *torch.Tensor) {
	f := a.fusedAt(layer)
	if f == nil {
		return q.Forward(x), k.Forward(x), v.Forward(x)
	}
	qkv := torch.Linear(x, f.qkv, f.qkvBias).SplitSizes([]int64{f.q, f.kv, f.kv}, -1)
	return adapt(q, x, qkv[0]), adapt(k, x, qkv[1]), adapt(v, x, qkv[2])
}

// adapt adds l's LoRA update to y, l's base product of x, when l has an active adapter (lora.go):
// the fused product is the base weights'.
func adapt(l *Linear, x, y *torch.Tensor) *torch.Tensor {
	if l.LoRA.active() {
		return l.LoRA.add(x, y)
	}
	return y
}

// fusedAt is layer's fused weights in generation, nil otherwise.
func (a *attention) fusedAt(layer int) *fusedLayer {
	if a.fused == nil {
		return nil
	}
	return &a.fused[layer]
}
