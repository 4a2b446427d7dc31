package config

import (
	"fmt"
	"strconv"
)

// trlFamily is TRL's GRPOConfig (with the Trainer arguments it inherits) and the verifiers
// library's additions, as top-level keys of a YAML file or key=value arguments.
var trlFamily = Family{
	Name:  "TRL",
	Title: "TRL GRPOConfig and verifiers",
	Doc: "TRL's `GRPOConfig` fields (and the `TrainingArguments` it inherits), with verifiers' additions, as top-level " +
		"keys, `key=value` arguments or flags as HfArgumentParser takes them (`--learning_rate 1e-6`, `--bf16`). Batch sizes count completions, as in TRL: a step's prompts are `per_device_train_batch_size` × " +
		"`gradient_accumulation_steps` / `num_generations` (must divide). verifiers' `max_turns` is the MT-GRPO " +
		"family's key of the same name.",
	Keys: []ForeignKey{
		{Key: "model_name_or_path", Native: "model"},
		{Key: "output_dir", Native: "run_dir"},
		{Key: "learning_rate", Native: "optim.lr"},
		{Key: "lr_scheduler_type", Native: "optim.schedule",
			Value: rename("lr scheduler", map[string]string{"constant": "constant", "constant_with_warmup": "constant", "cosine": "cosine"})},
		{Key: "warmup_steps", Native: "optim.warmup"},
		{Key: "warmup_ratio", Native: "optim.warmup_ratio", Note: "the warm-up as a fraction of the run, used when warmup_steps is 0"},
		{Key: "weight_decay", Native: "optim.weight_decay"},
		{Key: "adam_beta1", Native: "optim.beta1"},
		{Key: "adam_beta2", Native: "optim.beta2"},
		{Key: "adam_epsilon", Native: "optim.eps"},
		{Key: "max_grad_norm", Native: "optim.max_grad_norm"},
		{Key: "num_train_epochs", Native: "train.epochs", Value: wholeNumber},
		{Key: "max_steps", Native: "train.steps", Value: unsetIf("-1"), Note: "-1 sets nothing (epochs decide)"},
		{Key: "per_device_train_batch_size", Value: positive, Derived: true, Note: "completions per micro-step (TRL's default 8), see above"},
		{Key: "gradient_accumulation_steps", Value: positive, Derived: true, Note: "see above (TRL's default 1)"},
		{Key: "num_generations", Native: "rollout.group", Note: "completions per prompt (the GRPO group)"},
		{Key: "max_completion_length", Native: "rollout.max_new_tokens"},
		{Key: "max_prompt_length", Native: "rollout.max_context_tokens", Value: unsetIf(), Note: "the longest context of a turn"},
		{Key: "temperature", Native: "rollout.temperature"},
		{Key: "top_p", Native: "rollout.top_p"},
		{Key: "top_k", Native: "rollout.top_k", Value: unsetIf("0", "-1")},
		{Key: "min_p", Native: "rollout.min_p", Value: unsetIf()},
		{Key: "repetition_penalty", Value: only("no repetition penalty in sampling", "1", "1.0")},
		{Key: "beta", Native: "loss.kl_coef", Note: "the KL term in the loss (estimator loss.kl_kind, k3 as TRL's)"},
		{Key: "epsilon", Value: anyNumber, Derived: true, Note: "loss.clip_low, and loss.clip_high unless epsilon_high is given"},
		{Key: "epsilon_high", Value: anyNumber, Derived: true, Note: "loss.clip_high"},
		{Key: "loss_type", Native: "loss.agg", Value: rename("loss type", map[string]string{
			"grpo": "seq-mean-token-mean", "bnpo": "token-mean", "dapo": "token-mean", "dr_grpo": "seq-mean-token-sum-norm"}),
			Note: "grpo → seq-mean-token-mean, bnpo and dapo → token-mean, dr_grpo → seq-mean-token-sum-norm (loss.agg_norm)"},
		{Key: "scale_rewards", Value: rename("scale_rewards", map[string]string{
			"true": "group", "True": "group", "group": "group", "batch": "batch", "false": "none", "False": "none", "none": "none"}), Derived: true,
			Note: "true or group → advantage.norm_std true (the group's std); batch → norm_std true, advantage.std_over batch (the std of the whole step); false or none → norm_std false"},
		{Key: "num_iterations", Native: "update.epochs", Note: "updates per generated batch"},
		{Key: "mask_truncated_completions", Native: "rollout.mask_truncated"},
		{Key: "gradient_checkpointing", Native: "update.gradient_checkpointing"},
		{Key: "bf16", Native: "dtype", Value: boolTo("bfloat16", ""), Note: "true → bfloat16"},
		{Key: "seed", Native: "seed"},
		{Key: "save_steps", Native: "train.checkpoint_every"},
		{Key: "save_total_limit", Native: "train.keep_checkpoints", Value: unsetIf()},
		{Key: "eval_steps", Native: "train.eval_every", Value: unsetIf()},
		{Key: "sync_ref_model", Value: only("the reference model stays the starting model", "false")},
		{Key: "eval_strategy", Ignore: "evaluation runs before and after training and every train.eval_every steps"},
		{Key: "save_strategy", Ignore: "checkpoints are written every train.checkpoint_every steps and at the end"},
		{Key: "per_device_eval_batch_size", Ignore: "the whole validation set is played at once"},
		{Key: "logging_steps", Ignore: "every step is logged (RUN/metrics.jsonl)"},
		{Key: "report_to", Ignore: "metrics go to RUN/metrics.jsonl and RUN/report.html"},
		{Key: "run_name", Ignore: "the run is named by run_dir"},
		{Key: "log_completions", Ignore: "train.samples trajectories per step are written to RUN/samples"},
		{Key: "num_completions_to_print", Ignore: "train.samples trajectories per step are written to RUN/samples"},
		{Key: "use_vllm", Ignore: "generation runs in the built-in engine"},
		{Key: "vllm_mode", Ignore: "generation runs in the built-in engine"},
		{Key: "vllm_gpu_memory_utilization", Ignore: "the KV cache is sized by rollout.slots × rollout.max_len"},
		{Key: "num_batches_ahead", Ignore: "each step's batch is generated by the current policy (on-policy); dist.rollout_ranks generates one batch ahead on ranks of their own"},
		{Key: "enable_async_generation", Ignore: "each step's batch is generated by the current policy (on-policy); dist.rollout_ranks generates one batch ahead on ranks of their own"},
		{Key: "async_timeout", Ignore: "no asynchronous generation to wait for"},
		{Key: "max_concurrent", Native: "rollout.workers", Note: "concurrent environment, tool and reward calls"},
		{Key: "fsdp", Native: "dist.zero_stage", Value: trlFSDP,
			Note: "full_shard → 3, shard_grad_op → 2, no_shard → 0; auto_wrap is the default (units by layer); offload and hybrid sharding are refused"},
		{Key: "fsdp_config", Ignore: "FSDP's wrap policy, prefetch and precision: the units are the model's layers, ZeRO-3 prefetches the next one, precision is dtype"},
		{Key: "use_peft", Value: truth, Derived: true, Note: "true: LoRA adapters (lora.rank > 0) from the lora_* fields, TRL's defaults for those not given"},
		{Key: "lora_r", Value: positive, Derived: true, Note: "lora.rank with use_peft (TRL's default 16)"},
		{Key: "lora_alpha", Value: anyNumber, Derived: true, Note: "lora.alpha with use_peft (TRL's default 32)"},
		{Key: "lora_dropout", Value: anyNumber, Derived: true, Note: "lora.dropout with use_peft (TRL's default 0.05)"},
		{Key: "lora_target_modules", Value: moduleList, Derived: true,
			Note: "lora.target_modules with use_peft: a list, all-linear, or names separated by commas or spaces (TRL's default: PEFT's for the architecture, q_proj and v_proj)"},
		{Key: "use_rslora", Value: truth, Derived: true, Note: "lora.use_rslora with use_peft"},
		{Key: "use_dora", Value: only("DoRA is not supported: LoRA adapters only", "false")},
		{Key: "lora_task_type", Value: only("the adapters are a causal LM's", "causal_lm")},
		{Key: "deepspeed", Native: "dist.zero_stage", Value: trlDeepSpeed,
			Note: "the DeepSpeed JSON file's zero_optimization.stage (a YAML mapping works too); offload_optimizer and offload_param are refused"},
	},
}

// deriveTRL combines TRL's batch sizes (counted in completions) into prompts per step, and its
// clip range pair.
func deriveTRL(c *Config, g given) error {
	var errs []error
	pd, hasPD := g["per_device_train_batch_size"]
	ga, hasGA := g["gradient_accumulation_steps"]
	if hasPD || hasGA {
		per, acc, where := 8, 1, ga.where
		if hasPD {
			per, _ = strconv.Atoi(pd.node.Value)
			where = pd.where
		}
		if hasGA {
			acc, _ = strconv.Atoi(ga.node.Value)
		}
		completions := per * acc
		if completions%c.Rollout.GroupSize != 0 {
			errs = append(errs, &Error{Where: where, Key: "per_device_train_batch_size", Err: fmt.Errorf(
				"%d completions per step (per_device_train_batch_size %d × gradient_accumulation_steps %d) are not a whole number of groups of %d (num_generations, rollout.group)",
				completions, per, acc, c.Rollout.GroupSize)})
		} else {
			errs = append(errs, c.Set("rollout.tasks", strconv.Itoa(completions/c.Rollout.GroupSize), where+" (per_device_train_batch_size)"))
		}
	}
	if sr, ok := g["scale_rewards"]; ok {
		where := sr.where + " (scale_rewards)"
		scope := map[string]string{"group": "group", "batch": "batch", "none": "group"}[sr.node.Value]
		errs = append(errs, c.Set("advantage.norm_std", strconv.FormatBool(sr.node.Value != "none"), where), c.Set("advantage.std_over", scope, where))
	}
	if e, ok := g["epsilon"]; ok {
		errs = append(errs, c.Set("loss.clip_low", e.node.Value, e.where+" (epsilon)"))
		if _, high := g["epsilon_high"]; !high {
			errs = append(errs, c.Set("loss.clip_high", e.node.Value, e.where+" (epsilon)"))
		}
	}
	if e, ok := g["epsilon_high"]; ok {
		errs = append(errs, c.Set("loss.clip_high", e.node.Value, e.where+" (epsilon_high)"))
	}
	errs = append(errs, derivePEFT(c, g))
	return joinErrors(errs)
}
