package config

import (
	"os"
	"path/filepath"
	"strings"
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

// An integer key takes an integer, or a number with no fractional part (2.0 is 2, 1e2 is 100),
// from every source alike — a file, KEY=VALUE, an environment variable, a foreign key — and
// refuses a fraction by name instead of truncating it (rollout.group 1.9 would be 1, and every
// GRPO advantage 0; train.steps 0.5 would be 0, "run by epochs").
func TestIntegerKeysRefuseFractions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("rollout:\n  group: 1.9\n"), 0o644)
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	for _, c := range []struct {
		src  Sources
		want string
	}{
		{Sources{Files: []string{file}}, file + ":2: rollout.group: want an integer, got \"1.9\": a fraction is not rounded (write 1 or 2)"},
		{Sources{Overrides: []Override{{Key: "rollout.group", Value: "1.9", Where: "--set"}}}, "--set: rollout.group: want an integer, got \"1.9\""},
		{Sources{Overrides: []Override{{Key: "train.steps", Value: "0.5", Where: "argument"}}}, "argument: train.steps: want an integer, got \"0.5\""},
		{Sources{Overrides: []Override{{Key: "dist.zero_stage", Value: "2.5", Where: "--set"}}}, "--set: dist.zero_stage: want an integer, got \"2.5\""},
		{Sources{LookupEnv: env(map[string]string{"STEPS": "0.5"})}, "$STEPS: train.steps: want an integer, got \"0.5\""},
		{Sources{LookupEnv: env(map[string]string{"BATCH_SIZE": "1e30"})}, "$BATCH_SIZE: rollout.tasks: \"1e30\": out of the integer range"},
		// Foreign keys: verl's rollout n and its mini-batch (a Derived key, divided later).
		{Sources{Overrides: []Override{{Key: "actor_rollout_ref.rollout.n", Value: "4.5", Where: "argument"}}}, "actor_rollout_ref.rollout.n (rollout.group): want an integer, got \"4.5\""},
		{Sources{Overrides: []Override{{Key: "actor_rollout_ref.actor.ppo_mini_batch_size", Value: "0.5", Where: "argument"}}},
			"argument: actor_rollout_ref.actor.ppo_mini_batch_size: want an integer from 1 to 1048576, got \"0.5\""},
	} {
		c.src.Overrides = append(append([]Override{}, withModel...), c.src.Overrides...)
		if c.src.LookupEnv == nil {
			c.src.LookupEnv = noEnv
		}
		if _, err := Resolve(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v\nwant %s", err, c.want)
		}
	}
	// A whole number written as a float is that integer, wherever it comes from.
	os.WriteFile(file, []byte("rollout:\n  group: 2.0\n"), 0o644)
	cfg, err := Resolve(Sources{Files: []string{file}, LookupEnv: env(map[string]string{"STEPS": "1e2"}),
		Overrides: append(append([]Override{}, withModel...), Override{Key: "actor_rollout_ref.actor.ppo_epochs", Value: "3.0", Where: "argument"},
			Override{Key: "data.train_batch_size", Value: "8.0", Where: "argument"}, Override{Key: "actor_rollout_ref.actor.ppo_mini_batch_size", Value: "4.0", Where: "argument"})})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rollout.GroupSize != 2 || cfg.Train.Steps != 100 || cfg.Update.Epochs != 3 || cfg.Rollout.Tasks != 8 || cfg.Update.MiniBatches != 2 {
		t.Errorf("group %d steps %d epochs %d tasks %d mini-batches %d; want 2, 100, 3, 8, 2", cfg.Rollout.GroupSize, cfg.Train.Steps,
			cfg.Update.Epochs, cfg.Rollout.Tasks, cfg.Update.MiniBatches)
	}
}
