// Package shard is the trainer's optimizer: AdamW over a list of trainable parameters (float32
// master weights for bfloat16 and float16 ones), the reduction of the gradients across
// data-parallel ranks, gradient-norm clipping, and ZeRO's stages 1 to 3 (Rajbhandari et al.,
// arXiv 1910.02054), which share the masters, the moments, then the gradients, then the weights
// out among the ranks. Whatever the stage, a trainer uses it the same way:
//
//	opt, _ := shard.New(m.Parameters(), shard.UnitsOf(m), pg, settings) // pg nil: one process
//	opt.Update(func() error {
//		for _, mb := range miniBatches {
//			norm, err := opt.Passes(len(mb), func(i int, fo model.ForwardOptions) error {
//				p, err := m.Train(mb[i], fo)                      // fo: the stage's hooks
//				...
//				return p.Backward(loss)
//			})
//			stepped, err := opt.Step(lr)                          // false: a non-finite norm, skipped
//		}
//		return nil
//	})                                                            // the weights whole again
//	st := opt.State()                                             // checkpoint: torch.AdamW's format
//
// Passes runs a mini-batch's backward passes: it arms the reduction before the last one, matches
// the number of passes across ranks with idle ones where passes hold collectives (ZeRO-2 and -3),
// sums the gradients and clips them, and returns their norm. Step takes the learning rate (the
// trainer's schedule owns it), or skips a non-finite norm leaving every weight and moment as it
// was. Update brackets an update: ZeRO-3 frees the whole weights inside it and gathers them again
// at its end, so that generation, checkpoints and export always see whole weights. State and
// LoadState hold torch.AdamW's format (whole tensors keyed by parameter name) at every stage and
// world size: a checkpoint resumes on any number of ranks, sharded or not.
//
// Deviations from DeepSpeed: gradients are reduced in float32 whatever the weights' dtype (exact
// sums of bfloat16 gradients at twice the traffic); ZeRO-3 holds the whole weights outside the
// update (as its hybrid engine does for generation), so a rank must hold the whole policy once.
//
// # Files
//
//	shard.go       Settings, Units, Optimizer: New, Passes, Step, Update, State, LoadState
//	whole.go       every rank whole: torch.AdamW, gradients summed in buckets (DDP); one process
//	               keeps its gradients in persistent flat buffers (torch.GradBuffers)
//	zero.go        ZeRO-1 and -2: the flat shards, reduce-scatter, clip, step, gather
//	zero3.go       ZeRO-3: the weights sharded in the update, gathered unit by unit, prefetch
//	zero_state.go  the sharded optimizer's checkpoint, in the unsharded format
//	plan.go        PlanModel: a model's shape for the memory model (package grpo/memplan)
//
// Tests: shard_test.go checks the choreography with a fake engine and the step against AdamW
// worked by hand; TestSingleProcessFlatGradsMatchPlain compares one process's buffered steps
// (full and LoRA, resumed) with plain .grad tensors and counts the CPU allocations; TestZeRO
// runs ZeRO-2 and -3 on 4 and 2 ranks and resumes in one process; TestMemoryModelGloo checks memplan's prediction byte for byte at every stage.
package shard
