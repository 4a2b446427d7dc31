// Package memplan is the memory model of a training run: for a model's shape, its dtype, the
// world size, the ZeRO stage and the batch and context settings, the bytes each rank holds, by
// category, and whether that fits a device. It is a pure function of numbers (no tensors), so that
// `mtgrpo plan` answers on any machine and `mtgrpo train` can refuse a run before loading anything.
//
// The persistent parts are counted exactly as the code allocates them (grpo's optimizers,
// torch.AdamW, torch.GradBuckets, model.KVCache); a multi-process test over Gloo measures the
// tensor bytes of every rank and compares them with Predict. Activations and logits are estimates,
// with the formula written where they are computed (activations.go).
//
// Stages: 0 is plain data parallelism (everything whole on every rank), 1 is ZeRO-1 as grpo
// implements it (dist_zero.go). Stages 2 and 3 are modelled as DeepSpeed defines them (gradients,
// then also weights, sharded) so that a plan can say which stage a model needs, but a run refuses
// them: they are not implemented.
package memplan
