package grpo

import (
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// ZeRO-3 (stage 3: parameter partitioning) for the update, with whole weights for generation, as
// DeepSpeed's hybrid engine does. Outside the update every rank holds the whole policy: the
// rollout, the scoring passes, evaluation, checkpoints and export run as without sharding. The
// update starts with Shard: every parameter's tensor is freed and the parameter, a *torch.Tensor
// the model keeps, is pointed at an empty placeholder (torch.Tensor.Swap); the rank then holds of
// the weights only its shards of the float32 masters. A training pass (model.ForwardOptions.Weights,
// with gradient checkpointing) gathers each unit from every rank's master shards just before its
// forward, and again for its backward, into tensors of the parameters' dtype that the parameters
// are swapped with, and frees them after (in the backward, once its gradients are reduced). The
// optimizer's step updates the master shards only; Unshard, at the end of the update, gathers the
// whole policy again (the copy the next rollout generates from). What a rank holds in the update
// is its shards and one or two units at a time (a tied embedding stays gathered through a pass);
// while generating, the whole bfloat16 policy besides them: when even that copy does not fit,
// neither does the run (memplan says so before it starts). Prefetching the next unit's gather
// while the current one computes is not done: each gather waits.

// Shard frees the whole weights for the update (ZeRO-3; nothing otherwise). The masters hold
// them: they equal the weights whenever the weights are whole.
func (z *shardedAdamW) Shard() {
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

// Unshard gathers the whole weights again (a collective).
func (z *shardedAdamW) Unshard() {
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
// parameters (whose placeholders full keeps).
func (z *shardedAdamW) Gather(k int) {
	if !z.sharded || k >= len(z.units) || z.units[k].gathered {
		return
	}
	u := z.units[k]
	world := int64(z.pg.Size())
	z.scope.With(func() {
		for _, i := range u.params {
			z.full[i] = torch.Empty(z.shapes[i], z.params[i].DType(), z.params[i].Device())
		}
	})
	gathered := func(i int) *torch.Tensor { return z.full[i] }
	torch.NoGrad(func() {
		s := torch.NewScope()
		defer s.Close()
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
}

// Release frees unit k's gathered weights, pointing its parameters at their placeholders again.
func (z *shardedAdamW) Release(k int) {
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

// UnitWeights is model.ForwardOptions.Weights for the update's passes: the optimizer under
// ZeRO-3, nil otherwise.
func (z *shardedAdamW) UnitWeights() model.UnitWeights {
	if z.stage != memplan.StageZeRO3 {
		return nil
	}
	return z
}
