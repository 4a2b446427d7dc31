// Package memplan is the memory model of a training run: for a model's shape, its dtype, the
// world size, the ZeRO stage and the batch and context settings, the bytes each rank holds, by
// category, and whether that fits a device. It is a pure function of numbers (no tensors), so that
// `mtgrpo plan` answers on any machine and `mtgrpo train` can refuse a run before loading anything.
//
// The persistent parts are counted exactly as the code allocates them (grpo/shard's optimizer,
// torch.AdamW, torch.GradBuckets, model.KVCache); a multi-process test over Gloo measures the
// tensor bytes of every rank and compares them with Predict. Activations and logits are estimates,
// with the formula written where they are computed (activations.go).
//
// Stages: 0 is plain data parallelism (everything whole on every rank), 1 to 3 are ZeRO-1 to -3 as
// package grpo/shard implements them: the optimizer state sharded, then also the gradients (unit
// by unit in the backward), then also the weights in training (gathered unit by unit; a whole copy
// for generation).
package memplan
