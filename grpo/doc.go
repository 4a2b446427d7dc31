// Package grpo turns trajectories into advantages, losses and weight updates.
//
// # Files
//
//	advantage.go       outcome advantages from trajectory scores: GRPO, Dr.GRPO, RLOO,
//	                   REINFORCE++-baseline; group statistics (frac_reward_zero_std)
//	advantage_mt.go    MT-GRPO turn-level credit
//	gae.go             GAE and RAGEN's bi-level GAE over turns, whitening
//	aggregate.go       loss aggregation modes as per-token weights, turn weighting
//	kl.go              KL estimators (k1, k2, k3), KL in the reward
//	dapo.go            dynamic sampling's group filter, overlong penalty, truncation masks
//	loss.go            LossConfig and the actor loss of one micro-batch
//	loss_policy.go     PPO clip (clip-higher, dual clip), GSPO, CISPO, importance sampling
//	value.go           the critic's clipped value loss
//	stats.go           metric sums added over micro-batches, read once per step
//
// # The math, and where it runs
//
// Per-trajectory math is plain Go on the host (no torch): advantages take slices of scores and
// group ids and return one advantage per trajectory (or per turn, or per token for GAE), with a
// citation and the shapes in each function's doc. Estimator names are verl's (grpo, rloo,
// reinforce_plus_plus_baseline, gae) where verl has them; ParseEstimator and the other Parse
// functions reject unknown names with an error naming the value.
//
// Each turn of a trajectory is a training sample of its own (its condensed context masked, its
// output trained). A trajectory's advantage goes to every trained token of every turn (PerTurn);
// MT-GRPO adds a turn term to the turns up to the first tool result (MTGRPO).
//
// Aggregation is decided on the host too: Weights gives every trained token of a mini-batch a
// weight w such that the mini-batch loss is Σ w·L, computed from the whole mini-batch's token and
// sequence counts. Micro-batches (and data-parallel ranks) then add up to the unsplit loss
// exactly, whichever way the mini-batch is split. AggConfig.Turns says whether a "sequence" of the
// seq-mean modes is a turn or a whole trajectory.
//
// The losses are tensor code on the torch thread: Loss and ValueLoss take per-token tensors of
// one layout (the model batch's [rows, cols], several packed samples to a row), compute in
// float32, and return the scalar to backpropagate plus a Stats: the metric sums as one small
// tensor, added over micro-batches on the device and read once per step with Stats.Metrics
// (verl's names: actor/pg_loss, actor/pg_clipfrac, actor/pg_clipfrac_lower, actor/ppo_kl,
// actor/kl_loss, actor/entropy, rollout_corr/...).
//
//	w, _ := grpo.Weights(samples, cfg.Agg)                // host: one weight per sample
//	var st grpo.Stats
//	for _, mb := range microBatches {
//		loss, s, err := grpo.Loss(cfg, grpo.LossInputs{LogProbs: pass.LogProbs, Advantages: mb.adv,
//			Weights: mb.w, Mask: mb.mask, Rollout: mb.rollLogProbs})
//		pass.Backward(loss)
//		st = st.Add(s)
//	}
//	metrics := st.Metrics(1)
//
// With one update per batch ℓ_old is ℓ.detach(): the ratio is 1, the displayed pg_loss is −Σ w·A
// (about 0 with group-normalised advantages) and the gradient is still the policy gradient.
package grpo
