// Package grpo turns trajectories into advantages, losses and weight updates: the trainer of
// GRPO, multi-turn GRPO with condensed contexts, MT-GRPO, PPO with (bi-level) GAE and their usual
// variants, on a policy that generates and trains with the same weights in one process.
//
// # The trainer
//
//	tr, _ := grpo.New(grpo.Models{Policy: m}, engine, tok, environment, cfg)  // engine over m's weights
//	for step := range steps {
//		metrics, trajs, err := tr.Step(ctx, tasks)  // one iteration; metrics under verl's names
//	}
//	val, _, _ := grpo.Evaluate(ctx, engine, tok, environment, heldOut, grpo.EvalConfig{Samples: 1, Greedy: true, Rollout: cfg.Rollout})
//	m, _ := tr.SFT(demonstrations)                  // a supervised warm-up step
//
// Step reads in phase order (trainer.go): rollout (collect.go: the multi-turn driver on the live
// policy weights, with DAPO's dynamic sampling) → samples (sample.go: one per trained turn, its
// context masked) → scoring passes (score.go: ℓ_old only when several optimizer steps share the
// batch, ℓ_ref only with a KL term, the critic's values only for GAE) → credit (credit.go: shaped
// rewards → advantages on every trained token) → update (update.go, loss_step.go: epochs ×
// mini-batches by trajectory × micro-batches packed by a token budget, loss and backward per
// micro-batch, grad-norm clip, AdamW with warmup and a constant or cosine schedule). A micro-batch
// is one packed row; the prefix its samples share (system prompt, tool list, a group's task) is
// laid out and computed once (model.NewSharedBatch), exactly. A non-finite gradient norm skips the
// optimizer step (weights and optimizer state untouched; actor/skipped_steps); a trajectory with a
// non-finite reward is left out of training with its Err set; everything else that goes wrong is
// an error naming the step.
//
// # Data parallel
//
// One process per device, each a rank of a torch.ProcessGroup, each running the same Trainer made
// with WithDist(NewDist(pg, DistConfig{...})): every rank draws the same tasks, plays its share,
// and the ranks exchange trajectories, so credit and metrics are the single-process ones; each
// trains its share of every mini-batch and the gradients are summed in persistent buckets. The
// weights stay identical across ranks and equal a single-process run's up to float rounding
// (TestDistributedTraining). DistConfig.Stage shards the optimizer state (ZeRO-1), also the
// gradients (ZeRO-2) and also the weights in the update (ZeRO-3): the optimizer, its reduction
// and its sharding are package grpo/shard, which the update, SFT and the critic use alike (for
// each mini-batch: its passes, then a step). DistConfig.RolloutRanks gives some ranks the
// rollout, one batch ahead of the others. dist.go has the details; docs/distributed.md the
// launch side.
//
// Randomness comes from Config.Seed and the iteration number only (sampling seeds, mini-batch
// shuffles), so a run restored at iteration k (weights, optimizer state, Progress) continues as if
// it had never stopped.
//
// Multi-turn samples and weighting: every (c_t, o_t) is its own sample, which matches condensed
// contexts exactly (c_{t+1} is not an extension of c_t). How much a trajectory with more turns
// weighs is LossConfig.Agg: with token-mean every trained token weighs the same (long, many-turn
// trajectories weigh more, as in verl and SkyRL's step-wise training); with the seq-mean modes
// Agg.Turns chooses whether a sequence is a turn (each turn counts once) or a whole trajectory (its
// turns share one unit: every trajectory counts once, however many turns it took).
//
// The sampler's and the trainer's log-probs come from the same weights in the same process: every
// step logs rollout_corr/logprob_abs_diff_{mean,max}, |ℓ_roll − ℓ| over the trained tokens of the
// first epoch. In float32 on the CPU it is float rounding (max ~1e-6 on the tiny model:
// TestSamplerTrainerAgreement); in bfloat16 it is larger, because decoding (one token at a time
// against the KV cache) and the training pass (a whole packed row) reduce in different orders and
// every bf16 matmul output is rounded to 8 bits of mantissa — the same reason vLLM and FSDP
// log-probs differ in verl. Truncated importance sampling (LossConfig.IS) corrects for it when
// it matters.
//
// # Files
//
//	trainer.go         Trainer, New, Step: the loop
//	config.go          Config (rollout, advantage, reward shaping, loss, optim, update, DAPO,
//	                   critic): each key's range, declared once (internal/setting)
//	collect.go         the rollout phase, dynamic sampling, containment of bad rewards
//	sample.go          per-turn samples, mini-batches by trajectory, packing by token budget
//	score.go           no-grad passes: ℓ_old, ℓ_ref, and the micro-batch layout (shared prefixes);
//	                   data parallel, each rank scores its share (values exchanged: grpo/exchange)
//	credit.go          rewards → per-token advantages (outcome, MT-GRPO, GAE)
//	update.go          the update: for each epoch and mini-batch, the passes, then a step
//	                   (the optimizer, its reduction and ZeRO sharding: package grpo/shard)
//	loss_step.go       aggregation weights and loss inputs of a micro-batch; metric accumulation
//	critic.go          the PPO critic: value head, values, its update
//	sft.go             supervised warm-up steps on demonstrations
//	sft_config.go      SFTConfig (the sft: section) and the warm-up's trainer configuration
//	eval.go            EvalConfig (the eval: section) and validation: accuracy, pass@k
//	state.go           Progress, State and Restore: what a checkpoint holds besides the weights
//	metrics.go         Metrics and the rollout statistics
//	profile.go         ProfileConfig: the rollout's time split in the step's metrics
//
//	dist.go            data-parallel training: Dist, DistConfig, who plays and trains what
//	dist_ahead.go      rollout ahead of training: rollout ranks one batch ahead of the trainers
//
//	kl.go              the KL estimators on tensors (TokenKL)
//	loss.go            LossConfig and the actor loss of one micro-batch
//	loss_policy.go     PPO clip (clip-higher, dual clip), GSPO, CISPO, importance sampling
//	value.go           the critic's clipped value loss
//	stats.go           metric sums added over micro-batches, read once per step
//
// # The math, and where it runs
//
// Per-trajectory math is plain Go on the host, in package grpo/algo (no torch, tested without
// libtorch): advantages take slices of scores and group ids and return one advantage per
// trajectory (or per turn, or per token for GAE), with a citation and the shapes in each
// function's doc. Function and estimator names are verl's where verl has them
// (GRPOOutcomeAdvantage for compute_grpo_outcome_advantage, ...); grpo/algo/doc.go maps every
// verl, RAGEN and MT-GRPO function to its counterpart and lists every deliberate deviation.
//
// Each turn of a trajectory is a training sample of its own (its condensed context masked, its
// output trained). A trajectory's advantage goes to every trained token of every turn; MT-GRPO
// adds a turn term to the turns up to the first tool result (algo.MTGRPOAdvantage).
//
// Aggregation is decided on the host too: algo.AggWeights gives every trained token of a mini-batch a
// weight w such that the mini-batch loss is Σ w·L, computed from the whole mini-batch's token and
// sequence counts. Micro-batches (and data-parallel ranks) then add up to the unsplit loss
// exactly, whichever way the mini-batch is split. algo.AggConfig.Turns says whether a "sequence"
// of the seq-mean modes is a turn or a whole trajectory.
//
// The losses are tensor code on the torch thread: Loss and ValueLoss take per-token tensors of
// one layout (the model batch's [rows, cols], several packed samples to a row), compute in
// float32, and return the scalar to backpropagate plus a Stats: the metric sums as one small
// tensor, added over micro-batches on the device and read once per step with Stats.Metrics
// (verl's names: actor/pg_loss, actor/pg_clipfrac, actor/pg_clipfrac_lower, actor/ppo_kl,
// actor/kl_loss, actor/entropy, rollout_corr/...).
//
//	w, _ := algo.AggWeights(samples, cfg.Agg)             // host: one weight per sample
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
