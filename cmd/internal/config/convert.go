package config

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/cmd/internal/modelinit"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/external"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// Condenser builds the configured context condenser.
func (c *Config) Condenser() (rollout.Condenser, error) { return c.Rollout.Condenser.Condenser() }

// ZeROStage is the ZeRO stage the run shards with: dist.zero_stage, or 1 for dist.zero1 true.
func (c *Config) ZeROStage() memplan.Stage {
	if c.Dist.Zero1 && c.Dist.ZeroStage == 0 {
		return memplan.StageZeRO1
	}
	return memplan.Stage(c.Dist.ZeroStage)
}

// Spec is the random model of an init: section.
func (i *InitConfig) Spec() modelinit.Spec {
	return modelinit.Spec{Arch: i.Arch, Preset: i.Preset, Seed: i.Seed, HiddenSize: i.HiddenSize,
		IntermediateSize: i.IntermediateSize, NumHiddenLayers: i.NumHiddenLayers, NumAttentionHeads: i.NumAttentionHeads,
		NumKeyValueHeads: i.NumKeyValueHeads, HeadDim: i.HeadDim, RopeTheta: i.RopeTheta}
}

// MaxLen is the KV-cache length of one sequence: rollout.max_len, else the longest context plus
// one output (grpo.RolloutConfig.KVLen).
func (c *Config) MaxLen() int { return c.Rollout.KVLen() }

// Slots is how many sequences the engine decodes at once: rollout.slots, else one per
// trajectory of a step.
func (c *Config) Slots() int {
	if c.Rollout.Slots > 0 {
		return c.Rollout.Slots
	}
	return c.Rollout.Tasks * c.Rollout.GroupSize
}

// Sampling is the sampling of training rollouts.
func (c *Config) Sampling() rollout.Sampling {
	s := c.Rollout.Sampling
	s.Greedy = s.Temperature == 0 // the configuration's temperature 0 is greedy decoding
	return s
}

// Trainer is the trainer's configuration.
func (c *Config) Trainer() (grpo.Config, error) {
	cond, err := c.Condenser()
	if err != nil {
		return grpo.Config{}, err
	}
	r := c.Rollout.RolloutConfig
	r.Sampling, r.Condenser, r.MaxLen = c.Sampling(), cond, c.MaxLen()
	g := grpo.Config{
		Rollout:   r,
		Advantage: c.Advantage,
		Reward:    c.Reward,
		Loss:      c.Loss,
		Optim:     c.Optim,
		Update:    c.Update,
		DAPO:      c.DAPO,
		Critic:    c.Critic,
		Seed:      c.Seed,
		Profile:   c.Profiling,
	}
	return g, nil
}

// SFTTrainer is the trainer's configuration for the SFT warm-up (grpo.Config.ForSFT).
func (c *Config) SFTTrainer() (grpo.Config, error) {
	g, err := c.Trainer()
	return g.ForSFT(c.SFT), err
}

// EnvConfig is the environment's configuration. log receives the python sandbox's set-up line.
func (c *Config) EnvConfig(log func(string)) (env.Config, error) {
	py, err := c.sandbox(log)
	if err != nil {
		return env.Config{}, err
	}
	e := c.Env.Config
	e.Python = py
	return e, nil
}

// guarantees are the sandbox's isolation guarantees by their configuration names.
var guarantees = map[string]sandbox.Guarantee{
	"minimal_root": sandbox.MinimalRoot, "no_network": sandbox.NoNetwork, "no_leftovers": sandbox.NoLeftovers,
	"unprivileged": sandbox.Unprivileged, "memory_accounted": sandbox.MemoryAccounted,
	"syscall_filter": sandbox.SyscallFilter,
}

func (c *Config) sandbox(log func(string)) (sandbox.Config, error) {
	p := c.Env.Python
	var lim sandbox.Limits // zero fields: the sandbox's own defaults (sandbox.DefaultLimits)
	setPositive(&lim.Wall, p.Wall)
	setPositive(&lim.CPUSeconds, p.CPUSeconds)
	setPositive(&lim.MemoryBytes, p.MemoryMB<<20)
	setPositive(&lim.Processes, p.Processes)
	setPositive(&lim.FileBytes, p.FileMB<<20)
	setPositive(&lim.DiskBytes, p.DiskMB<<20)
	setPositive(&lim.OutputBytes, p.OutputBytes)
	setPositive(&lim.OpenFiles, p.OpenFiles)
	s := sandbox.Config{Python: p.Interpreter, Helper: p.Helper, Limits: lim, ReadDirs: p.ReadDirs, SitePackages: p.SitePackages, Log: log}
	for _, name := range p.Require {
		g, ok := guarantees[name]
		if !ok {
			return s, fmt.Errorf("env.python.require: unknown guarantee %q (minimal_root, no_network, no_leftovers, "+
				"unprivileged, memory_accounted, syscall_filter)", name)
		}
		s.Require |= g
	}
	if p.BudgetMB > 0 {
		s.Budget = sandbox.NewBudget(p.BudgetMB << 20)
	}
	return s, nil
}

func setPositive[T ~int | ~int64](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// External is the environment's outside parts.
func (c *Config) External() external.Config {
	return external.Config{MCP: c.MCP, OpenEnv: c.OpenEnv, Reward: c.RewardComputation}
}

// EvalRun is how the validation set is played: the eval section with the trainer's rollout
// settings.
func (c *Config) EvalRun() (grpo.EvalConfig, error) {
	g, err := c.Trainer()
	e := c.Eval.EvalConfig
	e.Rollout, e.Seed = g.Rollout, c.Seed^0x6576616c
	return e, err
}

// RLSteps is the number of RL steps: train.steps, else train.epochs passes over trainTasks tasks.
func (c *Config) RLSteps(trainTasks int) int {
	if c.Train.Steps > 0 {
		return c.Train.Steps
	}
	per := max(c.Rollout.Tasks, 1)
	return max(1, (c.Train.Epochs*trainTasks+per-1)/per)
}
