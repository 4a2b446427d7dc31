// Package memplan is the memory model of a training run: for a model's shape, its dtype, the
// world size, the ZeRO stage and the batch and context settings, the bytes each rank holds, by
// category, and whether that fits a device. It is a pure function of numbers (no tensors), so that
// `mtgrpo plan` answers on any machine and `mtgrpo train` can refuse a run before loading anything.
//
// The persistent parts are counted exactly as the code allocates them (grpo/shard's optimizer
// with one process's flat gradient buffers, torch.AdamW, torch.GradBuckets, model.KVCache); a
// multi-process test over Gloo measures the tensor bytes of every rank and compares them with
// Predict. The activations are counted from the tensors the code's autograd graph keeps, by
// attention kernel, and the head's logits from the copies measured at their peak
// (activations.go); grpo/shard's TestMemoryPlanMatchesTrainingPeak holds the whole training
// peak of a real update on the CPU within 15% of the plan. A plan assumes full micro-batches
// (update.micro_tokens tokens in a pass; a shared prefix laid out once makes a pass smaller).
//
// Stages: 0 is plain data parallelism (everything whole on every rank), 1 to 3 are ZeRO-1 to -3 as
// package grpo/shard implements them: the optimizer state sharded, then also the gradients (unit
// by unit in the backward), then also the weights in training (gathered unit by unit; a whole copy
// for generation).
package memplan
