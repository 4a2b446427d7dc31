package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/env"
)

// bad is an error about key, placed where the key was set.
func (c *Config) bad(key, format string, a ...any) error {
	return &Error{Where: c.Origin(key), Key: key, Err: fmt.Errorf(format, a...)}
}

// intCheck is one integer key with its least value.
type intCheck struct {
	key      string
	v, least int
}

func (c *Config) atLeast(checks ...intCheck) error {
	for _, k := range checks {
		if k.v < k.least {
			return c.bad(k.key, "%d: must be at least %d", k.v, k.least)
		}
	}
	return nil
}

// Validate checks every value; the error names the key and where it was set. The trainer's own
// checks (grpo.Config.Validate) run last.
func (c *Config) Validate() error {
	checks := []func() error{c.validateRun, c.validateEnv, c.validateData, c.validateRollout,
		c.validateLoop, c.validateExternal}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	g, err := c.Trainer()
	if err != nil {
		return c.bad("rollout.condenser", "%v", err)
	}
	if err := g.Validate(); err != nil {
		return &Error{Where: "config", Err: fmt.Errorf("trainer settings: %w", err)}
	}
	return nil
}

func (c *Config) validateRun() error {
	switch {
	case c.Model == "" && c.Init == nil:
		return c.bad("model", "no model: set model (--model, $MODEL) or an init: section for a random one")
	case c.RunDir == "":
		return c.bad("run_dir", "no run directory (--run-dir, $RUN_DIR)")
	case c.Device == "":
		return c.bad("device", "empty: want cpu, cuda or cuda:N")
	}
	if c.Device != "cpu" && c.Device != "cuda" && !strings.HasPrefix(c.Device, "cuda:") {
		return c.bad("device", "%q: want cpu, cuda or cuda:N", c.Device)
	}
	if c.Init != nil {
		if err := c.Init.Spec().Check(); err != nil {
			return c.bad("init", "%v", err)
		}
	}
	return nil
}

func (c *Config) validateEnv() error {
	e := c.Env
	if e.Name == "" {
		return c.bad("env.name", "empty: want one of %s, or openenv", strings.Join(env.Names(), ", "))
	}
	if e.Name != "openenv" && !slices.Contains(env.Names(), e.Name) {
		return c.bad("env.name", "unknown environment %q (%s, or openenv)", e.Name, strings.Join(env.Names(), ", "))
	}
	switch e.RewardRule {
	case "", env.ContextOff, env.ContextInverse:
	case env.ContextScaled:
		if e.RewardBudget <= 0 {
			return c.bad("env.reward_budget", "%d: the scaled reward rule needs a token budget > 0", e.RewardBudget)
		}
	default:
		return c.bad("env.reward_rule", "%q: want off, inverse or scaled", e.RewardRule)
	}
	if e.ToolTime < 0 {
		return c.bad("env.tool_time", "%v: must be >= 0", e.ToolTime)
	}
	if _, err := c.sandbox(nil); err != nil {
		return c.bad("env.python.require", "%v", strings.TrimPrefix(err.Error(), "env.python.require: "))
	}
	return c.atLeast(intCheck{"env.max_turns", e.MaxTurns, 0}, intCheck{"env.max_tool_calls", e.MaxToolCalls, 0})
}

func (c *Config) validateData() error {
	d := c.Data
	if d.Train == "" {
		if err := c.atLeast(intCheck{"data.train_size", d.TrainSize, 1}); err != nil {
			return err
		}
	}
	if d.Val == "" {
		return c.atLeast(intCheck{"data.val_size", d.ValSize, 1})
	}
	return nil
}

func (c *Config) validateRollout() error {
	r := c.Rollout
	if err := c.atLeast(intCheck{"rollout.tasks", r.Tasks, 1}, intCheck{"rollout.group", r.Group, 1},
		intCheck{"rollout.max_new_tokens", r.MaxNewTokens, 1}, intCheck{"rollout.top_k", r.TopK, 0},
		intCheck{"rollout.max_turns", r.MaxTurns, 0}, intCheck{"rollout.max_context_tokens", r.MaxContextTokens, 0},
		intCheck{"rollout.max_len", r.MaxLen, 0}, intCheck{"rollout.slots", r.Slots, 0}, intCheck{"rollout.workers", r.Workers, 0}); err != nil {
		return err
	}
	if !(r.Temperature >= 0 && r.Temperature <= 100) {
		return c.bad("rollout.temperature", "%v: must be in [0, 100]", r.Temperature)
	}
	if !(r.TopP > 0 && r.TopP <= 1) {
		return c.bad("rollout.top_p", "%v: must be in (0, 1]", r.TopP)
	}
	if !(r.MinP >= 0 && r.MinP < 1) {
		return c.bad("rollout.min_p", "%v: must be in [0, 1)", r.MinP)
	}
	if c.MaxLen() <= r.MaxNewTokens {
		return c.bad("rollout.max_len", "%d tokens per sequence leave no room for a context before %d new tokens", c.MaxLen(), r.MaxNewTokens)
	}
	cc := r.Condenser
	switch {
	case cc.KeepLastN < 0:
		return c.bad("rollout.condenser.keep_last_n", "%d: must be at least 0", cc.KeepLastN)
	case cc.Type == CondenseTokenBudget && cc.MaxTokens <= 0:
		return c.bad("rollout.condenser.max_tokens", "%d: the token_budget condenser needs a budget > 0", cc.MaxTokens)
	case cc.MaxTokens < 0 || cc.SummaryEvery < 0 || cc.SummaryTokens < 0:
		return c.bad("rollout.condenser", "max_tokens %d, summary_every %d and summary_tokens %d must be >= 0",
			cc.MaxTokens, cc.SummaryEvery, cc.SummaryTokens)
	}
	return nil
}

func (c *Config) validateLoop() error {
	s, t, e := c.SFT, c.Train, c.Eval
	if err := c.atLeast(intCheck{"sft.steps", s.Steps, 0}, intCheck{"sft.warmup", s.Warmup, 0}, intCheck{"dist.rollout_ranks", c.Dist.RolloutRanks, 0}, intCheck{"train.steps", t.Steps, 0},
		intCheck{"train.eval_every", t.EvalEvery, 0}, intCheck{"train.checkpoint_every", t.CheckpointEvery, 0},
		intCheck{"train.keep_checkpoints", t.KeepCheckpoints, 0}, intCheck{"train.samples", t.Samples, 0},
		intCheck{"eval.samples", e.Samples, 1}); err != nil {
		return err
	}
	if t.Steps == 0 {
		if err := c.atLeast(intCheck{"train.epochs", t.Epochs, 1}); err != nil {
			return err
		}
	}
	if s.Steps > 0 {
		if err := c.atLeast(intCheck{"sft.batch", s.Batch, 1}, intCheck{"sft.tasks", s.Tasks, 1}); err != nil {
			return err
		}
		if !(s.LR > 0) || math.IsInf(s.LR, 0) {
			return c.bad("sft.lr", "%v: must be a finite number > 0", s.LR)
		}
		if !(s.MinLRRatio >= 0 && s.MinLRRatio <= 1) {
			return c.bad("sft.min_lr_ratio", "%v: must be in [0, 1]", s.MinLRRatio)
		}
	}
	if !(e.Temperature >= 0 && e.Temperature <= 100) {
		return c.bad("eval.temperature", "%v: must be in [0, 100]", e.Temperature)
	}
	if !(e.TopP > 0 && e.TopP <= 1) {
		return c.bad("eval.top_p", "%v: must be in (0, 1]", e.TopP)
	}
	if t.ExportDType != "" && !slices.Contains([]string{"float32", "bfloat16", "float16"}, t.ExportDType) {
		return c.bad("train.export_dtype", "%q: want float32, bfloat16 or float16", t.ExportDType)
	}
	return nil
}

func (c *Config) validateExternal() error {
	err := c.External().Validate(c.Env.Name)
	if err == nil {
		return nil
	}
	var where []string
	for _, k := range []string{"mcp", "openenv", "reward_computation"} {
		if w, ok := c.origin[k]; ok {
			where = append(where, w)
		}
	}
	if len(where) == 0 {
		where = []string{c.Origin("env.name")}
	}
	return &Error{Where: strings.Join(where, ", "), Err: errors.Join(err)}
}
