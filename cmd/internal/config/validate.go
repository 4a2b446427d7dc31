package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/modelinit"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// noLeast is the lower bound of a size whose owner (the trainer, the environment) checks it.
const noLeast = math.MinInt

// bad is an error about key, placed where the key was set.
func (c *Config) bad(key, format string, a ...any) error {
	return &Error{Where: c.Origin(key), Key: key, Err: fmt.Errorf(format, a...)}
}

// Validate checks every value; each error names the key and where it was set, and the errors
// of all sections are reported together. The program checks its own keys and bounds every size;
// the environment's and the trainer's sections are checked by their owners (env.Config.Validate
// in validateEnv, grpo.Config.Validate last), whose errors name the key this places.
func (c *Config) Validate() error {
	checks := []func() error{c.validateRun, c.validateEnv, c.validateData, c.validateRollout,
		c.validateLoop, c.validateDist, c.validateExternal, c.validateEffects}
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
	err = g.Validate()
	if err == nil && c.SFT.Steps > 0 {
		err = grpo.CheckDemonstrable(g.Rollout)
	}
	if err != nil {
		var ke *grpo.KeyError
		if errors.As(err, &ke) { // the trainer's sections are the configuration's
			return c.bad(ke.Key, "%v", strings.TrimPrefix(ke.Err.Error(), "grpo: "))
		}
		return &Error{Where: "config", Err: fmt.Errorf("trainer settings: %w", err)}
	}
	return nil
}

// validateEnvConfig runs the environment's own checks and places the key they name.
func (c *Config) validateEnvConfig() error {
	err := c.Env.Config.Validate()
	if err == nil && c.Env.Agent != nil {
		err = c.Env.Agent.Validate()
	}
	var ke *env.KeyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ke):
		return c.bad("env."+ke.Key, "%v", ke.Err)
	default:
		return c.bad("env", "%v", err)
	}
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
	if c.DType != "" && c.DType != "auto" {
		if _, err := model.ParseDType(c.DType); err != nil {
			return c.bad("dtype", "%v", err)
		}
	}
	if c.Init != nil {
		var fe *modelinit.FieldError
		switch err := c.Init.Spec().Check(); {
		case errors.As(err, &fe):
			return c.bad("init."+fe.Field, "%v", fe.Err)
		case err != nil:
			return &Error{Where: c.initOrigin(), Key: "init", Err: err}
		}
	}
	return nil
}

// initOrigin is where the init: section's settings were given: the origins of its keys, in the
// order of its fields, once each.
func (c *Config) initOrigin() string {
	var where []string
	for _, k := range tagsOf(reflect.TypeOf(InitConfig{})) {
		if w, ok := c.origin["init."+k]; ok && !slices.Contains(where, w) {
			where = append(where, w)
		}
	}
	if len(where) == 0 {
		return c.Origin("init")
	}
	return strings.Join(where, ", ")
}

func (c *Config) validateEnv() error {
	e := c.Env
	if e.Name == "" {
		return c.bad("env.name", "empty: want one of %s, or openenv", strings.Join(env.Names(), ", "))
	}
	if e.Name != "openenv" && !slices.Contains(env.Names(), e.Name) {
		return c.bad("env.name", "unknown environment %q (%s, or openenv)", e.Name, strings.Join(env.Names(), ", "))
	}
	if err := c.validateEnvConfig(); err != nil {
		return err
	}
	if _, err := c.sandbox(nil); err != nil {
		return c.bad("env.python.require", "%v", strings.TrimPrefix(err.Error(), "env.python.require: "))
	}
	p := e.Python
	if err := c.sizes(size{"env.python.memory_mb", int(p.MemoryMB), 0, maxCount},
		size{"env.python.file_mb", int(p.FileMB), 0, maxCount},
		size{"env.python.disk_mb", int(p.DiskMB), 0, maxCount}, size{"env.python.budget_mb", int(p.BudgetMB), 0, maxCount},
		size{"env.reward_budget", e.Budget, noLeast, maxTokens}); err != nil {
		return err
	}
	return c.sizes(size{"env.max_turns", e.MaxTurns, noLeast, maxCount}, size{"env.max_tool_calls", e.MaxToolCalls, noLeast, maxCount})
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
	if err := c.sizes(size{"rollout.tasks", r.Tasks, 1, maxTrajectories}, size{"rollout.group", r.GroupSize, 1, maxTrajectories},
		size{"rollout.max_new_tokens", r.Sampling.MaxNewTokens, 1, maxTokens}, size{"rollout.top_k", r.Sampling.TopK, 0, maxTokens},
		size{"rollout.max_turns", r.MaxTurns, 0, maxCount}, size{"rollout.max_context_tokens", r.MaxContextTokens, 0, maxTokens},
		size{"rollout.max_len", r.MaxLen, 0, maxTokens}, size{"rollout.slots", r.Slots, 0, maxTrajectories},
		size{"rollout.workers", r.Workers, 0, maxCount}); err != nil {
		return err
	}
	trajs, ok := product(r.Tasks, r.GroupSize, maxTrajectories)
	if !ok {
		return c.bad("rollout.group", "rollout.tasks %d × rollout.group %d trajectories per step: must be at most %d",
			r.Tasks, r.GroupSize, maxTrajectories)
	}
	if _, ok := product(trajs, c.MaxLen(), maxTokensPerStep); !ok {
		return c.bad("rollout.tasks", "%d trajectories per step × %d tokens each (rollout.max_len): must be at most %d tokens",
			trajs, c.MaxLen(), int64(maxTokensPerStep))
	}
	if _, ok := product(r.Slots, c.MaxLen(), maxTokensPerStep); !ok { // the KV cache's rows
		return c.bad("rollout.slots", "%d sequences decoded at once × %d tokens each (rollout.max_len): must be at most %d tokens",
			r.Slots, c.MaxLen(), int64(maxTokensPerStep))
	}
	if err := c.numbers(number{key: "rollout.temperature", v: r.Sampling.Temperature, lo: 0, hi: 100},
		number{key: "rollout.top_p", v: r.Sampling.TopP, lo: 0, hi: 1, loOpen: true},
		number{key: "rollout.min_p", v: r.Sampling.MinP, lo: 0, hi: 1, hiOpen: true}); err != nil {
		return err
	}
	if c.MaxLen() <= r.Sampling.MaxNewTokens {
		return c.bad("rollout.max_len", "%d tokens per sequence leave no room for a context before %d new tokens", c.MaxLen(), r.Sampling.MaxNewTokens)
	}
	cc := r.Condenser
	if cc.Type == rollout.CondenseTokenBudget && cc.MaxTokens <= 0 {
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
		size{"eval.samples", e.Samples, 1, maxTrajectories}, size{"train.epochs", t.Epochs, 0, maxCount}); err != nil {
		return err
	}
	// The trainer's sections are checked by the trainer (grpo.Config.Validate, in Validate); the
	// program only bounds their sizes, as it does every size.
	if err := c.sizes(size{"update.epochs", c.Update.Epochs, noLeast, maxCount},
		size{"update.mini_batches", c.Update.MiniBatches, noLeast, maxTrajectories},
		size{"update.micro_tokens", c.Update.MicroTokens, noLeast, maxTokensPerStep}, size{"optim.warmup", c.Optim.Warmup, noLeast, maxCount},
		size{"critic.warmup", c.Critic.Warmup, noLeast, maxCount}, size{"dapo.max_gen_batches", c.DAPO.MaxGenBatches, noLeast, maxCount},
		size{"dapo.overlong_len", c.DAPO.OverlongLen, noLeast, maxTokens}); err != nil {
		return err
	}
	if c.Data.Val == "" {
		if err := c.CheckEvalSize(c.Data.ValSize, fmt.Sprintf("data.val_size %d", c.Data.ValSize)); err != nil {
			return err
		}
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
		if !env.Demonstrates(c.Env.Name, c.hasExtraTools()) {
			with := ""
			if c.hasExtraTools() {
				with = " with MCP tools (its demonstrations call no tool)"
			}
			return c.bad("sft.steps", "%d: environment %s has no demonstrator for the warm-up%s; the environments with one: %s",
				s.Steps, c.Env.Name, with, strings.Join(env.GeneratorNames(), ", "))
		}
		if err := c.numbers(number{key: "sft.lr", v: s.LR, lo: 0, hi: grpo.MaxLR, loOpen: true},
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

// validateDist checks the ZeRO stage: one of those that run, given once (dist.zero1 is stage 1),
// and what it needs.
func (c *Config) validateDist() error {
	d := c.Dist
	switch st := memplan.Stage(d.ZeroStage); {
	case st < memplan.StageDP || st > memplan.StageZeRO3:
		return c.bad("dist.zero_stage", "%d: want 0, 1, 2 or 3", d.ZeroStage)
	case d.Zero1 && st != memplan.StageDP && st != memplan.StageZeRO1:
		return c.bad("dist.zero1", "true is zero_stage 1, but dist.zero_stage is %d: set only dist.zero_stage", d.ZeroStage)
	case st == memplan.StageZeRO3 && !c.Update.Checkpoint:
		return c.bad("dist.zero_stage", "stage 3 gathers each layer again for its backward pass: set update.gradient_checkpointing")
	case c.ZeROStage() != memplan.StageDP && d.RolloutRanks > 0:
		return c.bad("dist.rollout_ranks", "%d rollout ranks with ZeRO stage %d: the rollout ranks would need every shard; set dist.zero_stage 0",
			d.RolloutRanks, c.ZeROStage())
	}
	return nil
}

// CheckWorld checks dist.rollout_ranks against the processes the run has (world, from what
// names it: "--nproc 2", "$WORLD_SIZE=4 (torchrun)", "one process"): at least one rank must train.
func (c *Config) CheckWorld(world int, from string) error {
	if r := c.Dist.RolloutRanks; r > 0 && r >= world {
		return c.bad("dist.rollout_ranks", "%d rollout rank(s) with %d process(es) (%s) leave no rank to train: at most %d",
			r, world, from, max(0, world-1))
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

// CheckEvalSize bounds an evaluation as every size is bounded: tasks × eval.samples trajectories,
// the tasks being data.val_size generated ones, or the rows of the data.val file once it is read
// (what names them with their number).
func (c *Config) CheckEvalSize(tasks int, what string) error {
	if _, ok := product(tasks, c.Eval.Samples, maxTrajectories); !ok {
		return c.bad("eval.samples", "%s × eval.samples %d trajectories per evaluation: must be at most %d",
			what, c.Eval.Samples, maxTrajectories)
	}
	return nil
}
