package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// sharedTRLOpenRLHF are the keys TRL and OpenRLHF spell and mean alike: one row in both tables.
var sharedTRLOpenRLHF = []ForeignKey{
	{Key: "temperature", Native: "rollout.temperature"},
	{Key: "top_p", Native: "rollout.top_p"},
	{Key: "seed", Native: "seed"},
	{Key: "bf16", Native: "dtype", Value: boolTo("bfloat16", ""), Note: "true → bfloat16"},
	{Key: "gradient_checkpointing", Native: "update.gradient_checkpointing"},
	{Key: "gradient_checkpointing_use_reentrant", Ignore: "gradient checkpointing recomputes each layer without reentrancy"},
	{Key: "save_steps", Native: "train.checkpoint_every", Value: minusOneIsZero, Note: "-1 (OpenRLHF: never) → 0, a checkpoint at the end only"},
	{Key: "eval_steps", Native: "train.eval_every", Value: minusOneIsZero, Note: "-1 (OpenRLHF: never) → 0, evaluation before and after training only"},
	{Key: "logging_steps", Ignore: "every step is logged (RUN/metrics.jsonl)"},
	{Key: "wandb_project", Ignore: logged},
	{Key: "vllm_tensor_parallel_size", Ignore: "the engine runs the whole model on each process's device"},
	{Key: "vllm_gpu_memory_utilization", Ignore: "the KV cache is sized by rollout.slots × rollout.max_len"},
	{Key: "attn_implementation", Ignore: ownKernels},
	{Key: "use_liger_kernel", Ignore: chunkedHead},
	{Key: "load_in_4bit", Value: only("no quantised training: the weights train in dtype", "false")},
	{Key: "lora_alpha", Value: anyNumber, Derived: true, Note: "lora.alpha with adapters on (TRL: use_peft, its default 32; OpenRLHF: lora_rank > 0, its default 16)"},
	{Key: "lora_dropout", Value: anyNumber, Derived: true, Note: "lora.dropout with adapters on (TRL's default 0.05, OpenRLHF's 0)"},
}

// openrlhfFamily is OpenRLHF's train_ppo_ray arguments, as flags (--actor_learning_rate 5e-7,
// --bf16) or top-level keys.
var openrlhfFamily = Family{
	Name:  "OpenRLHF",
	Title: "OpenRLHF train_ppo_ray",
	Doc: "OpenRLHF's `openrlhf.cli.train_ppo_ray` arguments, as its scripts write them (`--advantage_estimator group_norm`, " +
		"`--bf16`, `--eps_clip_low_high 0.2 0.3`) or as top-level keys of a YAML file. Batch sizes: `rollout_batch_size` " +
		"prompts of `n_samples_per_prompt` completions per step; `train_batch_size` completions per optimizer step " +
		"(`update.mini_batches` = rollout_batch_size × n_samples_per_prompt / train_batch_size, must divide). " +
		"`init_kl_coef` is the KL term in the loss with `use_kl_loss`, else the KL penalty in the reward, as in OpenRLHF; " +
		"`kl_estimator` is its estimator. OpenRLHF's default `advantage_estimator` is gae (PPO with a critic started from " +
		"`critic_pretrain`, by default the policy): a configuration that gives none but gives a critic's key (`critic_pretrain`, " +
		"`critic_learning_rate`, `value_clip`, `lambd`, `freezing_actor_steps`) trains that; without one a warning names the " +
		"estimator that trains instead. The Ray " +
		"placement, vLLM and DeepSpeed tuning flags are accepted with a warning. The keys TRL spells and means alike " +
		"(seed, bf16, temperature, save_steps, ...) are shared with its table. `--gamma` is this family's discount and " +
		"changes no algorithm; align-anything's `--train_cfgs.gamma` (given with its section) means its PPO.",
	Keys: []ForeignKey{
		{Key: "pretrain", Native: "model"},
		{Key: "save_path", Native: "run_dir", Note: "the run directory: checkpoints and the final model (RUN/model)"},
		{Key: "ckpt_path", Ignore: "checkpoints are written under run_dir (save_path)"},
		{Key: "critic_pretrain", Native: "critic_model", Note: "the critic's starting weights (by default the policy's)"},
		{Key: "reward_pretrain", Refuse: "no reward model runs: " + scriptRewards},
		{Key: "remote_rm_url", Refuse: "give the reward function as reward_computation (type: command or http, docs/rewards.md), or use an environment's rubric (env.name)"},
		{Key: "agent_func_path", Refuse: "an agent is a program the environment runs: env.name agent with env.agent.command (docs/environments.md)"},
		{Key: "prompt_data", Native: "data.train", Note: "a local parquet or JSONL file in verl's layout (Hub datasets are not fetched)"},
		{Key: "eval_dataset", Native: "data.val", Note: "a local parquet or JSONL file in verl's layout"},
		{Key: "prompt_data_probs", Value: only("the files' rows are concatenated, each read once per epoch", "null")},
		{Key: "prompt_split", Ignore: "a file's rows are read whole"},
		{Key: "eval_split", Ignore: "a file's rows are read whole"},
		{Key: "input_key", Value: only("rows in verl's layout carry the prompt as chat messages in their prompt column", "prompt")},
		{Key: "label_key", Value: only("rows in verl's layout carry the answer as reward_model.ground_truth", "null")},
		{Key: "input_template", Value: only("prompts are formatted by the model's chat template", "null")},
		{Key: "apply_chat_template", Value: only("prompts are always formatted by the model's chat template", "true")},
		{Key: "max_samples", Ignore: "every row of the files is read (data.train); a built-in environment generates data.train_size tasks"},
		{Key: "advantage_estimator", Native: "advantage.estimator", Value: rename("advantage estimator", map[string]string{
			"gae": "gae", "reinforce": "reinforce_plus_plus", "reinforce_baseline": "reinforce_plus_plus_baseline",
			"rloo": "rloo", "group_norm": "grpo", "dr_grpo": "drgrpo"}),
			Note: "gae; reinforce → reinforce_plus_plus, reinforce_baseline → reinforce_plus_plus_baseline, rloo, group_norm → grpo, dr_grpo → drgrpo"},
		{Key: "n_samples_per_prompt", Native: "rollout.group"},
		{Key: "rollout_batch_size", Native: "rollout.tasks", Note: "prompts per step"},
		{Key: "train_batch_size", Value: positive, Derived: true, Note: "completions per optimizer step, see above"},
		{Key: "micro_train_batch_size", Ignore: microTokens},
		{Key: "micro_rollout_batch_size", Ignore: "generation batches are the engine's slots (rollout.slots)"},
		{Key: "vllm_generate_batch_size", Ignore: "generation batches are the engine's slots (rollout.slots)"},
		{Key: "train_max_tokens_per_gpu", Native: "update.micro_tokens", Note: "tokens per micro-batch"},
		{Key: "rollout_max_tokens_per_gpu", Ignore: "the engine's batch is its slots (rollout.slots)"},
		{Key: "use_dynamic_batch", Ignore: microTokens},
		{Key: "packing_samples", Ignore: "sequences are packed without padding already"},
		{Key: "max_epochs", Native: "update.epochs", Note: "updates per generated batch"},
		{Key: "num_episodes", Native: "train.epochs", Note: "passes over the prompts"},
		{Key: "prompt_max_len", Native: "rollout.max_context_tokens", Note: "the longest context of a turn"},
		{Key: "generate_max_len", Native: "rollout.max_new_tokens"},
		{Key: "max_len", Ignore: "OpenRLHF's deprecated total: prompt_max_len and generate_max_len bound the turn"},
		{Key: "actor_learning_rate", Native: "optim.lr"},
		{Key: "critic_learning_rate", Native: "critic.lr"},
		{Key: "lr_warmup_ratio", Native: "optim.warmup_ratio"},
		{Key: "lr_scheduler", Value: rename("lr scheduler", map[string]string{
			"constant": "constant", "constant_with_warmup": "constant", "cosine": "cosine", "cosine_with_min_lr": "cosine_with_min_lr"}), Derived: true,
			Note: "constant, constant_with_warmup → constant; cosine; cosine_with_min_lr → cosine with optim.min_lr_ratio 0.1 (OpenRLHF's floor)"},
		{Key: "adam_betas", Value: numberPair, Derived: true, Note: "optim.beta1 and optim.beta2 (two numbers)"},
		{Key: "max_norm", Native: "optim.max_grad_norm"},
		{Key: "l2", Native: "optim.weight_decay"},
		{Key: "freezing_actor_steps", Native: "critic.warmup", Value: unsetIf("-1"), Note: "steps in which only the critic trains (-1: none)"},
		{Key: "eps_clip", Value: anyNumber, Derived: true, Note: "loss.clip_low and loss.clip_high (policy_loss_type gspo: loss.gspo_clip_*)"},
		{Key: "eps_clip_low_high", Value: numberPair, Derived: true, Note: "loss.clip_low and loss.clip_high, two numbers (gspo: loss.gspo_clip_*)"},
		{Key: "dual_clip", Native: "loss.dual_clip", Value: unsetIf()},
		{Key: "value_clip", Native: "critic.value_clip"},
		{Key: "lambd", Native: "advantage.lambda", Note: "GAE's λ"},
		{Key: "gamma", Native: "advantage.gamma", Note: "the discount (GAE, reinforce)"},
		{Key: "policy_loss_type", Native: "loss.policy", Value: rename("policy loss type", map[string]string{"ppo": "vanilla", "gspo": "gspo"}),
			Note: "ppo → vanilla, gspo"},
		{Key: "init_kl_coef", Value: anyNumber, Derived: true, Note: "loss.kl_coef with use_kl_loss, else reward.kl_coef (OpenRLHF's default 0.01)"},
		{Key: "use_kl_loss", Value: truth, Derived: true, Note: "the KL term goes in the loss (loss.*) instead of the reward (reward.*)"},
		{Key: "kl_estimator", Value: rename("kl estimator", map[string]string{"k1": "k1", "k2": "k2", "k3": "k3"}), Derived: true,
			Note: "loss.kl_kind with use_kl_loss, else reward.kl_kind (OpenRLHF's default k1)"},
		{Key: "kl_target", Value: only("the KL coefficient is fixed (init_kl_coef)", "null")},
		{Key: "kl_horizon", Ignore: "the adaptive KL controller's: kl_target is not set"},
		{Key: "entropy_loss_coef", Native: "loss.entropy_coef", Value: unsetIf()},
		{Key: "aux_loss_coef", Ignore: "the MoE router's loss: the architectures here are dense"},
		{Key: "ptx_coef", Ignore: "the pretraining loss's: pretrain_data is not supported"},
		{Key: "pretrain_data", Refuse: "no pretraining loss is mixed into the RL loss"},
		{Key: "normalize_reward", Ignore: "rewards are the rubric's scores as they are; the estimator normalises the advantages"},
		{Key: "reward_clip_range", Ignore: "rewards are the rubric's scores as they are, not clipped"},
		{Key: "no_advantage_std_norm", Native: "advantage.norm_std", Value: boolTo("false", ""), Note: "true → false: centred, not divided by the std"},
		{Key: "overlong_buffer_len", Native: "dapo.overlong_len", Value: unsetIf(), Note: "DAPO's overlong buffer in tokens"},
		{Key: "overlong_penalty_factor", Native: "dapo.overlong_factor"},
		{Key: "dynamic_filtering", Native: "dapo.dynamic_sampling", Note: "DAPO's dynamic sampling: groups whose rewards are all equal are dropped"},
		{Key: "dynamic_filtering_reward_range", Value: rewardRange, Note: "only 0 1: groups are kept when their rewards differ (for rewards in [0, 1])"},
		{Key: "enable_vllm_is_correction", Native: "loss.is", Value: boolTo("token_truncate", ""), Note: "true → token_truncate: each token's sampler ratio, capped"},
		{Key: "vllm_is_truncated_threshold", Native: "loss.is_max", Note: "the ratio's cap"},
		{Key: "eval_temperature", Native: "eval.temperature"},
		{Key: "eval_n_samples_per_prompt", Native: "eval.samples"},
		{Key: "zero_stage", Native: "dist.zero_stage"},
		{Key: "adam_offload", Value: only("optimizer offload is not implemented: dist.zero_stage shards the optimizer's state", "false")},
		{Key: "lora_rank", Value: wholeNumber, Derived: true, Note: "lora.rank (0: no adapters); its lora_alpha, lora_dropout and target_modules (OpenRLHF's defaults 16, 0, all-linear)"},
		{Key: "target_modules", Value: moduleList, Derived: true, Note: "lora.target_modules with lora_rank > 0"},
		{Key: "max_ckpt_num", Native: "train.keep_checkpoints"},
		{Key: "max_ckpt_mem", Ignore: "checkpoints are counted (max_ckpt_num), not weighed"},
		{Key: "save_hf_ckpt", Ignore: "checkpoints and the final model are in Hugging Face's layout always"},
		{Key: "disable_ds_ckpt", Ignore: "checkpoints hold the model, optimizer and data position always"},
		{Key: "use_ds_universal_ckpt", Ignore: "checkpoints are read on any number of ranks"},
		{Key: "load_checkpoint", Refuse: "continue a run with --resume (run_dir's newest checkpoint) or --resume=PATH"},
		{Key: "save_value_network", Ignore: "the critic is saved in each checkpoint"},
		{Key: "use_wandb", Ignore: logged},
		{Key: "wandb_org", Ignore: logged},
		{Key: "wandb_group", Ignore: logged},
		{Key: "wandb_run_name", Ignore: logged},
		{Key: "use_tensorboard", Ignore: logged},
		{Key: "perf", Ignore: "every step's metrics hold its timings"},
		{Key: "use_ms", Ignore: "models are read from a local directory or the Hugging Face Hub"},
		{Key: "full_determinism", Ignore: "one seed drives data, sampling and shuffles"},
		{Key: "flash_attn", Ignore: ownKernels},
		{Key: "deepcompile", Ignore: ownKernels},
		{Key: "enable_ema", Value: only("no EMA copy of the weights is kept", "false")},
		{Key: "ema_beta", Ignore: "the EMA copy's: enable_ema is false"},
		{Key: "ring_attn_size", Value: only("no context parallelism: each sequence runs on one device", "1")},
		{Key: "ring_head_stride", Ignore: "the ring attention's: ring_attn_size is 1"},
		{Key: "ds_tensor_parallel_size", Value: only("no tensor parallelism: data parallelism is dist.* and --nproc", "1")},
	},
}

// openrlhfMachinery are OpenRLHF's Ray placement, vLLM and DeepSpeed flags: none can have an
// effect in one process that generates and trains.
var openrlhfMachinery = func() []ForeignKey {
	place := "processes are started by --nproc, torchrun or srun; each generates and trains (docs/distributed.md)"
	engine := "generation runs in the built-in engine, in the training process"
	var out []ForeignKey
	for _, k := range []string{"ref_num_nodes", "ref_num_gpus_per_node", "reward_num_nodes", "reward_num_gpus_per_node",
		"actor_num_nodes", "actor_num_gpus_per_node", "critic_num_nodes", "critic_num_gpus_per_node",
		"colocate_all_models", "colocate_actor_ref", "colocate_critic_reward", "ref_reward_offload", "actor_init_on_gpu"} {
		out = append(out, ForeignKey{Key: k, Ignore: place})
	}
	for _, k := range []string{"vllm_num_engines", "vllm_sync_backend", "vllm_sync_with_ray", "enable_prefix_caching",
		"enforce_eager", "vllm_enable_sleep", "deepspeed_enable_sleep", "rollout_tasks_per_gpu", "async_queue_size"} {
		out = append(out, ForeignKey{Key: k, Ignore: engine})
	}
	out = append(out,
		ForeignKey{Key: "async_train", Ignore: "each step's batch is generated by the current policy; dist.rollout_ranks generates one batch ahead on ranks of their own"},
		ForeignKey{Key: "local_rank", Ignore: "the rank comes from the launcher's environment"},
		ForeignKey{Key: "zpg", Ignore: "ZeRO++'s: gradients are reduced as dist.zero_stage shards them"},
		ForeignKey{Key: "overlap_comm", Ignore: "dist.overlap overlaps the gradients' reduction with the backward pass"},
		ForeignKey{Key: "grad_accum_dtype", Ignore: "gradients accumulate in float32"},
		ForeignKey{Key: "disable_fast_tokenizer", Ignore: "the tokenizer is the built-in one (tokenizer.json)"},
		ForeignKey{Key: "value_head_prefix", Ignore: "the critic's value head is its own"},
	)
	return out
}()

func init() {
	openrlhfFamily.Keys = append(append(openrlhfFamily.Keys, openrlhfMachinery...), sharedTRLOpenRLHF...)
}

// deriveOpenRLHF combines OpenRLHF's keys that mean something together: the mini-batch size, the
// clip range, the KL term's place, the schedule, AdamW's betas and LoRA.
func deriveOpenRLHF(c *Config, g given) error {
	errs := []error{openrlhfBatch(c, g), openrlhfClip(c, g), openrlhfKL(c, g), openrlhfLoRA(c, g), openrlhfEstimator(c)}
	if s, ok := g["lr_scheduler"]; ok {
		where := s.where + " (lr_scheduler)"
		if s.node.Value == "cosine_with_min_lr" {
			errs = append(errs, c.Set("optim.schedule", "cosine", where), c.Set("optim.min_lr_ratio", "0.1", where+", OpenRLHF's floor of a tenth"))
		} else {
			errs = append(errs, c.Set("optim.schedule", s.node.Value, where))
		}
	}
	if b, ok := g["adam_betas"]; ok {
		lo, hi, _ := strings.Cut(b.node.Value, " ")
		errs = append(errs, c.Set("optim.beta1", lo, b.where+" (adam_betas)"), c.Set("optim.beta2", hi, b.where+" (adam_betas)"))
	}
	return joinErrors(errs)
}

// openrlhfEstimator honours OpenRLHF's default estimator, gae, where the configuration gives a
// critic's key and no estimator; without one the difference is warned about.
func openrlhfEstimator(c *Config) error {
	if c.explicit("advantage.estimator") {
		return nil
	}
	for _, k := range []string{"critic_pretrain", "critic_learning_rate", "value_clip", "lambd", "freezing_actor_steps"} {
		if where, ok := c.foreignSeen[k]; ok {
			return c.Set("advantage.estimator", "gae", where+" (OpenRLHF's default advantage_estimator gae: PPO with the critic "+k+" configures)")
		}
	}
	if where, ok := c.layouts[openrlhfFamily.Name]; ok {
		c.warn(fmt.Sprintf("%s: OpenRLHF's default advantage_estimator is gae (PPO with a critic); this configuration gives none, so %s's %s trains: set advantage_estimator to choose",
			where, c.Origin("advantage.estimator"), c.Advantage.Estimator))
	}
	return nil
}

// openrlhfBatch sets update.mini_batches from train_batch_size, counted in completions.
func openrlhfBatch(c *Config, g given) error {
	tb, ok := g["train_batch_size"]
	if !ok {
		return nil
	}
	per, _ := strconv.Atoi(tb.node.Value) // checked by positive
	completions := c.Rollout.Tasks * c.Rollout.GroupSize
	if completions%per != 0 {
		return &Error{Where: tb.where, Key: "train_batch_size", Err: fmt.Errorf(
			"%d completions per step (rollout_batch_size %d × n_samples_per_prompt %d) are not a whole number of optimizer steps of %d",
			completions, c.Rollout.Tasks, c.Rollout.GroupSize, per)}
	}
	return c.Set("update.mini_batches", strconv.Itoa(completions/per), tb.where+" (train_batch_size)")
}

// openrlhfClip sets the clip range from eps_clip or eps_clip_low_high: PPO's ε, or GSPO's
// sequence-ratio range under policy_loss_type gspo.
func openrlhfClip(c *Config, g given) error {
	native := "loss.clip_"
	if c.Loss.Policy == "gspo" {
		native = "loss.gspo_clip_"
	}
	if p, ok := g["eps_clip_low_high"]; ok {
		lo, hi, _ := strings.Cut(p.node.Value, " ")
		where := p.where + " (eps_clip_low_high)"
		return joinErrors([]error{c.Set(native+"low", lo, where), c.Set(native+"high", hi, where)})
	}
	if e, ok := g["eps_clip"]; ok {
		where := e.where + " (eps_clip)"
		return joinErrors([]error{c.Set(native+"low", e.node.Value, where), c.Set(native+"high", e.node.Value, where)})
	}
	return nil
}

// openrlhfKL puts init_kl_coef and kl_estimator in the loss with use_kl_loss, else in the reward
// (OpenRLHF's default coefficient 0.01 and estimator k1 when only one of them is given).
func openrlhfKL(c *Config, g given) error {
	coef, hasCoef := g["init_kl_coef"]
	est, hasEst := g["kl_estimator"]
	use, hasUse := g["use_kl_loss"]
	if !hasCoef && !hasEst && !hasUse {
		return nil
	}
	section := "reward."
	if hasUse && use.node.Value == "true" {
		section = "loss."
	}
	var errs []error
	if hasCoef {
		errs = append(errs, c.Set(section+"kl_coef", coef.node.Value, coef.where+" (init_kl_coef)"))
	} else {
		w := firstWhere(est, use)
		errs = append(errs, c.Set(section+"kl_coef", "0.01", w+" (OpenRLHF's default init_kl_coef)"))
	}
	if hasEst {
		errs = append(errs, c.Set(section+"kl_kind", est.node.Value, est.where+" (kl_estimator)"))
	} else {
		errs = append(errs, c.Set(section+"kl_kind", "k1", firstWhere(coef, use)+" (OpenRLHF's default kl_estimator)"))
	}
	return joinErrors(errs)
}

// openrlhfLoRA turns adapters on for lora_rank > 0, with OpenRLHF's defaults for lora_alpha,
// lora_dropout and target_modules where they are not given.
func openrlhfLoRA(c *Config, g given) error {
	r, ok := g["lora_rank"]
	if !ok || r.node.Value == "0" {
		if t, has := g["target_modules"]; has {
			c.warn(fmt.Sprintf("%s: target_modules has no effect without lora_rank > 0 (OpenRLHF's default 0: the whole model trains)", t.where))
		}
		return nil
	}
	errs := []error{c.Set("lora.rank", r.node.Value, r.where+" (lora_rank)")}
	for _, k := range []struct{ key, native, def string }{
		{"lora_alpha", "lora.alpha", "16"}, {"lora_dropout", "lora.dropout", "0"}, {"target_modules", "lora.target_modules", "all-linear"}} {
		if v, has := g[k.key]; has {
			errs = append(errs, c.Set(k.native, v.node.Value, v.where+" ("+k.key+")"))
		} else {
			errs = append(errs, c.Set(k.native, k.def, r.where+" (lora_rank, OpenRLHF's default "+k.key+")"))
		}
	}
	return joinErrors(errs)
}

// minusOneIsZero reads a step interval where -1 means never (OpenRLHF's save_steps and
// eval_steps): 0 here, which is only at the end.
func minusOneIsZero(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("want a number of steps, got %s", kindName(n))
	}
	switch {
	case n.Tag == "!!null":
		return "", nil
	case n.Value == "-1":
		return "0", nil
	}
	return n.Value, nil
}

// numberPair reads two numbers, as a YAML list or as a flag's two values ("0.2 0.3"), into "a b".
func numberPair(n *yaml.Node) (string, error) {
	var parts []string
	switch n.Kind {
	case yaml.SequenceNode:
		for _, it := range n.Content {
			parts = append(parts, it.Value)
		}
	case yaml.ScalarNode:
		parts = strings.Fields(n.Value)
	}
	if len(parts) != 2 {
		return "", fmt.Errorf("want two numbers, got %s", shown(n))
	}
	for _, p := range parts {
		if _, err := strconv.ParseFloat(p, 64); err != nil {
			return "", fmt.Errorf("want two numbers, got %s", shown(n))
		}
	}
	return parts[0] + " " + parts[1], nil
}

// rewardRange accepts dynamic filtering's range 0 1, which keeps the groups whose rewards differ
// when they lie in [0, 1], as dapo.dynamic_sampling does.
func rewardRange(n *yaml.Node) (string, error) {
	p, err := numberPair(n)
	if err != nil {
		return "", err
	}
	lo, hi, _ := strings.Cut(p, " ")
	a, _ := strconv.ParseFloat(lo, 64)
	b, _ := strconv.ParseFloat(hi, 64)
	if a != 0 || b != 1 {
		return "", fmt.Errorf("%s: groups are kept when their rewards differ (dapo.dynamic_sampling), which is the range 0 1 for rewards in [0, 1]; other ranges are not implemented", shown(n))
	}
	return "", nil
}

// openrlhfAdapters reports whether OpenRLHF's lora_rank turns adapters on (then lora_alpha and
// lora_dropout are its, not TRL's use_peft's).
func openrlhfAdapters(g given) bool {
	r, ok := g["lora_rank"]
	return ok && r.node.Value != "0"
}
