package config

import (
	"testing"
)

// Every number from outside is checked where it is read (finite) and in Validate (in range; sizes
// bounded, products checked for overflow): the error names the key and where it was given, never
// a field of a Go struct, and nothing is allocated from a size first.
func TestNumbersFiniteAndBounded(t *testing.T) {
	set := func(kv ...string) []Override {
		out := append([]Override{}, withModel...)
		for i := 0; i < len(kv); i += 2 {
			out = append(out, Override{Key: kv[i], Value: kv[i+1], Where: "--set"})
		}
		return out
	}
	for _, c := range []struct {
		over []Override
		want string
	}{
		// NaN and infinities, which checks written as !(x >= 0) or x < 0 || x > 1 let through.
		{set("optim.eps", ".inf"), "--set: optim.eps: +Inf: want a finite number"},
		{set("optim.weight_decay", ".inf"), "--set: optim.weight_decay: +Inf: want a finite number"},
		{set("critic.lr", ".inf"), "--set: critic.lr: +Inf: want a finite number"},
		{set("critic.value_clip", ".inf"), "--set: critic.value_clip: +Inf: want a finite number"},
		{set("env.direct_demos", ".nan"), "--set: env.direct_demos: NaN: want a finite number"},
		{set("loss.clip_high", ".nan"), "--set: loss.clip_high: NaN: want a finite number"},
		{set("advantage.gamma", ".nan"), "--set: advantage.gamma: NaN: want a finite number"},
		{set("advantage.turn_coef", "-.inf"), "--set: advantage.turn_coef: -Inf: want a finite number"},
		{set("dapo.overlong_factor", ".nan"), "--set: dapo.overlong_factor: NaN: want a finite number"},
		{set("loss.is_max", ".inf"), "--set: loss.is_max: +Inf: want a finite number"},
		{set("env.direct_demos", "1.5"), "--set: env.direct_demos: 1.5: must be in [0, 1]"},
		{set("sft.steps", "10", "sft.perfect_first", "1.5"), "--set: sft.perfect_first: 1.5: must be in [0, 1]"},
		// The trainer's own checks name the key and its place too.
		{set("loss.clip_high", "-1"), "--set: loss.clip_high: -1: must be a finite number >= 0"},
		{set("advantage.estimator", "gae", "advantage.gamma", "1.5"), "--set: advantage.gamma: 1.5: must be in [0, 1]"},
		{set("optim.eps", "0"), "--set: optim.eps: 0: must be a finite number > 0"},
		{set("loss.is", "sequence_mask", "loss.is_max", "0"), "--set: loss.is_max: 0: must be a finite number > 0"},
		// The warm-up's demonstrators write no summaries.
		{set("sft.steps", "10", "rollout.condenser.type", "summary"), "--set: rollout.condenser.type: summary: the warm-up's " +
			"demonstrators write no summaries; use last_n, token_budget or the full history with sft.steps > 0"},
		// Sizes: bounded, and tasks × group checked before it overflows.
		{set("rollout.tasks", "100000000000"), "--set: rollout.tasks: 100000000000: must be at most 1048576"},
		{set("rollout.tasks", "1048576", "rollout.group", "4"),
			"--set: rollout.group: rollout.tasks 1048576 × rollout.group 4 trajectories per step: must be at most 1048576"},
		{set("rollout.tasks", "4611686018427387905", "rollout.group", "4"), "--set: rollout.tasks: 4611686018427387905: must be at most 1048576"},
		{set("rollout.tasks", "65536", "rollout.group", "16", "rollout.max_len", "16777216"),
			"--set: rollout.tasks: 1048576 trajectories per step × 16777216 tokens each (rollout.max_len): must be at most 68719476736 tokens"},
		{set("rollout.slots", "1048576", "rollout.max_len", "16777216"),
			"--set: rollout.slots: 1048576 sequences decoded at once × 16777216 tokens each (rollout.max_len): must be at most 68719476736 tokens"},
		{set("data.val_size", "65536", "eval.samples", "64"),
			"--set: eval.samples: data.val_size 65536 × eval.samples 64 trajectories per evaluation: must be at most 1048576"},
		{set("data.train_size", "1000000000"), "--set: data.train_size: 1000000000: must be at most 16777216"},
		{set("env.python.memory_mb", "9223372036854775807"), "--set: env.python.memory_mb: 9223372036854775807: must be at most 16777216"},
	} {
		_, err := Resolve(Sources{LookupEnv: noEnv, Overrides: c.over})
		if err == nil || err.Error() != c.want {
			t.Errorf("%v:\n got %v\nwant %s", c.over[1:], err, c.want)
		}
	}
	// Through a seed project's key and an environment variable alike.
	_, err := Resolve(Sources{LookupEnv: noEnv, Overrides: set("algorithm.gamma", ".nan")})
	if want := "--set: algorithm.gamma (advantage.gamma): NaN: want a finite number"; err == nil || err.Error() != want {
		t.Errorf("seed key: %v, want %s", err, want)
	}
	_, err = Resolve(Sources{LookupEnv: envOf(map[string]string{"LR": ".inf"}), Overrides: withModel})
	if want := "$LR: optim.lr: +Inf: want a finite number"; err == nil || err.Error() != want {
		t.Errorf("variable: %v, want %s", err, want)
	}
	// In a file, the place is the file and line.
	f := writeYAML(t, "optim:\n  lr: 1e-6\n  eps: .inf\n")
	_, err = Resolve(Sources{Files: []string{f}, LookupEnv: noEnv, Overrides: withModel})
	if want := f + ":3: optim.eps: +Inf: want a finite number"; err == nil || err.Error() != want {
		t.Errorf("file: %v, want %s", err, want)
	}
}

// A configuration file is read under a cap (/dev/zero is refused, not read without end) and holds
// one YAML document: a second one after "---" is refused with its line, not ignored.
func TestConfigFileBoundedAndOneDocument(t *testing.T) {
	_, err := Resolve(Sources{Files: []string{"/dev/zero"}, LookupEnv: noEnv, Overrides: withModel})
	if want := "/dev/zero: too large: over 16777216 bytes"; err == nil || err.Error() != want {
		t.Errorf("/dev/zero: %v, want %s", err, want)
	}
	f := writeYAML(t, "rollout:\n  tasks: 2\n---\nrollout:\n  tasks: 3\n")
	_, err = Resolve(Sources{Files: []string{f}, LookupEnv: noEnv, Overrides: withModel})
	want := f + `:4: a second YAML document (after "---"): a configuration file holds one document; merge them or give a second --config file`
	if err == nil || err.Error() != want {
		t.Errorf("two documents: %v\nwant %s", err, want)
	}
	// A leading "---" and a final "..." are one document.
	f = writeYAML(t, "---\nrollout:\n  tasks: 2\n...\n")
	if c, err := Resolve(Sources{Files: []string{f}, LookupEnv: noEnv, Overrides: withModel}); err != nil || c.Rollout.Tasks != 2 {
		t.Errorf("one document with markers: %v", err)
	}
}
