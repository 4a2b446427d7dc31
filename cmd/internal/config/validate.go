package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo"
)

// bad is an error about key, placed where the key was set.
func (c *Config) bad(key, format string, a ...any) error {
	return &Error{Where: c.Origin(key), Key: key, Err: fmt.Errorf(format, a...)}
}

// Validate checks every value; each error names the key and where it was set, and the errors
// of all sections are reported together. The trainer's own
// checks (grpo.Config.Validate) run last.
func (c *Config) Validate() error {
	checks := []func() error{c.validateRun, c.validateEnv, c.validateData, c.validateRollout,
		c.validateLoop, c.validateExternal, c.validateEffects}
	var errs []error
	for _, check := range checks {
		errs = append(errs, check())
	}
	if err := joinErrors(errs); err != nil {
		return err // the trainer's checks assume the values above are sound
	}
	g, err := c.Trainer()
	if err != nil {
		return c.bad("rollout.condenser", "%v", err)
	}
	if err := g.Validate(); err != nil {
		var ke *grpo.KeyError
		if errors.As(err, &ke) { // the trainer's sections are the configuration's
			return c.bad(ke.Key, "%v", strings.TrimPrefix(ke.Err.Error(), "grpo: "))
		}
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
	p := e.Python
	if err := c.sizes(size{"env.python.memory_mb", int(p.MemoryMB), 0, maxCount},
		size{"env.python.file_mb", int(p.FileMB), 0, maxCount},
		size{"env.python.disk_mb", int(p.DiskMB), 0, maxCount}, size{"env.python.budget_mb", int(p.BudgetMB), 0, maxCount},
		size{"env.reward_budget", e.RewardBudget, 0, maxTokens}); err != nil {
		return err
	}
	if err := c.numbers(number{key: "env.direct_demos", v: e.DirectDemos, lo: 0, hi: 1}); err != nil {
		return err
	}
	return c.sizes(size{"env.max_turns", e.MaxTurns, 0, maxCount}, size{"env.max_tool_calls", e.MaxToolCalls, 0, maxCount})
}

func (c *Config) validateData() error {
	d := c.Data
	if d.Train == "" {
		if err := c.sizes(size{"data.train_size", d.TrainSize, 1, maxCount}); err != nil {
			return err
		}
	}
	if d.Val == "" {
		return c.sizes(size{"data.val_size", d.ValSize, 1, maxCount})
	}
	return nil
}

func (c *Config) validateRollout() error {
	r := c.Rollout
	if err := c.sizes(size{"rollout.tasks", r.Tasks, 1, maxTrajectories}, size{"rollout.group", r.Group, 1, maxTrajectories},
		size{"rollout.max_new_tokens", r.MaxNewTokens, 1, maxTokens}, size{"rollout.top_k", r.TopK, 0, maxTokens},
		size{"rollout.max_turns", r.MaxTurns, 0, maxCount}, size{"rollout.max_context_tokens", r.MaxContextTokens, 0, maxTokens},
		size{"rollout.max_len", r.MaxLen, 0, maxTokens}, size{"rollout.slots", r.Slots, 0, maxTrajectories},
		size{"rollout.workers", r.Workers, 0, maxCount}); err != nil {
		return err
	}
	trajs, ok := product(r.Tasks, r.Group, maxTrajectories)
	if !ok {
		return c.bad("rollout.group", "rollout.tasks %d × rollout.group %d trajectories per step: must be at most %d",
			r.Tasks, r.Group, maxTrajectories)
	}
	if _, ok := product(trajs, c.MaxLen(), maxTokensPerStep); !ok {
		return c.bad("rollout.tasks", "%d trajectories per step × %d tokens each (rollout.max_len): must be at most %d tokens",
			trajs, c.MaxLen(), int64(maxTokensPerStep))
	}
	if _, ok := product(r.Slots, c.MaxLen(), maxTokensPerStep); !ok { // the KV cache's rows
		return c.bad("rollout.slots", "%d sequences decoded at once × %d tokens each (rollout.max_len): must be at most %d tokens",
			r.Slots, c.MaxLen(), int64(maxTokensPerStep))
	}
	if err := c.numbers(number{key: "rollout.temperature", v: r.Temperature, lo: 0, hi: 100},
		number{key: "rollout.top_p", v: r.TopP, lo: 0, hi: 1, loOpen: true},
		number{key: "rollout.min_p", v: r.MinP, lo: 0, hi: 1, hiOpen: true}); err != nil {
		return err
	}
	if c.MaxLen() <= r.MaxNewTokens {
		return c.bad("rollout.max_len", "%d tokens per sequence leave no room for a context before %d new tokens", c.MaxLen(), r.MaxNewTokens)
	}
	cc := r.Condenser
	if cc.Type == CondenseTokenBudget && cc.MaxTokens <= 0 {
		return c.bad("rollout.condenser.max_tokens", "%d: the token_budget condenser needs a budget > 0", cc.MaxTokens)
	}
	return c.sizes(size{"rollout.condenser.keep_last_n", cc.KeepLastN, 0, maxCount},
		size{"rollout.condenser.max_tokens", cc.MaxTokens, 0, maxTokens},
		size{"rollout.condenser.summary_every", cc.SummaryEvery, 0, maxCount},
		size{"rollout.condenser.summary_tokens", cc.SummaryTokens, 0, maxTokens})
}

func (c *Config) validateLoop() error {
	s, t, e := c.SFT, c.Train, c.Eval
	if err := c.sizes(size{"sft.steps", s.Steps, 0, maxCount}, size{"sft.warmup", s.Warmup, 0, maxCount},
		size{"dist.rollout_ranks", c.Dist.RolloutRanks, 0, maxCount}, size{"train.steps", t.Steps, 0, maxCount},
		size{"train.eval_every", t.EvalEvery, 0, maxCount}, size{"train.checkpoint_every", t.CheckpointEvery, 0, maxCount},
		size{"train.keep_checkpoints", t.KeepCheckpoints, 0, maxCount}, size{"train.samples", t.Samples, 0, maxTrajectories},
		size{"eval.samples", e.Samples, 1, maxTrajectories}, size{"train.epochs", t.Epochs, 0, maxCount},
		size{"update.epochs", c.Update.Epochs, 0, maxCount}, size{"update.mini_batches", c.Update.MiniBatches, 0, maxTrajectories},
		size{"update.micro_tokens", c.Update.MicroTokens, 0, maxTokensPerStep}, size{"optim.warmup", c.Optim.Warmup, 0, maxCount},
		size{"critic.warmup", c.Critic.Warmup, 0, maxCount}, size{"dapo.max_gen_batches", c.DAPO.MaxGenBatches, 0, maxCount},
		size{"dapo.overlong_len", c.DAPO.OverlongLen, 0, maxTokens}); err != nil {
		return err
	}
	if _, ok := product(c.Data.ValSize, e.Samples, maxTrajectories); c.Data.Val == "" && !ok {
		return c.bad("eval.samples", "data.val_size %d × eval.samples %d trajectories per evaluation: must be at most %d",
			c.Data.ValSize, e.Samples, maxTrajectories)
	}
	if t.Steps == 0 {
		if err := c.sizes(size{"train.epochs", t.Epochs, 1, maxCount}); err != nil {
			return err
		}
	}
	if s.Steps > 0 {
		if err := c.sizes(size{"sft.batch", s.Batch, 1, maxTrajectories}, size{"sft.tasks", s.Tasks, 1, maxCount}); err != nil {
			return err
		}
		if err := c.numbers(number{key: "sft.lr", v: s.LR, lo: 0, hi: math.Inf(1), loOpen: true, hiOpen: true},
			number{key: "sft.min_lr_ratio", v: s.MinLRRatio, lo: 0, hi: 1},
			number{key: "sft.perfect_first", v: s.PerfectFirst, lo: 0, hi: 1}); err != nil {
			return err
		}
	}
	if err := c.numbers(number{key: "eval.temperature", v: e.Temperature, lo: 0, hi: 100},
		number{key: "eval.top_p", v: e.TopP, lo: 0, hi: 1, loOpen: true}); err != nil {
		return err
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
