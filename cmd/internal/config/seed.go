package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// SeedKey is a key of the seed projects' configs (verl's multi-turn GRPO trainer, MT-GRPO,
// RAGEN's multi-turn PPO) and the native key it sets. Value, when set, translates the seed's
// value into the native one.
type SeedKey struct {
	Seed, Native string
	Value        func(n *yaml.Node) (string, error)
	// Note explains a translation, for docs/config.md.
	Note string
}

// SeedKeys is the whole translation: docs/config.md's table is generated from it (a test keeps
// them equal).
var SeedKeys = []SeedKey{
	{Seed: "algorithm.adv_estimator", Native: "advantage.estimator"},
	{Seed: "algorithm.norm_adv_by_std_in_grpo", Native: "advantage.norm_std"},
	{Seed: "algorithm.gamma", Native: "advantage.gamma"},
	{Seed: "algorithm.lam", Native: "advantage.lambda"},
	{Seed: "algorithm.multiturn_grpo.n_trajectories_per_question", Native: "rollout.group"},
	{Seed: "algorithm.multiturn_grpo.max_turns_per_trajectory", Native: "rollout.max_turns"},
	{Seed: "algorithm.multiturn_grpo.max_context_length", Native: "rollout.max_context_tokens"},
	{Seed: "norm_adv_by_std_in_grpo", Native: "advantage.norm_std"},
	{Seed: "advantage_epsilon", Native: "advantage.eps"},
	{Seed: "turn_advantage_coef", Native: "advantage.turn_coef"},
	{Seed: "multiturn_trajectory.context_condenser.type", Native: "rollout.condenser.type", Value: seedCondenser,
		Note: "simple → last_n; also full, last_n, token_budget, summary"},
	{Seed: "multiturn_trajectory.context_condenser.keep_last_n_steps", Native: "rollout.condenser.keep_last_n"},
	{Seed: "multiturn_trajectory.context_condenser.max_condensed_tokens", Native: "rollout.condenser.max_tokens"},
	{Seed: "multiturn_trajectory.generation.max_sequence_length", Native: "rollout.max_len",
		Note: "KV-cache length of one sequence: context and output"},
	{Seed: "multiturn_trajectory.generation.batch_size", Native: "rollout.slots",
		Note: "sequences decoded at once"},
	{Seed: "reward_computation.type", Native: "env.reward_rule", Value: seedRewardType,
		Note: "grpo → inverse (R = 1/max_t|c_t| when format and answer are right); also off, inverse, scaled. " +
			"type command or http makes the section an external reward function (docs/rewards.md)"},
	{Seed: "reward_computation.domain", Native: "env.domain", Value: seedDomain, Note: "coding → code"},
	{Seed: "reward_computation.ground_truth_file", Native: "data.ground_truth_file"},
	{Seed: "reward_computation.format_validation", Native: "", Value: seedFormatValidation,
		Note: "true only: the built-in rubrics always gate the reward on the answer format"},
	{Seed: "trajectory_profiling.enable", Native: "profiling.enable"},
	{Seed: "trajectory_profiling.profile_reward_computation", Native: "profiling.rewards"},
	{Seed: "trajectory_profiling.profile_context_condensation", Native: "profiling.condensation"},
	{Seed: "train_cfgs.multi_turn", Native: "rollout.max_turns", Value: seedMultiTurn,
		Note: "false → one action turn per episode; true keeps the environment's turns"},
	{Seed: "train_cfgs.bi_level_gae", Native: "advantage.bi_level"},
	{Seed: "train_cfgs.high_level_gamma", Native: "advantage.turn_gamma"},
	{Seed: "train_cfgs.max_turn", Native: "rollout.max_turns"},
	{Seed: "train_cfgs.gamma", Native: "advantage.gamma"},
	{Seed: "train_cfgs.gae_lambda", Native: "advantage.lambda"},
	{Seed: "agent_proxy.max_turn", Native: "rollout.max_turns"},
	{Seed: "env_cfgs.env_name", Native: "env.name", Value: seedEnvName, Note: "RAGEN's names: FrozenLake → frozenlake, Countdown → countdown"},
	{Seed: "env_cfgs.max_episode_length", Native: "env.max_turns"},
}

// seedTops are the top-level keys that only the seed layout has.
func isSeedKey(top string) bool {
	for _, k := range SeedKeys {
		if k.Seed == top || strings.HasPrefix(k.Seed, top+".") {
			return true
		}
	}
	return false
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

// seed applies a seed-layout key (a section or a leaf).
func (d *decoder) seed(path string, k, v *yaml.Node) error {
	v = deref(v)
	for _, sk := range SeedKeys {
		if sk.Seed == path {
			return d.seedLeaf(sk, k, v)
		}
	}
	if v.Kind != yaml.MappingNode {
		return d.fail(k, path, "want a mapping of %s, got %s", strings.Join(seedChildren(path), ", "), kindName(v))
	}
	return d.pairs(v, path, func(sub string, kn, vn *yaml.Node) error {
		if !isSeedKey(sub) {
			msg := fmt.Sprintf("unknown key %s (seed keys under %s: %s)", sub, path, strings.Join(seedChildren(path), ", "))
			if path == "reward_computation" {
				msg += "; an external reward function needs type: command or type: http"
			}
			return d.fail(kn, "", "%s", msg)
		}
		return d.seed(sub, kn, vn)
	})
}

// seedLeaf decodes a seed key's value into its native key, translating the value if needed.
func (d *decoder) seedLeaf(sk SeedKey, k, v *yaml.Node) error {
	n := v
	if sk.Value != nil {
		val, err := sk.Value(v)
		if err != nil {
			return d.fail(v, sk.Seed, "%v", err)
		}
		if sk.Native == "" {
			return nil // checked, sets nothing
		}
		n = &yaml.Node{Kind: yaml.ScalarNode, Value: val, Line: v.Line, Column: v.Column} // tag resolved from the value
		if val == "" {
			return nil
		}
	}
	f, err := fieldAt(reflect.ValueOf(d.c).Elem(), sk.Native)
	if err != nil {
		return d.fail(k, sk.Seed, "%v", err)
	}
	if err := d.value(n, f, sk.Native); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Key = sk.Seed + " (" + sk.Native + ")"
		}
		return err
	}
	return nil
}

// seedChildren lists the seed keys directly under path.
func seedChildren(path string) []string {
	set := map[string]bool{}
	for _, k := range SeedKeys {
		if rest, ok := strings.CutPrefix(k.Seed, path+"."); ok {
			set[strings.Split(rest, ".")[0]] = true
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func seedCondenser(n *yaml.Node) (string, error) {
	switch n.Value {
	case "simple":
		return string(CondenseLastN), nil
	case "none":
		return string(CondenseFull), nil
	}
	c, err := parseCondenser(n.Value)
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

func seedMultiTurn(n *yaml.Node) (string, error) {
	var on bool
	if err := n.Decode(&on); err != nil {
		return "", fmt.Errorf("want true or false, got %s", shown(n))
	}
	if on {
		return "", nil // the environment's own turns
	}
	return "1", nil
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
