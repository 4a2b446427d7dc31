package shard

import (
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/torch"
)

// ZeRO-3 (stage 3: parameter partitioning) for the update, with whole weights for generation, as
// DeepSpeed's hybrid engine does. Outside Optimizer.Update every rank holds the whole weights: the
// rollout, the scoring passes, evaluation, checkpoints and export run as without sharding. The
// update starts with shard: every parameter's tensor is freed and the parameter, a *torch.Tensor
// the model keeps, is pointed at an empty placeholder (torch.Tensor.Swap); the rank then holds of
// the weights only its shards of the float32 masters. A training pass (model.ForwardOptions.Weights,
// with gradient checkpointing) gathers each unit from every rank's master shards just before its
// forward, and again for its backward, into tensors of the parameters' dtype that the parameters
// are swapped with, and frees them after (in the backward, once its gradients are reduced). The
// optimizer's step updates the master shards only; unshard, at the end of the update, gathers the
// whole policy again (the copy the next rollout generates from). What a rank holds in the update
// is its shards and one or two units at a time (a tied embedding stays gathered through a pass);
// while generating, the whole bfloat16 policy besides them: when even that copy does not fit,
// neither does the run (memplan says so before it starts).
//
// Prefetch: a pass gathers the units in a fixed order (passOrder: the forward's, then the
// backward's), the same on every rank, idle passes included. When Gather has made unit k whole, it
// starts the gather of the unit that comes next in that order into a buffer of its own (ahead),
// without waiting: it runs while unit k computes, and the next Gather only waits for it and copies
// it into the parameters. The buffer holds the largest decoder layer, so ZeRO-3 keeps W·s_max +
// s_max elements of the weights' dtype besides its rounds' buffers (memplan counts them); a larger
// unit (the embedding, an untied head) is gathered when it is needed. A Gather out of
// that order (unshard, a measurement) waits for any prefetch first and gathers in rounds; so does
// the optimizer's step, so that no gather of the old masters outlives it.

// shard frees the whole weights for the update (ZeRO-3; nothing otherwise). The masters hold
// them: they equal the weights whenever the weights are whole.
func (z *zero) shard() {
	if z.stage != memplan.StageZeRO3 || z.sharded {
		return
	}
	z.scope.With(func() {
		for _, p := range z.params {
			// Trainable as the weight, for the model's check before a pass.
			ph := torch.Empty([]int64{0}, p.DType(), p.Device()).SetRequiresGrad(p.Info().RequiresGrad)
			p.Swap(ph)
			ph.Free() // the whole weight
		}
	})
	z.sharded = true
}

// unshard gathers the whole weights again (a collective).
func (z *zero) unshard() {
	if !z.sharded {
		return
	}
	for k, u := range z.units {
		z.Gather(k)
		for _, i := range u.params {
			z.full[i].Free() // the placeholder
			z.full[i] = nil
		}
		u.gathered = false
	}
	z.sharded = false
}

// Gather makes unit k's weights whole (a collective) while sharded: new tensors of the
// parameters' dtype, filled from every rank's master shards, that require grad, swapped into the
// parameters (whose placeholders full keeps). It then starts the prefetch of the unit the pass
// gathers next.
func (z *zero) Gather(k int) {
	next := z.advance(k)
	if !z.sharded || k >= len(z.units) || z.units[k].gathered {
		return
	}
	u := z.units[k]
	z.scope.With(func() {
		for _, i := range u.params {
			z.full[i] = torch.Empty(z.shapes[i], z.params[i].DType(), z.params[i].Device())
		}
	})
	gathered := func(i int) *torch.Tensor { return z.full[i] }
	world := int64(z.pg.Size())
	torch.NoGrad(func() {
		s := torch.NewScope()
		defer s.Close()
		if z.pending != nil && z.pending.unit == k {
			z.settle()
			z.prefetched++
			for r := int64(0); r < world; r++ {
				z.copyFlat(u, z.ahead.Narrow(0, r*u.shard, u.shard), r*u.shard, true, gathered)
			}
			return
		}
		z.settle()
		z.rounds(u, func(from, n int64) {
			in, out := z.master.Narrow(0, u.local+from, n), z.buf.Narrow(0, 0, world*n)
			if z.wire != nil { // bfloat16/float16 weights: half the traffic, the same values
				in, out = in.ToDType(z.wire.DType()), z.wire.Narrow(0, 0, world*n)
			}
			z.pg.AllGatherInto(in, out)
			for r := int64(0); r < world; r++ {
				z.copyFlat(u, out.Narrow(0, r*n, n), r*u.shard+from, true, gathered)
			}
		})
	})
	for _, i := range u.params {
		z.full[i].SetRequiresGrad(true)
		z.params[i].Swap(z.full[i])
	}
	u.gathered = true
	if next >= 0 && !z.units[next].gathered && z.units[next].shard <= z.aheadIn.Numel() {
		z.prefetch(next)
	}
}

// prefetch is a unit's gather in flight into ahead.
type prefetch struct {
	unit int
	work *torch.Work
}

// passOrder is the order in which a checkpointed pass (model.Pass) gathers n units: the embedding,
// the layers and the last unit in the forward pass, then the layers from the last down and, when
// the head is untied, the embedding in the backward pass (a tied one stays gathered).
func passOrder(n int, tied bool) []int {
	var order []int
	for k := 0; k < n; k++ {
		order = append(order, k)
	}
	for k := n - 2; k >= 1; k-- {
		order = append(order, k)
	}
	if !tied {
		order = append(order, 0)
	}
	return order
}

// advance moves the cursor past a gather of unit k and returns the unit the pass gathers next
// (-1: none, or k out of the order: the cursor then waits for a pass's first gather).
func (z *zero) advance(k int) int {
	switch {
	case len(z.order) == 0:
		return -1
	case z.cursor < len(z.order) && z.order[z.cursor] == k:
		z.cursor++
	case k == z.order[0]:
		z.cursor = 1
	default:
		z.cursor = len(z.order)
	}
	if z.cursor < len(z.order) {
		return z.order[z.cursor]
	}
	return -1
}

// prefetch starts the gather of unit k's master shards, cast to the weights' dtype, into ahead.
func (z *zero) prefetch(k int) {
	u, world := z.units[k], int64(z.pg.Size())
	in, out := z.aheadIn.Narrow(0, 0, u.shard), z.ahead.Narrow(0, 0, world*u.shard)
	torch.NoGrad(func() { in.Copy_(z.master.Narrow(0, u.local, u.shard)) })
	z.pending = &prefetch{unit: k, work: z.pg.AllGatherIntoStart(in, out)}
}

// settle waits for the prefetch in flight, if any (ahead then holds its unit).
func (z *zero) settle() {
	if z.pending != nil {
		w := z.pending.work
		z.pending = nil
		w.Wait()
	}
}

// maxShard is the largest decoder layer's shard (units 1 to n−2; every unit's when there are no
// layers): what the prefetch buffer holds. The embedding and an untied head, often far larger
// than a layer, are gathered in rounds, without a prefetch.
func (z *zero) maxShard() int64 {
	us := z.units
	if len(us) > 2 {
		us = us[1 : len(us)-1]
	}
	var most int64 = 1
	for _, u := range us {
		most = max(most, u.shard)
	}
	return most
}

// Release frees unit k's gathered weights, pointing its parameters at their placeholders again.
func (z *zero) Release(k int) {
	if !z.sharded || k >= len(z.units) || !z.units[k].gathered {
		return
	}
	for _, i := range z.units[k].params {
		z.params[i].Swap(z.full[i])
		z.full[i].Free() // the gathered weight
		z.full[i] = nil
	}
	z.units[k].gathered = false
}
