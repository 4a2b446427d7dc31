package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/grpo"
)

// trlFamily is TRL's GRPOConfig (with the Trainer arguments it inherits) and the verifiers
// library's additions, as top-level keys of a YAML file or key=value arguments.
var trlFamily = Family{
	Name:  "TRL",
	Title: "TRL GRPOConfig and verifiers",
	Doc: "TRL's `GRPOConfig` fields (and the `TrainingArguments` it inherits), the model arguments (`ModelConfig`) and " +
		"`trl grpo`'s script arguments, with verifiers' and open-r1's additions, as top-level keys of a `trl grpo --config` " +
		"file, `key=value` arguments or flags as HfArgumentParser takes them (`--learning_rate 1e-6`, `--bf16`). Batch sizes " +
		"count completions, as in TRL, with one process: a generation batch is `generation_batch_size` completions, by default " +
		"`per_device_train_batch_size` × `steps_per_generation` (by default `gradient_accumulation_steps`), in groups of " +
		"`num_generations` (TRL's default 8; must divide): its prompts are `rollout.tasks`, and it makes " +
		"`steps_per_generation` / `gradient_accumulation_steps` optimizer steps (`update.mini_batches`). The script's " +
		"dataset and reward functions are refused with a pointer to `data.train` and `env.name`. verifiers' `max_turns` is " +
		"the MT-GRPO family's key of the same name; keys OpenRLHF spells and means alike are shared with its table.",
	Keys: append(append([]ForeignKey{
		{Key: "model_name_or_path", Native: "model"},
		{Key: "output_dir", Native: "run_dir"},
		{Key: "learning_rate", Native: "optim.lr"},
		{Key: "lr_scheduler_type", Native: "optim.schedule",
			Value: rename("lr scheduler", map[string]string{"constant": "constant", "constant_with_warmup": "constant", "cosine": "cosine", "cosine_with_min_lr": "cosine"}),
			Note:  "constant, constant_with_warmup; cosine, cosine_with_min_lr (its min_lr_rate: lr_scheduler_kwargs)"},
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
		{Key: "gradient_accumulation_steps", Value: positive, Derived: true, Note: "micro-steps per optimizer step (TRL's default 1), see above"},
		{Key: "generation_batch_size", Value: positive, Derived: true, Note: "completions per generation, see above"},
		{Key: "steps_per_generation", Value: positive, Derived: true, Note: "micro-steps per generation, see above"},
		{Key: "num_generations", Native: "rollout.group", Note: "completions per prompt (the GRPO group; TRL's default 8 when the batch keys are given)"},
		{Key: "num_generations_eval", Native: "eval.samples", Value: unsetIf(), Note: "completions per evaluation prompt"},
		{Key: "max_completion_length", Native: "rollout.max_new_tokens"},
		{Key: "max_prompt_length", Native: "rollout.max_context_tokens", Value: unsetIf(), Note: "the longest context of a turn"},
		{Key: "top_k", Native: "rollout.top_k", Value: unsetIf("0", "-1")},
		{Key: "min_p", Native: "rollout.min_p", Value: unsetIf()},
		{Key: "repetition_penalty", Value: only("no repetition penalty in sampling", "1", "1.0")},
		{Key: "beta", Native: "loss.kl_coef", Note: "the KL term in the loss (estimator loss.kl_kind, k3 as TRL's)"},
		{Key: "epsilon", Value: anyNumber, Derived: true,
			Note: "loss.clip_low, and loss.clip_high unless epsilon_high is given (with importance_sampling_level sequence loss.gspo_clip_*)"},
		{Key: "epsilon_high", Value: anyNumber, Derived: true,
			Note: "loss.clip_high (sequence level: loss.gspo_clip_high; loss_type cispo: the IS weight's cap, loss.clip_high = epsilon_high − 1)"},
		{Key: "loss_type", Value: trlLossType, Derived: true,
			Note: "grpo → loss.agg seq-mean-token-mean, bnpo and dapo → token-mean, dr_grpo → seq-mean-token-sum-norm (loss.agg_norm: " +
				"max_completion_length), cispo → loss.policy cispo with token-mean; sapo, luspo and vespo are refused"},
		{Key: "importance_sampling_level", Native: "loss.policy", Value: rename("importance sampling level", map[string]string{"token": "vanilla", "sequence": "gspo"}),
			Note: "token → vanilla (PPO's clip per token), sequence → gspo (the sequence's ratio, GSPO)"},
		{Key: "vllm_importance_sampling_correction", Value: truth, Derived: true,
			Note: "true: the sampler-vs-trainer correction loss.is (vllm_importance_sampling_mode, TRL's default sequence_mask); false: off"},
		{Key: "vllm_importance_sampling_mode", Value: rename("importance sampling mode", map[string]string{"token_truncate": "token_truncate",
			"token_mask": "token_mask", "sequence_truncate": "sequence_truncate", "sequence_mask": "sequence_mask"}), Derived: true,
			Note: "loss.is when the correction is on"},
		{Key: "vllm_importance_sampling_clip_max", Native: "loss.is_max", Value: unsetIf(), Note: "the IS ratio's upper bound C"},
		{Key: "vllm_importance_sampling_cap", Native: "loss.is_max", Value: unsetIf(), Note: "TRL's older name of vllm_importance_sampling_clip_max"},
		{Key: "vllm_importance_sampling_clip_min", Native: "loss.is_min", Value: unsetIf(), Note: "the IS ratio's lower bound"},
		{Key: "entropy_coef", Native: "loss.entropy_coef"},
		{Key: "max_tool_calling_iterations", Native: "rollout.max_turns", Value: plusOne, Note: "rounds of tool calls before the answer: rollout.max_turns = n + 1"},
		{Key: "chat_template_kwargs", Native: "rollout.chat_vars", Note: "extra chat template variables (enable_thinking: false)"},
		{Key: "shuffle_dataset", Native: "data.shuffle"},
		{Key: "scale_rewards", Value: rename("scale_rewards", map[string]string{
			"true": "group", "True": "group", "group": "group", "batch": "batch", "false": "none", "False": "none", "none": "none"}), Derived: true,
			Note: "true or group → advantage.norm_std true (the group's std); batch → norm_std true, advantage.std_over batch (the std of the whole step); false or none → norm_std false"},
		{Key: "num_iterations", Native: "update.epochs", Note: "updates per generated batch"},
		{Key: "mask_truncated_completions", Native: "rollout.mask_truncated"},
		{Key: "fp16", Native: "dtype", Value: boolTo("float16", ""), Note: "true → float16"},
		{Key: "save_total_limit", Native: "train.keep_checkpoints", Value: unsetIf()},
		{Key: "sync_ref_model", Value: only("the reference model stays the starting model", "false")},
		{Key: "eval_strategy", Ignore: "evaluation runs before and after training and every train.eval_every steps"},
		{Key: "save_strategy", Ignore: "checkpoints are written every train.checkpoint_every steps and at the end"},
		{Key: "per_device_eval_batch_size", Ignore: "the whole validation set is played at once"},
		{Key: "report_to", Ignore: "metrics go to RUN/metrics.jsonl and RUN/report.html"},
		{Key: "run_name", Ignore: "the run is named by run_dir"},
		{Key: "log_completions", Ignore: "train.samples trajectories per step are written to RUN/samples"},
		{Key: "num_completions_to_print", Ignore: "train.samples trajectories per step are written to RUN/samples"},
		{Key: "use_vllm", Ignore: "generation runs in the built-in engine"},
		{Key: "vllm_mode", Ignore: "generation runs in the built-in engine"},
		{Key: "num_batches_ahead", Ignore: "each step's batch is generated by the current policy (on-policy); dist.rollout_ranks generates one batch ahead on ranks of their own"},
		{Key: "enable_async_generation", Ignore: "each step's batch is generated by the current policy (on-policy); dist.rollout_ranks generates one batch ahead on ranks of their own"},
		{Key: "async_timeout", Ignore: "no asynchronous generation to wait for"},
		{Key: "max_concurrent", Native: "rollout.workers", Note: "concurrent environment, tool and reward calls"},
		{Key: "fsdp", Native: "dist.zero_stage", Value: trlFSDP,
			Note: "full_shard → 3, shard_grad_op → 2, no_shard → 0; auto_wrap is the default (units by layer); offload and hybrid sharding are refused"},
		{Key: "fsdp_config", Ignore: "FSDP's wrap policy, prefetch and precision: the units are the model's layers, ZeRO-3 prefetches the next one, precision is dtype"},
		{Key: "use_peft", Value: truth, Derived: true, Note: "true: LoRA adapters (lora.rank > 0) from the lora_* fields, TRL's defaults for those not given"},
		{Key: "lora_r", Value: positive, Derived: true, Note: "lora.rank with use_peft (TRL's default 16)"},
		{Key: "lora_target_modules", Value: moduleList, Derived: true,
			Note: "lora.target_modules with use_peft: a list, all-linear, or names separated by commas or spaces (TRL's default: PEFT's for the architecture, q_proj and v_proj)"},
		{Key: "use_rslora", Value: truth, Derived: true, Note: "lora.use_rslora with use_peft"},
		{Key: "use_dora", Value: only("DoRA is not supported: LoRA adapters only", "false")},
		{Key: "lora_task_type", Value: only("the adapters are a causal LM's", "causal_lm")},
		{Key: "deepspeed", Native: "dist.zero_stage", Value: trlDeepSpeed,
			Note: "the DeepSpeed JSON file's zero_optimization.stage (a YAML mapping works too); offload_optimizer and offload_param are refused"},
	}, sharedTRLOpenRLHF...), trlArguments...),
}

// deriveTRL combines TRL's batch sizes (counted in completions) into prompts per step and optimizer
// steps per generation, its loss type with its clip range, and its sampler correction.
func deriveTRL(c *Config, g given) error {
	errs := []error{trlBatch(c, g), trlLoss(c, g), trlCorrection(c, g)}
	if sr, ok := g["scale_rewards"]; ok {
		where := sr.where + " (scale_rewards)"
		scope := map[string]string{"group": "group", "batch": "batch", "none": "group"}[sr.node.Value]
		errs = append(errs, c.Set("advantage.norm_std", strconv.FormatBool(sr.node.Value != "none"), where), c.Set("advantage.std_over", scope, where))
	}
	if r, ok := g["model_revision"]; ok {
		errs = append(errs, trlRevision(c, r))
	}
	errs = append(errs, derivePEFT(c, g))
	return joinErrors(errs)
}

// trlBatch applies TRL's batch arithmetic (GRPOConfig.__post_init__, one process): a generation
// batch of generation_batch_size completions, by default per_device_train_batch_size ×
// steps_per_generation (by default gradient_accumulation_steps); whole groups of num_generations
// (TRL's default 8); steps_per_generation / gradient_accumulation_steps optimizer steps per batch.
func trlBatch(c *Config, g given) error {
	pd, hasPD := g["per_device_train_batch_size"]
	ga, hasGA := g["gradient_accumulation_steps"]
	gb, hasGB := g["generation_batch_size"]
	sg, hasSG := g["steps_per_generation"]
	if !hasPD && !hasGA && !hasGB && !hasSG {
		return nil
	}
	atoi := func(v givenValue, def int) int {
		if v.node == nil {
			return def
		}
		n, _ := strconv.Atoi(v.node.Value) // checked by positive
		return n
	}
	per, acc := atoi(pd, 8), atoi(ga, 1)
	where := firstWhere(pd, ga, gb, sg)
	if !c.explicit("rollout.group") {
		if err := c.Set("rollout.group", "8", where+" (TRL's default num_generations)"); err != nil {
			return err
		}
	}
	var completions, steps int
	switch {
	case hasGB && hasSG:
		return &Error{Where: sg.where, Key: "steps_per_generation", Err: fmt.Errorf("generation_batch_size (%s) is given too: give one of the two, as TRL requires", gb.where)}
	case hasGB:
		completions = atoi(gb, 0)
		if completions%per != 0 {
			return &Error{Where: gb.where, Key: "generation_batch_size", Err: fmt.Errorf(
				"%d completions are not a whole number of micro-steps of per_device_train_batch_size %d", completions, per)}
		}
		steps = completions / per
	default:
		steps = atoi(sg, acc)
		completions = per * steps
	}
	group := c.Rollout.GroupSize
	var errs []error
	if completions%group != 0 {
		errs = append(errs, &Error{Where: where, Key: "per_device_train_batch_size", Err: fmt.Errorf(
			"a generation batch of %d completions (per_device_train_batch_size %d × steps_per_generation %d) is not a whole number of groups of %d (num_generations, rollout.group)",
			completions, per, steps, group)})
	} else {
		errs = append(errs, c.Set("rollout.tasks", strconv.Itoa(completions/group), where+" (TRL's generation batch)"))
	}
	if steps%acc != 0 {
		errs = append(errs, &Error{Where: firstWhere(sg, gb, ga), Key: "steps_per_generation", Err: fmt.Errorf(
			"%d micro-steps per generation are not a whole number of optimizer steps of gradient_accumulation_steps %d: "+
				"an optimizer step here takes its micro-steps from one generation batch", steps, acc)})
	} else if hasSG || hasGB || hasGA {
		errs = append(errs, c.Set("update.mini_batches", strconv.Itoa(steps/acc), where+" (steps_per_generation / gradient_accumulation_steps)"))
	}
	return joinErrors(errs)
}

// firstWhere is the place of the first of the values that was given.
func firstWhere(vs ...givenValue) string {
	for _, v := range vs {
		if v.node != nil {
			return v.where
		}
	}
	return ""
}

// trlLoss applies loss_type and the clip pair: epsilon and epsilon_high are PPO's ε, GSPO's
// sequence range with importance_sampling_level sequence, and CISPO's cap (epsilon_high) with
// loss_type cispo.
func trlLoss(c *Config, g given) error {
	var errs []error
	lt, hasLT := g["loss_type"]
	if hasLT {
		where := lt.where + " (loss_type)"
		agg := map[string]string{"grpo": "seq-mean-token-mean", "bnpo": "token-mean", "dapo": "token-mean", "dr_grpo": "seq-mean-token-sum-norm", "cispo": "token-mean"}
		errs = append(errs, c.Set("loss.agg", agg[lt.node.Value], where))
		if lt.node.Value == "cispo" {
			errs = append(errs, c.Set("loss.policy", "cispo", where))
		}
	}
	e, hasE := g["epsilon"]
	eh, hasEH := g["epsilon_high"]
	if hasLT && lt.node.Value == "cispo" {
		// TRL's CISPO caps the IS weight at epsilon_high, with no lower bound.
		if !hasEH {
			return joinErrors(append(errs, &Error{Where: lt.where, Key: "loss_type", Err: fmt.Errorf("cispo caps the IS weight at epsilon_high: give it (TRL recommends 5.0)")}))
		}
		cap, _ := strconv.ParseFloat(eh.node.Value, 64)
		if cap <= 1 {
			return joinErrors(append(errs, &Error{Where: eh.where, Key: "epsilon_high", Err: fmt.Errorf(
				"%s: CISPO's cap on the IS weight must be above 1 here (loss.clip_high = epsilon_high − 1)", eh.node.Value)}))
		}
		return joinErrors(append(errs, c.Set("loss.clip_low", "1", lt.where+" (loss_type cispo: no lower bound)"),
			c.Set("loss.clip_high", strconv.FormatFloat(cap-1, 'g', -1, 64), eh.where+" (epsilon_high − 1)")))
	}
	native := "loss.clip_"
	if c.Loss.Policy == grpo.PolicyGSPO {
		native = "loss.gspo_clip_"
	}
	if hasE {
		errs = append(errs, c.Set(native+"low", e.node.Value, e.where+" (epsilon)"))
		if !hasEH {
			errs = append(errs, c.Set(native+"high", e.node.Value, e.where+" (epsilon)"))
		}
	}
	if hasEH {
		errs = append(errs, c.Set(native+"high", eh.node.Value, eh.where+" (epsilon_high)"))
	}
	return joinErrors(errs)
}

// trlCorrection applies vllm_importance_sampling_correction and its mode to loss.is.
func trlCorrection(c *Config, g given) error {
	on, hasOn := g["vllm_importance_sampling_correction"]
	mode, hasMode := g["vllm_importance_sampling_mode"]
	switch {
	case hasOn && on.node.Value == "true":
		m, where := "sequence_mask", on.where+" (vllm_importance_sampling_correction, TRL's default mode)"
		if hasMode {
			m, where = mode.node.Value, mode.where+" (vllm_importance_sampling_mode)"
		}
		return c.Set("loss.is", m, where)
	case hasOn:
		if hasMode {
			c.warn(fmt.Sprintf("%s: vllm_importance_sampling_mode has no effect: vllm_importance_sampling_correction is false", mode.where))
		}
		return c.Set("loss.is", "off", on.where+" (vllm_importance_sampling_correction)")
	case hasMode:
		c.warn(fmt.Sprintf("%s: vllm_importance_sampling_mode has no effect without vllm_importance_sampling_correction=true "+
			"(TRL corrects only vLLM's samples; the built-in engine's are corrected when it is given)", mode.where))
	}
	return nil
}

// trlRevision makes model_revision the Hub revision of model_name_or_path (model ORG/NAME@REVISION).
func trlRevision(c *Config, r givenValue) error {
	rev := r.node.Value
	switch {
	case rev == "" || rev == "main":
		return nil // the default branch
	case c.Model == "":
		return &Error{Where: r.where, Key: "model_revision", Err: fmt.Errorf("%s without a model (model_name_or_path)", rev)}
	case strings.Contains(c.Model, "@"):
		return &Error{Where: r.where, Key: "model_revision", Err: fmt.Errorf("%s: the model %s (from %s) names its revision already", rev, c.Model, c.Origin("model"))}
	}
	return c.Set("model", c.Model+"@"+rev, r.where+" (model_name_or_path@model_revision)")
}
