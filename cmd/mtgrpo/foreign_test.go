package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
)

// The command line takes the other projects' forms: verl's --config-path/--config-name and
// +key=value, align-anything's --section.key VALUE, bare key=value; each setting names its flag.
func TestForeignCommandLine(t *testing.T) {
	dir := t.TempDir()
	base := "actor_rollout_ref:\n  rollout:\n    n: 3\n"
	top := "hydra:\n  searchpath: [file://verl/trainer/config]\ndefaults:\n  - ppo_trainer\n  - base\n  - _self_\ndata:\n  train_batch_size: 6\n"
	os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(base), 0o644)
	os.WriteFile(filepath.Join(dir, "ppo_multiturn.yaml"), []byte(top), 0o644)
	c := resolveTrainArgs(t, "--config-path", dir, "--config-name=ppo_multiturn", "--model", "m",
		"--train_cfgs.multi_turn", "false", "--actor_rollout_ref.rollout.temperature=0.5",
		"+trainer.total_epochs=2", `data.train_files=['a.parquet']`, "--critic_lr", "3e-5", "--learning_rate", "2e-6", "--bf16", "max_turns=4",
		"--use_peft", "--lora_target_modules", "q_proj", "up_proj", "--lora_r", "8")
	if c.Rollout.GroupSize != 3 || c.Rollout.Tasks != 6 || c.Rollout.MaxTurns != 4 || c.Rollout.Sampling.Temperature != 0.5 ||
		c.Train.Epochs != 2 || c.Data.Train.String() != "a.parquet" || c.Model != "m" || c.Critic.LR != 3e-5 ||
		c.Optim.LR != 2e-6 || c.DType != "bfloat16" {
		t.Errorf("group %d tasks %d turns %d temperature %v epochs %d train %q model %q", c.Rollout.GroupSize, c.Rollout.Tasks,
			c.Rollout.MaxTurns, c.Rollout.Sampling.Temperature, c.Train.Epochs, c.Data.Train, c.Model)
	}
	// TRL's nargs="+" list and a switch given alone.
	if l := c.PolicyLoRA(); l == nil || l.Rank != 8 || strings.Join(l.TargetModules, ",") != "q_proj,up_proj" {
		t.Errorf("lora %+v", l)
	}
	if got := c.Origin("optim.lr"); got != "--learning_rate" {
		t.Errorf("origin %q", got)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "hydra (verl) has no effect here") {
		t.Errorf("warnings %q", w)
	}
}

// Bad keys from a file and the command line are one usage error: exit status 2, every key named
// with its origin.
func TestBadKeysExitTwo(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(f, []byte("trainer:\n  total_epoch: 2\nlearning_rat: 1\n"), 0o644)
	code, stderr := runChild(t, time.Minute, "train", "--print-config", "--model", "m", "--config", f,
		"actor_rollout_ref.actor.optim.lrr=1", "--train_cfgs.bogus", "1")
	for _, want := range []string{"4 configuration errors", f + ":2: unknown key trainer.total_epoch", f + ":3: unknown key learning_rat",
		"did you mean learning_rate", "argument: unknown key actor_rollout_ref.actor.optim.lrr", "--train_cfgs.bogus: unknown key train_cfgs.bogus"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

// OpenRLHF's flags as its scripts write them: two-valued flags, switches given alone, a negative
// value, and --gamma as OpenRLHF's discount (not align-anything's PPO).
func TestOpenRLHFCommandLine(t *testing.T) {
	c := resolveTrainArgs(t, "--pretrain", "m", "--gamma", "0.99", "--use_kl_loss", "--kl_estimator", "k3",
		"--advantage_estimator", "group_norm", "--dynamic_filtering", "--dynamic_filtering_reward_range", "0", "1",
		"--eps_clip_low_high", "0.2", "0.3", "--save_steps", "-1", "--bf16", "--n_samples_per_prompt", "8", "--rollout_batch_size", "16")
	if c.Model != "m" || c.Advantage.Estimator != "grpo" || c.Advantage.GAE.Gamma != 0.99 || !c.DAPO.DynamicSampling || c.Loss.ClipLow != 0.2 ||
		c.Loss.ClipHigh != 0.3 || c.Train.CheckpointEvery != 0 || c.DType != "bfloat16" || c.Loss.KLKind != "k3" || c.Rollout.Tasks != 16 {
		t.Errorf("model %q estimator %s gamma %v dynamic %v clip %v/%v checkpoints %d dtype %s kl %s tasks %d", c.Model, c.Advantage.Estimator,
			c.Advantage.GAE.Gamma, c.DAPO.DynamicSampling, c.Loss.ClipLow, c.Loss.ClipHigh, c.Train.CheckpointEvery, c.DType, c.Loss.KLKind, c.Rollout.Tasks)
	}
}

// resolveTrainArgs resolves `mtgrpo train ARGS` as the command does, with no environment
// variable set.
func resolveTrainArgs(t *testing.T, args ...string) *config.Config {
	t.Helper()
	rf := newRunFlags(trainCommand.flags(), commonKeys)
	if err := rf.parse(trainCommand, args); err != nil {
		t.Fatal(err)
	}
	src, err := rf.sources("train")
	if err != nil {
		t.Fatal(err)
	}
	src.LookupEnv = func(string) (string, bool) { return "", false }
	c, err := config.Resolve(src)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
