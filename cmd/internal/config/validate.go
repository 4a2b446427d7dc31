package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/modelinit"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/model"
)

// bad is an error about key, placed where the key was set.
func (c *Config) bad(key, format string, a ...any) error {
	return &Error{Where: c.Origin(key), Key: key, Err: fmt.Errorf(format, a...)}
}

// place puts a section's error where its key was set (a setting.KeyError names the key), each
// of several errors joined (errors.Join) at its own.
func (c *Config) place(err error) error {
	if err == nil {
		return nil
	}
	if es, ok := err.(interface{ Unwrap() []error }); ok {
		var placed []error
		for _, e := range es.Unwrap() {
			placed = append(placed, c.place(e))
		}
		return joinErrors(placed)
	}
	if ke, ok := setting.As(err); ok {
		return &Error{Where: c.Origin(ke.Key), Key: ke.Key, Err: ke.Err}
	}
	return &Error{Where: "config", Err: err}
}

// check checks the program's own keys against their ranges.
func (c *Config) check(ranges ...setting.Checker) error { return c.place(setting.Check(ranges...)) }

// Validate checks every value; each error names the key and where it was set, and the errors
// of all sections are reported together. Each key's range is declared once, by the package that
// owns the key: the trainer's sections by grpo (Config.Validate, ValidateSFT,
// EvalConfig.Validate), the condenser's by rollout, the environment's by env, the program's own
// keys here. What ties sections together is checked once each section is sound, and last the
// settings without effect are warned about (warnEffects).
func (c *Config) Validate() error {
	err := joinErrors([]error{c.validateRun(), c.validateEnv(), c.validateData(), c.validateTrainer(), c.validateLoop(),
		c.validateDist(), c.validateExternal(), c.validateLoRA()})
	if err != nil {
		return err
	}
	if err := c.validateCombined(); err != nil {
		return err
	}
	c.warnEffects()
	return nil
}

// validateTrainer runs the trainer's and the condenser's own checks.
func (c *Config) validateTrainer() error {
	if err := c.Rollout.Condenser.Validate(); err != nil {
		return c.place(err)
	}
	g, err := c.Trainer()
	if err != nil {
		return c.bad("rollout.condenser", "%v", err)
	}
	return joinErrors([]error{c.place(g.Validate()), c.place(c.Eval.Validate()), c.place(g.ValidateSFT(c.SFT))})
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
		switch err := c.Init.Check(); {
		case errors.As(err, new(*setting.KeyError)):
			return c.place(err)
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
	for _, k := range tagsOf(reflect.TypeOf(modelinit.Spec{})) {
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
	if err := e.Config.Validate(); err != nil {
		return c.place(err)
	}
	if e.Agent != nil {
		if err := e.Agent.Validate(); err != nil {
			return c.place(err)
		}
	}
	return c.place(e.Python.Validate())
}

func (c *Config) validateData() error {
	d := c.Data
	if len(d.Train) == 0 {
		if err := c.check(setting.In("data.train_size", d.TrainSize, 1, setting.MaxCount)); err != nil {
			return err
		}
	}
	if len(d.Val) == 0 {
		return c.check(setting.In("data.val_size", d.ValSize, 1, setting.MaxCount))
	}
	return nil
}

// validateLoop checks the program's keys of the training loop and the engine's slots.
func (c *Config) validateLoop() error {
	t := c.Train
	epochs := 0
	if t.Steps == 0 {
		epochs = 1 // the epochs decide the run's length
	}
	err := c.check(setting.In("train.steps", t.Steps, 0, setting.MaxCount), setting.In("train.epochs", t.Epochs, epochs, setting.MaxCount),
		setting.In("train.eval_every", t.EvalEvery, 0, setting.MaxCount), setting.In("train.checkpoint_every", t.CheckpointEvery, 0, setting.MaxCount),
		setting.In("train.keep_checkpoints", t.KeepCheckpoints, 0, setting.MaxCount), setting.In("train.samples", t.Samples, 0, setting.MaxTrajectories),
		setting.In("rollout.slots", c.Rollout.Slots, 0, setting.MaxTrajectories))
	if err != nil {
		return err
	}
	if t.ExportDType != "" && !slices.Contains([]string{"float32", "bfloat16", "float16"}, t.ExportDType) {
		return c.bad("train.export_dtype", "%q: want float32, bfloat16 or float16", t.ExportDType)
	}
	return nil
}

// validateCombined checks what the sections' settings imply together: the KV cache's rows, an
// evaluation's trajectories, a warm-up's demonstrator.
func (c *Config) validateCombined() error {
	r := c.Rollout
	if _, ok := setting.Product(r.Slots, c.MaxLen(), setting.MaxTokensPerStep); !ok {
		return c.bad("rollout.slots", "%d sequences decoded at once × %d tokens each (rollout.max_len): must be at most %d tokens",
			r.Slots, c.MaxLen(), int64(setting.MaxTokensPerStep))
	}
	if len(c.Data.Val) == 0 {
		if err := c.CheckEvalSize(c.Data.ValSize, fmt.Sprintf("data.val_size %d", c.Data.ValSize)); err != nil {
			return err
		}
	}
	if s := c.SFT; s.Steps > 0 && !env.Demonstrates(c.Env.Name, c.hasExtraTools()) {
		with := ""
		if c.hasExtraTools() {
			with = " with MCP tools (its demonstrations call no tool)"
		}
		return c.bad("sft.steps", "%d: environment %s has no demonstrator for the warm-up%s; the environments with one: %s",
			s.Steps, c.Env.Name, with, strings.Join(env.GeneratorNames(), ", "))
	}
	return nil
}

// validateDist checks the dist section: the stage given once (dist.zero1 is stage 1), then the
// trainer's checks of data parallelism (grpo.Config.ValidateDist).
func (c *Config) validateDist() error {
	if st := c.Dist.Stage; c.Dist.Zero1 && st != memplan.StageDP && st != memplan.StageZeRO1 {
		return c.bad("dist.zero1", "true is zero_stage 1, but dist.zero_stage is %d: set only dist.zero_stage", int(st))
	}
	g, err := c.Trainer()
	if err != nil {
		return nil // validateTrainer reports it
	}
	return c.place(g.ValidateDist(c.DistSettings()))
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
	if _, ok := setting.Product(tasks, c.Eval.Samples, setting.MaxTrajectories); !ok {
		return c.bad("eval.samples", "%s × eval.samples %d trajectories per evaluation: must be at most %d",
			what, c.Eval.Samples, setting.MaxTrajectories)
	}
	return nil
}
