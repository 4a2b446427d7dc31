// Package algo is the trainer's per-trajectory math in plain Go, without torch: outcome advantages
// (GRPO, Dr.GRPO, RLOO, REINFORCE++-baseline), REINFORCE++'s discounted returns, MT-GRPO's
// turn-level credit, GAE and RAGEN's bi-level GAE, loss aggregation as per-token weights, the KL estimators for one token, DAPO's
// overlong penalty and the learning-rate schedule. Every function takes slices and returns
// slices; grpo calls them between the rollout and the device-side loss. `CGO_ENABLED=0 go test
// ./grpo/algo` runs the package's tests without libtorch.
//
// Shapes in the docs: B trajectories, S samples (turns) of a mini-batch, [B][turns][tokens] for
// per-token values of trained (loss-mask 1) tokens only. Scores and rewards are in the reward's
// units, log-probs in nats.
//
// # What each reference function is here
//
//	verl core_algos.py / verl_F / RAGEN / MT-GRPO        here
//	compute_grpo_outcome_advantage                        GRPOOutcomeAdvantage (normStd on)
//	  norm_adv_by_std_in_grpo=false (Dr.GRPO)             GRPOOutcomeAdvantage (normStd off)
//	  TRL scale_rewards="batch" (std over the batch)      GRPOBatchStdAdvantage
//	compute_rloo_outcome_advantage                        RLOOAdvantage
//	compute_reinforce_plus_plus_baseline_outcome_adv…     ReinforcePlusPlusBaselineAdvantage
//	get_adv_estimator_fn(name)(…) for the above           OutcomeAdvantage (AdvConfig.Estimator)
//	compute_reinforce_plus_plus_outcome_advantage         ReinforcePlusPlusAdvantage
//	compute_gae_advantage_return                          GAE
//	RAGEN compute_bi_level_gae_advantage_return           BiLevelGAE
//	algorithm.adv_estimator=gae (either of the two)       GAEAdvantage (GAEConfig.BiLevel)
//	verl_F.masked_whiten                                  whiten (inside GAE, BiLevelGAE and both
//	                                                      REINFORCE++ estimators)
//	MT-GRPO mt_grpo_env_trainer.py _assign_advantages     MTGRPOAdvantage
//	agg_loss(loss_mat, loss_mask, loss_agg_mode)          AggLoss; AggWeights gives the weights
//	                                                      grpo applies on the device
//	kl_penalty / kl_penalty_forward (one token)           KLPenalty (grpo.TokenKL on tensors)
//	compute_rewards / apply_kl_penalty                    KLRewards
//	DAPORewardManager overlong_buffer                     Overlong.Penalty
//	get_cosine_schedule_with_warmup / constant            LR
//	AdvantageEstimator                                    Estimator (same spellings, plus
//	                                                      drgrpo, grpo_multiturn, mt_grpo)
//
// The device-side halves of verl's core_algos (compute_policy_loss_vanilla, _gspo, _cispo,
// compute_value_loss, the token-level kl_penalty) are in grpo: they need tensors.
//
// # Deviations from the references, on purpose
//
// Every result agrees with the reference function on the same inputs except here:
//
//	D1  A singleton group gets advantage 0 under every outcome estimator. verl gives it its raw
//	    score (mean 0, std 1): a lone sample has no baseline, and its raw score would push every
//	    token of a successful answer up with nothing to compare against.
//	D2  A group whose scores are all exactly equal gets exactly 0, not (s−μ)/ε: the float mean
//	    of equal scores can differ from them in the last bit (0.1·3/3), which verl turns into
//	    ±1e-11.
//	D3  MT-GRPO's split between Â^out + c·Â^turn and Â^out falls between turns (each turn is its
//	    own sample): the turns up to and including the one whose tool call brought the first
//	    tool result get the turn term. The reference splits one token row at the first tool
//	    result message.
//	D4  GAE's and bi-level GAE's turn ends are explicit (the last trained token of each turn).
//	    RAGEN finds them as the tokens with a non-zero reward, so a turn whose reward is 0
//	    silently merges into the next.
//	D5  A turn with no trained tokens (a masked truncated turn, an untrained summary) is no step
//	    of either GAE chain: its reward is added to the previous turn that has trained tokens, or
//	    dropped when there is none. verl drops rewards that sit on masked tokens.
//	D6  seq-mean-token-sum-norm divides by the number of sequences as well as by the constant,
//	    as Dr.GRPO (arXiv 2503.20783, eq. 3) and TRL's dr_grpo do; verl's agg_loss sums the
//	    sequences of a micro-batch and divides by the constant only, then scales by
//	    1/micro-batches.
//	D7  Whitening fewer than two values gives zeros; verl's masked_whiten raises.
//	D8  (grpo) Dual-clip is off unless LossConfig.DualClip is set; verl's vanilla loss always
//	    applies it with clip_ratio_c = 3. It only acts off-policy (ρ ≠ 1) on negative advantages.
//	D9  (grpo) The loss is Σ w·(L_pg·w_IS + β·KL − c_H·H) with the same per-token weights for the
//	    three terms; verl aggregates each with agg_loss, which for the same mode is the same.
//	D10 (grpo) actor/entropy is the token mean of the entropy; verl reports it aggregated by the
//	    loss mode.
//	D11 (grpo) Dynamic sampling drops singleton groups with the groups whose rewards are all
//	    equal; verl's filter_groups keeps singletons. A singleton's advantage is 0 (D1), so it
//	    would train nothing.
//	D12 REINFORCE++'s return runs over a trajectory's trained tokens across its turns, as GAE's
//	    chain does. verl resets the running return at every token outside the response mask,
//	    so in a multi-turn response row the tool output between turns stops the outcome from
//	    reaching the earlier turns; with one turn the two agree.
//
// Not a deviation but a different metric: the MT-GRPO trainer's clip_ratio counts the tokens
// where the clip does not bind (TRL's old metric); grpo reports verl's actor/pg_clipfrac, the
// fraction where it does (docs/runs.md).
//
// docs/algorithms.md is this table for users; a test checks that it names every exported
// function here.
package algo
