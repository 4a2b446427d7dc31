package config

import (
	"fmt"
	"strconv"
)

// verlFamily is verl's ppo_trainer keys, as verl users write them in YAML and as Hydra overrides
// (`data.train_files="['train.parquet']"`, `+key=value`); `--config-path DIR --config-name NAME`
// reads DIR/NAME.yaml, whose Hydra `defaults:` list may name files beside it.
var verlFamily = Family{
	Name:  "verl",
	Title: "verl (ppo_trainer)",
	Doc: "verl's `ppo_trainer` keys, in YAML or as Hydra overrides (`key=value`, `+key=value`, list values such as " +
		"`data.train_files=\"['train.parquet']\"`); `--config-path DIR --config-name NAME` reads `DIR/NAME.yaml` " +
		"(its Hydra `defaults:` list is composed from files beside it as Hydra composes it, see \"Hydra defaults lists\" " +
		"above; verl's own `ppo_trainer` and its choices are where the defaults here come from). Keys about verl's own machinery (vLLM, FSDP, Ray, loggers) are accepted with a warning that names " +
		"them and why they have no effect; keys whose value cannot be honoured are refused with the reason. " +
		"Batch sizes count prompts, as in verl: `ppo_mini_batch_size` divides `data.train_batch_size` into " +
		"`update.mini_batches`.",
	Keys: []ForeignKey{
		{Key: "data.train_files", Native: "data.train", Note: "a path or a list (the files' rows in order)"},
		{Key: "data.val_files", Native: "data.val", Note: "a path or a list (the files' rows in order)"},
		{Key: "data.train_batch_size", Native: "rollout.tasks", Note: "prompts per step"},
		{Key: "data.val_batch_size", Ignore: "the whole validation set is played at once (rollout.slots bounds decoding)"},
		{Key: "data.max_prompt_length", Native: "rollout.max_context_tokens", Note: "the longest context of a turn: a longer one ends the episode"},
		{Key: "data.max_response_length", Native: "rollout.max_new_tokens", Note: "the longest output of a turn"},
		{Key: "data.shuffle", Native: "data.shuffle"},
		{Key: "data.prompt_key", Value: only("rows are read in verl's layout, the prompt in its prompt column", "prompt")},
		{Key: "data.reward_fn_key", Value: only("rewards dispatch on the data_source column", "data_source")},
		{Key: "data.tokenizer", Value: only("the model directory's tokenizer is used", "null")},
		{Key: "data.return_raw_chat", Ignore: "the chat template is always applied here, to the raw chat"},
		{Key: "data.filter_overlong_prompts", Ignore: "a prompt longer than rollout.max_context_tokens ends its episode instead"},
		{Key: "data.truncation", Ignore: "a prompt longer than rollout.max_context_tokens ends its episode instead"},
		{Key: "data.seed", Refuse: "one seed drives data, sampling and shuffles here: set seed"},
		{Key: "actor_rollout_ref.hybrid_engine", Ignore: "generation and training share the model in one process"},
		{Key: "actor_rollout_ref.model.path", Native: "model"},
		{Key: "actor_rollout_ref.model.enable_gradient_checkpointing", Native: "update.gradient_checkpointing"},
		{Key: "actor_rollout_ref.model.use_remove_padding", Ignore: "sequences are packed without padding already"},
		{Key: "actor_rollout_ref.model.trust_remote_code", Ignore: "no remote code runs: the architectures are built in"},
		{Key: "actor_rollout_ref.model.lora_rank", Native: "lora.rank", Note: "0: no adapters, the whole model trains"},
		{Key: "actor_rollout_ref.model.lora_alpha", Native: "lora.alpha"},
		{Key: "actor_rollout_ref.model.target_modules", Native: "lora.target_modules", Note: "all-linear or a list of module names"},
		{Key: "actor_rollout_ref.model.exclude_modules", Value: only("adapters go on every targeted module: list them in target_modules", "null")},
		{Key: "actor_rollout_ref.actor.strategy", Ignore: "no FSDP/Megatron: data parallelism is dist.* and --nproc"},
		{Key: "actor_rollout_ref.actor.optim.lr", Native: "optim.lr"},
		{Key: "actor_rollout_ref.actor.optim.lr_warmup_steps", Native: "optim.warmup", Value: unsetIf("-1"), Note: "-1 (verl: use the ratio) sets nothing"},
		{Key: "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio", Native: "optim.warmup_ratio",
			Note: "the warm-up as a fraction of the run, used when lr_warmup_steps is -1 (verl's default); rounded up here, down in verl"},
		{Key: "actor_rollout_ref.actor.optim.warmup_style", Native: "optim.schedule", Note: "constant or cosine"},
		{Key: "actor_rollout_ref.actor.optim.min_lr_ratio", Native: "optim.min_lr_ratio", Value: unsetIf()},
		{Key: "actor_rollout_ref.actor.optim.weight_decay", Native: "optim.weight_decay"},
		{Key: "actor_rollout_ref.actor.optim.total_training_steps", Ignore: "verl fills it in from the trainer; here the schedule's length is train.steps"},
		{Key: "actor_rollout_ref.actor.grad_clip", Native: "optim.max_grad_norm"},
		{Key: "actor_rollout_ref.actor.ppo_mini_batch_size", Value: positive, Derived: true,
			Note: "prompts per optimizer step: update.mini_batches = rollout.tasks / ppo_mini_batch_size (must divide)"},
		{Key: "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", Ignore: "micro-batches are sized by tokens (update.micro_tokens); the update is the same"},
		{Key: "actor_rollout_ref.actor.ppo_micro_batch_size", Ignore: "micro-batches are sized by tokens (update.micro_tokens); the update is the same"},
		{Key: "actor_rollout_ref.actor.use_dynamic_bsz", Ignore: "micro-batches are always sized by tokens (update.micro_tokens)"},
		{Key: "actor_rollout_ref.actor.ppo_max_token_len_per_gpu", Ignore: "micro-batches are sized by update.micro_tokens"},
		{Key: "actor_rollout_ref.actor.ppo_epochs", Native: "update.epochs"},
		{Key: "actor_rollout_ref.actor.shuffle", Ignore: "mini-batches are taken in the rollout's order"},
		{Key: "actor_rollout_ref.actor.clip_ratio", Native: "loss.clip_low, loss.clip_high"},
		{Key: "actor_rollout_ref.actor.clip_ratio_low", Native: "loss.clip_low"},
		{Key: "actor_rollout_ref.actor.clip_ratio_high", Native: "loss.clip_high"},
		{Key: "actor_rollout_ref.actor.clip_ratio_c", Native: "loss.dual_clip", Note: "dual-clip bound c"},
		{Key: "actor_rollout_ref.actor.loss_agg_mode", Native: "loss.agg", Note: "token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm"},
		{Key: "actor_rollout_ref.actor.entropy_coeff", Native: "loss.entropy_coef"},
		{Key: "actor_rollout_ref.actor.use_kl_loss", Value: truth, Derived: true,
			Note: "true: the KL term in the loss with loss.kl_coef = kl_loss_coef (verl's 0.001 if not given); false: loss.kl_coef 0"},
		{Key: "actor_rollout_ref.actor.kl_loss_coef", Value: anyNumber, Derived: true, Note: "loss.kl_coef when use_kl_loss is true"},
		{Key: "actor_rollout_ref.actor.kl_loss_type", Native: "loss.kl_kind", Note: "kl → k1, mse → k2, low_var_kl → k3, abs"},
		{Key: "actor_rollout_ref.actor.ulysses_sequence_parallel_size", Value: only("sequence parallelism is not supported", "1")},
		{Key: "actor_rollout_ref.actor.fsdp_config.param_offload", Value: only("offloading to the CPU is not supported: shard with dist.zero_stage", "false")},
		{Key: "actor_rollout_ref.actor.fsdp_config.optimizer_offload", Value: only("offloading to the CPU is not supported: shard with dist.zero_stage", "false")},
		{Key: "actor_rollout_ref.actor.fsdp_config.fsdp_size", Value: only("the shards span every training rank (dist.zero_stage)", "-1")},
		{Key: "actor_rollout_ref.actor.fsdp_config.*", Ignore: "FSDP's wrapping, prefetch and precision settings: sharding is dist.zero_stage, by the model's layers"},
		{Key: "actor_rollout_ref.actor.checkpoint.*", Ignore: "checkpoints hold the model, optimizer and data position always"},
		{Key: "actor_rollout_ref.ref.*", Ignore: "the reference model is kept in the same process when a KL term needs it"},
		{Key: "actor_rollout_ref.rollout.name", Ignore: "generation runs in the built-in engine (no vLLM/SGLang)"},
		{Key: "actor_rollout_ref.rollout.mode", Ignore: "generation runs in the built-in engine, episodes concurrently"},
		{Key: "actor_rollout_ref.rollout.n", Native: "rollout.group", Note: "trajectories per prompt (the GRPO group)"},
		{Key: "actor_rollout_ref.rollout.temperature", Native: "rollout.temperature"},
		{Key: "actor_rollout_ref.rollout.top_p", Native: "rollout.top_p"},
		{Key: "actor_rollout_ref.rollout.top_k", Native: "rollout.top_k", Value: unsetIf("-1"), Note: "-1 (off) sets nothing"},
		{Key: "actor_rollout_ref.rollout.do_sample", Native: "rollout.temperature", Value: boolTo("", "0"), Note: "false → temperature 0 (greedy)"},
		{Key: "actor_rollout_ref.rollout.response_length", Native: "rollout.max_new_tokens"},
		{Key: "actor_rollout_ref.rollout.prompt_length", Native: "rollout.max_context_tokens"},
		{Key: "actor_rollout_ref.rollout.max_num_seqs", Native: "rollout.slots", Note: "sequences decoded at once"},
		{Key: "actor_rollout_ref.rollout.max_model_len", Native: "rollout.max_len", Value: unsetIf()},
		{Key: "actor_rollout_ref.rollout.dtype", Ignore: "the compute dtype is dtype"},
		{Key: "actor_rollout_ref.rollout.gpu_memory_utilization", Ignore: "the KV cache is sized by rollout.slots × rollout.max_len"},
		{Key: "actor_rollout_ref.rollout.tensor_model_parallel_size", Ignore: "the engine runs the whole model on each process's device"},
		{Key: "actor_rollout_ref.rollout.max_num_batched_tokens", Ignore: "the KV cache is sized by rollout.slots × rollout.max_len"},
		{Key: "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", Ignore: "log-probabilities are computed in update.micro_tokens micro-batches"},
		{Key: "actor_rollout_ref.rollout.enforce_eager", Ignore: "vLLM's setting: no vLLM here"},
		{Key: "actor_rollout_ref.rollout.free_cache_engine", Ignore: "vLLM's setting: no vLLM here"},
		{Key: "actor_rollout_ref.rollout.load_format", Ignore: "the policy's weights are shared with the engine in-process"},
		{Key: "actor_rollout_ref.rollout.ignore_eos", Value: only("generation stops at the end-of-sequence token", "false")},
		{Key: "actor_rollout_ref.rollout.val_kwargs.temperature", Native: "eval.temperature"},
		{Key: "actor_rollout_ref.rollout.val_kwargs.top_p", Native: "eval.top_p"},
		{Key: "actor_rollout_ref.rollout.val_kwargs.n", Native: "eval.samples"},
		{Key: "actor_rollout_ref.rollout.val_kwargs.do_sample", Native: "eval.greedy", Value: negate, Note: "false → greedy"},
		{Key: "actor_rollout_ref.rollout.val_kwargs.top_k", Value: only("evaluation samples with eval.temperature and eval.top_p only", "-1", "0")},
		{Key: "actor_rollout_ref.rollout.multi_turn.enable", Native: "rollout.max_turns", Value: boolTo("", "1"),
			Note: "true keeps the environment's turns; false → one action turn per episode"},
		{Key: "actor_rollout_ref.rollout.multi_turn.max_assistant_turns", Native: "rollout.max_turns", Value: unsetIf()},
		{Key: "actor_rollout_ref.rollout.multi_turn.max_turns", Native: "rollout.max_turns", Value: unsetIf(), Note: "verl's older name of max_assistant_turns"},
		{Key: "actor_rollout_ref.rollout.multi_turn.max_user_turns", Native: "env.max_turns", Value: unsetIf(), Note: "the environment's turn limit"},
		{Key: "actor_rollout_ref.rollout.multi_turn.format", Value: only("tool calls use the model's chat template (Hermes format)", "hermes")},
		{Key: "actor_rollout_ref.rollout.multi_turn.tool_config_path", Refuse: "tools are env.tools (python, calculator, search) or an mcp: section (docs/mcp.md)"},
		{Key: "actor_rollout_ref.rollout.multi_turn.interaction_config_path", Refuse: "the environment is env.name, an OpenEnv server (openenv:) or your dataset (env data)"},
		{Key: "algorithm.adv_estimator", Native: "advantage.estimator", Note: "grpo, rloo, reinforce_plus_plus, reinforce_plus_plus_baseline, gae, and grpo_multiturn, mt_grpo, drgrpo"},
		{Key: "algorithm.norm_adv_by_std_in_grpo", Native: "advantage.norm_std"},
		{Key: "algorithm.gamma", Native: "advantage.gamma"},
		{Key: "algorithm.lam", Native: "advantage.lambda"},
		{Key: "algorithm.use_kl_in_reward", Value: truth, Derived: true,
			Note: "true: the KL penalty in the reward with reward.kl_coef = kl_ctrl.kl_coef (verl's 0.001 if not given); false: reward.kl_coef 0"},
		{Key: "algorithm.kl_penalty", Native: "reward.kl_kind", Note: "kl → k1, mse → k2, low_var_kl → k3, abs"},
		{Key: "algorithm.kl_ctrl.type", Value: only("the KL coefficient is fixed (no adaptive controller)", "fixed")},
		{Key: "algorithm.kl_ctrl.kl_coef", Value: anyNumber, Derived: true, Note: "reward.kl_coef when use_kl_in_reward is true"},
		{Key: "algorithm.kl_ctrl.horizon", Ignore: "the adaptive KL controller's setting: the coefficient is fixed"},
		{Key: "algorithm.kl_ctrl.target_kl", Ignore: "the adaptive KL controller's setting: the coefficient is fixed"},
		{Key: "algorithm.use_pf_ppo", Value: only("preference-feedback PPO's reweighting is not supported", "false")},
		{Key: "critic.optim.lr", Native: "critic.lr"},
		{Key: "critic.optim.lr_warmup_steps", Value: only("the critic's learning rate is constant (critic.warmup is verl's trainer.critic_warmup, a different thing)", "-1", "0")},
		{Key: "critic.optim.lr_warmup_steps_ratio", Value: only("the critic's learning rate is constant", "0", "0.0")},
		{Key: "critic.optim.weight_decay", Ignore: "the critic's AdamW uses optim.weight_decay"},
		{Key: "critic.model.path", Native: "critic_model"},
		{Key: "critic.model.lora_rank", Native: "critic_lora.rank", Note: "the critic's own adapters (0: the whole critic trains)"},
		{Key: "critic.model.lora_alpha", Native: "critic_lora.alpha"},
		{Key: "critic.model.target_modules", Native: "critic_lora.target_modules"},
		{Key: "critic.cliprange_value", Native: "critic.value_clip"},
		{Key: "critic.grad_clip", Native: "critic.max_grad_norm"},
		{Key: "critic.ppo_mini_batch_size", Ignore: "the critic updates on the policy's mini-batches (update.mini_batches)"},
		{Key: "critic.ppo_micro_batch_size_per_gpu", Ignore: "micro-batches are sized by tokens (update.micro_tokens)"},
		{Key: "critic.ppo_epochs", Ignore: "the critic updates with the policy's epochs (update.epochs)"},
		{Key: "critic.strategy", Ignore: "no FSDP/Megatron: data parallelism is dist.* and --nproc"},
		{Key: "reward_model.reward_manager", Value: only("rewards are the environment's rubric per trajectory, as verl's naive manager "+
			"(DAPO's overlong penalty is dapo.overlong_len)", "naive")},
		{Key: "reward_model.enable", Value: only("rewards come from the environment's rubric or reward_computation (docs/rewards.md)", "false")},
		{Key: "custom_reward_function.path", Refuse: "an external reward function is a reward_computation section of type command or http (docs/rewards.md)"},
		{Key: "custom_reward_function.name", Refuse: "an external reward function is a reward_computation section of type command or http (docs/rewards.md)"},
		{Key: "trainer.total_epochs", Native: "train.epochs"},
		{Key: "trainer.total_training_steps", Native: "train.steps", Value: unsetIf(), Note: "null sets nothing (epochs decide)"},
		{Key: "trainer.save_freq", Native: "train.checkpoint_every", Value: unsetIf("-1"), Note: "-1 sets nothing (a checkpoint at the end)"},
		{Key: "trainer.test_freq", Native: "train.eval_every", Value: unsetIf("-1"), Note: "-1 sets nothing (evaluation before and after)"},
		{Key: "trainer.val_before_train", Native: "eval.before"},
		{Key: "trainer.default_local_dir", Native: "run_dir"},
		{Key: "trainer.max_actor_ckpt_to_keep", Native: "train.keep_checkpoints", Value: unsetIf()},
		{Key: "trainer.project_name", Ignore: "the run is named by run_dir"},
		{Key: "trainer.experiment_name", Ignore: "the run is named by run_dir"},
		{Key: "trainer.logger", Ignore: "metrics go to RUN/metrics.jsonl and RUN/report.html"},
		{Key: "trainer.log_val_generations", Ignore: "train.samples trajectories per step are written to RUN/samples"},
		{Key: "trainer.n_gpus_per_node", Ignore: "processes are started by --nproc, $N_GPUS or torchrun"},
		{Key: "trainer.nnodes", Ignore: "nodes are joined by torchrun or srun (docs/distributed.md)"},
		{Key: "trainer.device", Ignore: "the device is device (--device, $GPUS)"},
		{Key: "trainer.balance_batch", Ignore: "the rollout is not reordered across ranks"},
		{Key: "trainer.resume_mode", Ignore: "a run continues with --resume"},
		{Key: "trainer.critic_warmup", Native: "critic.warmup", Note: "steps in which only the critic trains"},
		{Key: "ray_init.*", Ignore: "no Ray: processes are started by --nproc, torchrun or srun"},
		{Key: "hydra.*", Ignore: "Hydra's own settings (search path, output directory)"},
	},
}

// deriveVerl combines verl's keys that mean something together: the KL switches and their
// coefficients, and the mini-batch size in prompts.
func deriveVerl(c *Config, g given) error {
	var errs []error
	errs = append(errs, klSwitch(c, g, "actor_rollout_ref.actor.use_kl_loss", "actor_rollout_ref.actor.kl_loss_coef", "loss.kl_coef"))
	errs = append(errs, klSwitch(c, g, "algorithm.use_kl_in_reward", "algorithm.kl_ctrl.kl_coef", "reward.kl_coef"))
	if mb, ok := g["actor_rollout_ref.actor.ppo_mini_batch_size"]; ok {
		n, _ := strconv.Atoi(mb.node.Value) // checked by positive
		if c.Rollout.Tasks%n != 0 {
			errs = append(errs, &Error{Where: mb.where, Key: "actor_rollout_ref.actor.ppo_mini_batch_size", Err: fmt.Errorf(
				"%d prompts per mini-batch do not divide the %d prompts of a step (data.train_batch_size, rollout.tasks, %s)",
				n, c.Rollout.Tasks, c.Origin("rollout.tasks"))})
		} else {
			errs = append(errs, c.Set("update.mini_batches", strconv.Itoa(c.Rollout.Tasks/n), mb.where+" (ppo_mini_batch_size)"))
		}
	}
	return joinErrors(errs)
}

// klSwitch is verl's pair of a switch and a coefficient: the switch on sets native to the
// coefficient (verl's default 0.001), off sets it to 0; a coefficient without the switch has no
// effect in verl, and none here (a warning says so).
func klSwitch(c *Config, g given, switchKey, coefKey, native string) error {
	sw, hasSwitch := g[switchKey]
	coef, hasCoef := g[coefKey]
	switch {
	case hasSwitch && sw.node.Value == "true" && hasCoef:
		return c.Set(native, coef.node.Value, coef.where+" ("+coefKey+")")
	case hasSwitch && sw.node.Value == "true":
		return c.Set(native, "0.001", sw.where+" ("+switchKey+", verl's default coefficient)")
	case hasSwitch:
		if hasCoef && coef.node.Value != "0" {
			c.warn(fmt.Sprintf("%s: %s has no effect: %s is false", coef.where, coefKey, switchKey))
		}
		return c.Set(native, "0", sw.where+" ("+switchKey+")")
	case hasCoef:
		c.warn(fmt.Sprintf("%s: %s has no effect without %s=true (verl's default is false)", coef.where, coefKey, switchKey))
	}
	return nil
}
