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
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || slices.Contains(ok, v)) {
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
