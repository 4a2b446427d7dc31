package config

import (
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/external"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// Condenser builds the configured context condenser.
func (c *Config) Condenser() (rollout.Condenser, error) { return c.Rollout.Condenser.Condenser() }

// ZeROStage is the ZeRO stage the run shards with: dist.zero_stage, or 1 for dist.zero1 true.
func (c *Config) ZeROStage() memplan.Stage {
	if c.Dist.Zero1 && c.Dist.Stage == memplan.StageDP {
		return memplan.StageZeRO1
	}
	return c.Dist.Stage
}

// DistSettings is data parallelism's settings: the dist section with dist.zero1 as its stage.
func (c *Config) DistSettings() grpo.DistConfig {
	d := c.Dist.DistConfig
	d.Stage = c.ZeROStage()
	return d
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

// ParkedSlots is how many KV slots beyond Slots keep finished agent calls' caches for their
// conversation's next call: env.agent.cache_slots, else as many as Slots; 0 without env.agent.
// They hold as much as the engine's own slots.
func (c *Config) ParkedSlots() int {
	switch {
	case c.Env.Agent == nil:
		return 0
	case c.Env.Agent.CacheSlots > 0:
		return c.Env.Agent.CacheSlots
	}
	return c.Slots()
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
func (c *Config) EnvConfig(log func(string)) env.Config {
	e := c.Env.Config
	e.Python = c.Env.Python.Config(log)
	return e
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
