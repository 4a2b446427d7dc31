package config

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// The value translations of the foreign tables. Each returns the native value as YAML text, or
// "" to set nothing.

// unsetIf sets nothing for the values that mean "unset" in the foreign project (verl's -1 and
// null), the value itself otherwise.
func unsetIf(unset ...string) func(*yaml.Node) (string, error) {
	return func(n *yaml.Node) (string, error) {
		if n.Kind != yaml.ScalarNode {
			return "", fmt.Errorf("want a single value, got %s", kindName(n))
		}
		if n.Tag == "!!null" || slices.Contains(unset, n.Value) {
			return "", nil
		}
		return n.Value, nil
	}
}

// only accepts the values that mean what this program does anyway (setting nothing) and refuses
// every other one with why.
func only(why string, ok ...string) func(*yaml.Node) (string, error) {
	return func(n *yaml.Node) (string, error) {
		v := strings.ToLower(n.Value)
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || slices.Contains(ok, v) || sameNumber(v, ok)) {
			return "", nil
		}
		return "", fmt.Errorf("%s: %s (accepted: %s)", shown(n), why, strings.Join(ok, ", "))
	}
}

// boolTo translates true and false ("" sets nothing).
func boolTo(onTrue, onFalse string) func(*yaml.Node) (string, error) {
	return func(n *yaml.Node) (string, error) {
		var b bool
		if err := n.Decode(&b); err != nil {
			return "", fmt.Errorf("want true or false, got %s", shown(n))
		}
		if b {
			return onTrue, nil
		}
		return onFalse, nil
	}
}

// rename translates names through m (values not in m are refused, listing m's keys).
func rename(what string, m map[string]string) func(*yaml.Node) (string, error) {
	return func(n *yaml.Node) (string, error) {
		if v, ok := m[n.Value]; ok {
			return v, nil
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "", fmt.Errorf("unknown %s %s (want %s)", what, shown(n), strings.Join(keys, ", "))
	}
}

// wholeNumber reads a count written as a float (TRL's num_train_epochs: 3.0), by the rule of
// every integer key (wholeInt).
func wholeNumber(n *yaml.Node) (string, error) {
	i, err := wholeInt(n)
	if err != nil || i < 0 || i > setting.MaxCount {
		return "", fmt.Errorf("want a whole number of epochs, got %s (fractions of an epoch: set train.steps)", shown(n))
	}
	return strconv.FormatInt(i, 10), nil
}

// negate translates a boolean into its opposite (verl's do_sample → eval.greedy).
func negate(n *yaml.Node) (string, error) {
	return boolTo("false", "true")(n)
}

// positive checks an integer >= 1 (wholeInt: 8.0 is 8, 1.9 an error), for Derived keys, and
// gives it as digits.
func positive(n *yaml.Node) (string, error) {
	v, err := wholeInt(n)
	if err != nil || v < 1 || v > setting.MaxTrajectories {
		return "", fmt.Errorf("want an integer from 1 to %d, got %s", setting.MaxTrajectories, shown(n))
	}
	return strconv.FormatInt(v, 10), nil
}

// anyNumber checks a finite number >= 0, for Derived keys.
func anyNumber(n *yaml.Node) (string, error) {
	var v float64
	if err := n.Decode(&v); err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return "", fmt.Errorf("want a number >= 0, got %s", shown(n))
	}
	return n.Value, nil
}

// truth checks a boolean, for Derived keys.
func truth(n *yaml.Node) (string, error) {
	return boolTo("true", "false")(n)
}

// count checks an integer >= 0, for Derived keys.
func count(n *yaml.Node) (string, error) {
	var v int
	if err := n.Decode(&v); err != nil || v < 0 || v > setting.MaxTokens {
		return "", fmt.Errorf("want an integer from 0 to %d, got %s", setting.MaxTokens, shown(n))
	}
	return n.Value, nil
}

// dtypeName translates a dtype as the other projects write it (torch_dtype, bf16).
func dtypeName(n *yaml.Node) (string, error) {
	switch strings.ToLower(n.Value) {
	case "bfloat16", "bf16":
		return "bfloat16", nil
	case "float16", "fp16", "half":
		return "float16", nil
	case "float32", "fp32", "float":
		return "float32", nil
	case "auto", "":
		return "", nil // the checkpoint's own dtype, as here by default
	}
	return "", fmt.Errorf("unknown dtype %s (want bfloat16, float16, float32 or auto)", shown(n))
}

// verlLossMode translates policy_loss.loss_mode: the losses this trainer has, the others refused
// by name.
func verlLossMode(n *yaml.Node) (string, error) {
	switch n.Value {
	case "vanilla", "gspo", "cispo":
		return n.Value, nil
	}
	return "", fmt.Errorf("loss_mode %s is not implemented here: the policy losses are vanilla (PPO's clip), gspo and cispo (loss.policy)", shown(n))
}

// filterMetric checks filter_groups.metric: every metric of verl's compares the trajectories'
// rewards here.
func filterMetric(n *yaml.Node) (string, error) {
	switch n.Value {
	case "acc", "score", "seq_reward", "seq_final_reward", "":
		return "", nil
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return "", fmt.Errorf("unknown metric %s (want acc, score, seq_reward or seq_final_reward: groups are compared by their trajectories' rewards)", shown(n))
}

// genBatches translates max_num_gen_batches: verl's 0 or less (no limit) is the largest count.
func genBatches(n *yaml.Node) (string, error) {
	var v int
	if err := n.Decode(&v); err != nil {
		return "", fmt.Errorf("want an integer, got %s", shown(n))
	}
	if v <= 0 {
		return strconv.Itoa(setting.MaxCount), nil
	}
	return n.Value, nil
}

// rolloutIS checks rollout_correction.rollout_is: token or sequence (null sets nothing).
func rolloutIS(n *yaml.Node) (string, error) {
	switch {
	case n.Tag == "!!null" || n.Value == "null" || n.Value == "":
		return "", nil
	case n.Value == "token" || n.Value == "sequence":
		return n.Value, nil
	}
	return "", fmt.Errorf("unknown IS level %s (want token, sequence or null)", shown(n))
}

// rolloutRS checks rollout_correction.rollout_rs: rejection by the token's or the sequence's
// ratio (null sets nothing); the divergence and mean modes are refused by name.
func rolloutRS(n *yaml.Node) (string, error) {
	switch n.Value {
	case "token", "token_k1":
		return "token", nil
	case "sequence", "seq_sum_k1":
		return "sequence", nil
	case "", "null":
		return "", nil
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return "", fmt.Errorf("rejection mode %s is not implemented here: loss.is masks by the token's ratio (token, token_k1) or the sequence's (sequence, seq_sum_k1)", shown(n))
}

// trlLossType checks TRL's loss_type: the aggregations and CISPO this trainer has, the others
// refused by name.
func trlLossType(n *yaml.Node) (string, error) {
	switch n.Value {
	case "grpo", "bnpo", "dapo", "dr_grpo", "cispo":
		return n.Value, nil
	case "sapo", "luspo", "vespo":
		return "", fmt.Errorf("loss_type %s is not implemented here: the losses are grpo, bnpo, dapo and dr_grpo (PPO's clip, aggregated as each says) "+
			"and cispo; importance_sampling_level sequence is GSPO", shown(n))
	}
	return "", fmt.Errorf("unknown loss type %s (want grpo, bnpo, dapo, dr_grpo or cispo)", shown(n))
}

// plusOne translates a count of tool-calling rounds into turns (the rounds and the answer).
func plusOne(n *yaml.Node) (string, error) {
	if n.Tag == "!!null" {
		return "", nil
	}
	var v int
	if err := n.Decode(&v); err != nil || v < 0 || v >= setting.MaxCount {
		return "", fmt.Errorf("want an integer >= 0, got %s", shown(n))
	}
	return strconv.Itoa(v + 1), nil
}

// seconds translates a timeout in seconds into a duration (TrainingArguments' ddp_timeout).
func seconds(n *yaml.Node) (string, error) {
	var v int
	if err := n.Decode(&v); err != nil || v < 0 {
		return "", fmt.Errorf("want seconds, an integer >= 0, got %s", shown(n))
	}
	return strconv.Itoa(v) + "s", nil
}

// sameNumber reports whether v is a number equal to one of ok's (0. is 0, as verl's scripts write it).
func sameNumber(v string, ok []string) bool {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return false
	}
	for _, o := range ok {
		if y, err := strconv.ParseFloat(o, 64); err == nil && x == y {
			return true
		}
	}
	return false
}
