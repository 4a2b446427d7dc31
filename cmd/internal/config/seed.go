package config

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/rollout"
)

// seedFamily is the multi-turn GRPO seed trainer's own keys (its multiturn_grpo_trainer.yaml,
// on top of verl's: algorithm.adv_estimator and the rest are in verlFamily).
var seedFamily = Family{
	Name:  "multi-turn GRPO seed",
	Title: "The multi-turn GRPO seed trainer",
	Doc: "The seed trainer's own sections (its `multiturn_grpo_trainer.yaml` and `multiturn_grpo_math.yaml`), " +
		"beside verl's keys. `reward_computation` means two things: with `type: command` or `type: http` it is an " +
		"external reward function (docs/rewards.md, native layout); with any other type it is the seed's settings " +
		"of the built-in reward, translated as listed.",
	Keys: []ForeignKey{
		{Key: "algorithm.multiturn_grpo.n_trajectories_per_question", Native: "rollout.group"},
		{Key: "algorithm.multiturn_grpo.max_turns_per_trajectory", Native: "rollout.max_turns"},
		{Key: "algorithm.multiturn_grpo.max_context_length", Native: "rollout.max_context_tokens"},
		{Key: "norm_adv_by_std_in_grpo", Native: "advantage.norm_std"},
		{Key: "advantage_epsilon", Native: "advantage.eps"},
		{Key: "turn_advantage_coef", Native: "advantage.turn_coef"},
		{Key: "multiturn_trajectory.context_condenser.type", Native: "rollout.condenser.type", Value: seedCondenser,
			Note: "simple → last_n; also full, last_n, token_budget, summary"},
		{Key: "multiturn_trajectory.context_condenser.keep_last_n_steps", Native: "rollout.condenser.keep_last_n"},
		{Key: "multiturn_trajectory.context_condenser.max_condensed_tokens", Native: "rollout.condenser.max_tokens",
			Note: "the budget of token_budget and summary; with another condenser a warning says it has no effect"},
		{Key: "multiturn_trajectory.generation.max_sequence_length", Native: "rollout.max_len",
			Note: "KV-cache length of one sequence: context and output"},
		{Key: "multiturn_trajectory.generation.batch_size", Native: "rollout.slots",
			Note: "sequences decoded at once"},
		{Key: "reward_computation.type", Native: "env.reward_rule", Value: seedRewardType,
			Note: "grpo → inverse (R = 1/max_t|c_t| when format and answer are right); also off, inverse, scaled. " +
				"type command or http makes the section an external reward function (docs/rewards.md)"},
		{Key: "reward_computation.domain", Native: "env.domain", Value: seedDomain,
			Note: "coding → code; the rubric of env data (another environment has its own: a warning says so)"},
		{Key: "reward_computation.ground_truth_file", Native: "data.ground_truth_file"},
		{Key: "reward_computation.format_validation", Value: seedFormatValidation,
			Note: "true only: the built-in rubrics always gate the reward on the answer format"},
		{Key: "trajectory_profiling.enable", Native: "profiling.enable"},
		{Key: "trajectory_profiling.profile_reward_computation", Native: "profiling.rewards"},
		{Key: "trajectory_profiling.profile_context_condensation", Native: "profiling.condensation"},
	},
}

// alignAnythingFamily is align-anything's multi-turn PPO (after RAGEN): train_cfgs, model_cfgs,
// data_cfgs, logger_cfgs, agent_proxy, env_cfgs. Its trainer is PPO: a configuration in this
// layout trains a critic with GAE unless advantage.estimator is set.
var alignAnythingFamily = Family{
	Name:  "align-anything",
	Title: "align-anything multi-turn PPO",
	Doc: "align-anything's multi-turn PPO (after RAGEN), in its YAML sections or as its flags: `--train_cfgs.multi_turn true`, " +
		"or without the section where the name is unique and no flag of mtgrpo's own has it (`--actor_model_name_or_path DIR`). Its trainer is PPO with a critic: a configuration with any of these keys trains with " +
		"`advantage.estimator: gae` unless the estimator is set (by `algorithm.adv_estimator` or natively), and " +
		"`bi_level_gae: true` selects bi-level GAE.",
	Implies: []Implied{{Native: "advantage.estimator", Value: "gae", Why: "align-anything's trainer is PPO with a critic"}},
	Keys: []ForeignKey{
		{Key: "train_cfgs.multi_turn", Native: "rollout.max_turns", Value: boolTo("", "1"),
			Note: "false → one action turn per episode; true keeps the environment's turns"},
		{Key: "train_cfgs.bi_level_gae", Native: "advantage.bi_level"},
		{Key: "train_cfgs.high_level_gamma", Native: "advantage.turn_gamma"},
		{Key: "train_cfgs.max_turn", Native: "rollout.max_turns"},
		{Key: "train_cfgs.gamma", Native: "advantage.gamma"},
		{Key: "train_cfgs.gae_lambda", Native: "advantage.lambda"},
		{Key: "train_cfgs.actor_lr", Native: "optim.lr"},
		{Key: "train_cfgs.critic_lr", Native: "critic.lr"},
		{Key: "train_cfgs.actor_weight_decay", Native: "optim.weight_decay"},
		{Key: "train_cfgs.actor_lr_scheduler_type", Native: "optim.schedule",
			Value: rename("lr scheduler", map[string]string{"constant": "constant", "cosine": "cosine", "constant_with_warmup": "constant"}),
			Note:  "constant, constant_with_warmup, cosine"},
		{Key: "train_cfgs.epochs", Native: "train.epochs"},
		{Key: "train_cfgs.update_iters", Native: "update.epochs"},
		{Key: "train_cfgs.seed", Native: "seed"},
		{Key: "train_cfgs.kl_coeff", Native: "reward.kl_coef", Note: "the KL penalty in the reward, as its PPO trainer"},
		{Key: "train_cfgs.clip_range_ratio", Native: "loss.clip_low, loss.clip_high"},
		{Key: "train_cfgs.clip_range_value", Native: "critic.value_clip"},
		{Key: "train_cfgs.max_grad_norm", Native: "optim.max_grad_norm, critic.max_grad_norm"},
		{Key: "train_cfgs.per_device_prompt_batch_size", Native: "rollout.tasks"},
		{Key: "train_cfgs.actor_gradient_checkpointing", Native: "update.gradient_checkpointing"},
		{Key: "train_cfgs.eval_interval", Native: "train.eval_every"},
		{Key: "train_cfgs.bf16", Native: "dtype", Value: boolTo("bfloat16", "")},
		{Key: "train_cfgs.per_device_train_batch_size", Ignore: "the update's mini-batches are update.mini_batches, micro-batches sized by tokens (update.micro_tokens)"},
		{Key: "train_cfgs.gradient_accumulation_steps", Ignore: "micro-batches are sized by tokens (update.micro_tokens); the update is the same"},
		{Key: "train_cfgs.ds_cfgs", Ignore: "DeepSpeed's config file: the ZeRO stage is dist.zero_stage, data parallelism dist.* and --nproc"},
		{Key: "model_cfgs.actor_model_name_or_path", Native: "model"},
		{Key: "model_cfgs.reward_critic_model_name_or_path", Native: "critic_model"},
		{Key: "model_cfgs.temperature", Native: "rollout.temperature"},
		{Key: "model_cfgs.top_p", Native: "rollout.top_p"},
		{Key: "model_cfgs.model_max_length", Native: "rollout.max_len"},
		{Key: "model_cfgs.trust_remote_code", Ignore: "no remote code runs: the architectures are built in"},
		{Key: "data_cfgs.train_datasets", Native: "data.train", Note: "a path or a list (the files' rows in order)"},
		{Key: "data_cfgs.eval_datasets", Native: "data.val", Note: "a path or a list (the files' rows in order)"},
		{Key: "logger_cfgs.output_dir", Native: "run_dir"},
		{Key: "logger_cfgs.log_type", Ignore: "metrics go to RUN/metrics.jsonl and RUN/report.html"},
		{Key: "logger_cfgs.log_project", Ignore: "the run is named by run_dir"},
		{Key: "logger_cfgs.log_run_name", Ignore: "the run is named by run_dir"},
		{Key: "agent_proxy.max_turn", Native: "rollout.max_turns"},
		{Key: "agent_proxy.use_environment", Value: only("the agent always acts in the environment", "true")},
		{Key: "env_cfgs.env_name", Native: "env.name", Value: seedEnvName, Note: "RAGEN's names: FrozenLake → frozenlake, Countdown → countdown"},
		{Key: "env_cfgs.max_episode_length", Native: "env.max_turns"},
	},
}

// mtgrpoFamily is the MT-GRPO scripts' parameters.
var mtgrpoFamily = Family{
	Name:  "MT-GRPO",
	Title: "MT-GRPO scripts",
	Doc: "The MT-GRPO scripts' parameters, as `key=value` arguments or top-level YAML keys. `reward_manager` names " +
		"the task and its rubric; `mtgrpo data gen --task` takes the same names.",
	Keys: []ForeignKey{
		{Key: "max_turns", Native: "rollout.max_turns"},
		{Key: "reward_manager", Native: "env.name", Value: rename("reward manager", MTGRPOTasks),
			Note: "gsm8k_code → gsm8k_python (python tool, math rubric), gsm8k → gsm8k, wiki_search → wiki_qa (search tool), countdown → countdown"},
	},
}

// MTGRPOTasks maps the MT-GRPO scripts' task and reward-manager names onto environments.
var MTGRPOTasks = map[string]string{
	"gsm8k_code": "gsm8k_python", "gsm8k": "gsm8k", "wiki_search": "wiki_qa", "countdown": "countdown",
}

// isExternalReward reports whether a reward_computation section is an external function
// (type command or http) rather than the seed's built-in reward settings.
func isExternalReward(n *yaml.Node) bool {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			t := n.Content[i+1].Value
			return t == "command" || t == "http"
		}
	}
	return false
}

func seedCondenser(n *yaml.Node) (string, error) {
	switch n.Value {
	case "simple":
		return string(rollout.CondenseLastN), nil
	case "none":
		return string(rollout.CondenseFull), nil
	}
	c, err := rollout.ParseCondenser(n.Value)
	return string(c), err
}

func seedRewardType(n *yaml.Node) (string, error) {
	switch n.Value {
	case "grpo", "inverse":
		return "inverse", nil
	case "off", "scaled":
		return n.Value, nil
	}
	return "", fmt.Errorf("unknown reward type %q (want grpo, off, inverse or scaled; command or http for an external function)", n.Value)
}

func seedDomain(n *yaml.Node) (string, error) {
	switch n.Value {
	case "coding":
		return "code", nil
	case "general", "math", "code", "qa", "":
		return n.Value, nil
	}
	return "", fmt.Errorf("unknown domain %q (want general, math, code or qa)", n.Value)
}

func seedFormatValidation(n *yaml.Node) (string, error) {
	var on bool
	if err := n.Decode(&on); err != nil {
		return "", fmt.Errorf("want true or false, got %s", shown(n))
	}
	if !on {
		return "", fmt.Errorf("false is not supported: the built-in rubrics always check the answer format " +
			"(use an external reward function, docs/rewards.md, to score without it)")
	}
	return "", nil
}

func seedEnvName(n *yaml.Node) (string, error) {
	switch n.Value {
	case "FrozenLake", "frozen_lake":
		return "frozenlake", nil
	case "Countdown":
		return "countdown", nil
	}
	return n.Value, nil
}
