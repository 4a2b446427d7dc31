package grpo

import (
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// SFTConfig is the supervised warm-up before RL on the environment's demonstrations (the sft:
// section): Steps optimizer steps of Batch demonstrations each, cycling through the
// demonstrations of the first Tasks training tasks, with its own learning rate and schedule.
type SFTConfig struct {
	// Steps of SFT (0: none). Each is one optimizer step on Batch demonstrations.
	Steps int     `yaml:"steps"`
	LR    float64 `yaml:"lr"`
	// Warmup is the number of steps over which the learning rate rises linearly to LR.
	Warmup int `yaml:"warmup"`
	// Schedule after warmup: constant, or cosine down to MinLRRatio·LR at the last SFT step (a
	// warm-up that ends at a small rate ends in a settled model, not wherever the last steps at
	// full rate left it).
	Schedule   algo.Schedule `yaml:"schedule"`
	MinLRRatio float64       `yaml:"min_lr_ratio"`
	Batch      int           `yaml:"batch"`
	// Tasks is how many training tasks are demonstrated (cycled through by the steps).
	Tasks int `yaml:"tasks"`
	// PerfectFirst is the share (0 to 1) of the SFT steps, the first ones, that train on the
	// perfect demonstrations only; the rest train on the environment's mix, imperfect ones
	// included (env.direct_demos). 0: every step trains on the mix.
	PerfectFirst float64 `yaml:"perfect_first"`
}

// DefaultSFTConfig is no warm-up; when sft.steps asks for one, 16 demonstrations a step from
// 256 tasks at a constant 1e-4 (a small model's rate).
func DefaultSFTConfig() SFTConfig {
	return SFTConfig{LR: 1e-4, Schedule: algo.Constant, Batch: 16, Tasks: 256}
}

// ValidateSFT names the first bad setting of the sft: section by its key (a setting.KeyError);
// with a warm-up (sft.steps > 0), its sizes and rates too, and whether the rollout's condenser
// lets demonstrations be played (CheckDemonstrable).
func (c *Config) ValidateSFT(s SFTConfig) error {
	err := setting.Check(setting.In("sft.steps", s.Steps, 0, setting.MaxCount), setting.In("sft.warmup", s.Warmup, 0, setting.MaxCount))
	if err != nil || s.Steps == 0 {
		return err
	}
	if err := setting.OneOf("sft.schedule", s.Schedule, []algo.Schedule{algo.Constant, algo.Cosine}); err != nil {
		return err
	}
	err = setting.Check(setting.In("sft.batch", s.Batch, 1, setting.MaxTrajectories), setting.In("sft.tasks", s.Tasks, 1, setting.MaxCount),
		setting.In("sft.lr", s.LR, 0, MaxLR).Above(), setting.In("sft.min_lr_ratio", s.MinLRRatio, 0, 1),
		setting.In("sft.perfect_first", s.PerfectFirst, 0, 1))
	if err != nil {
		return err
	}
	return CheckDemonstrable(c.Rollout)
}

// ForSFT is the trainer's configuration for the warm-up: c with s's learning rate, warmup and
// schedule over the s.Steps optimizer steps, and neither a KL term nor a critic (no reference
// model, no value model).
func (c Config) ForSFT(s SFTConfig) Config {
	c.Optim.LR, c.Optim.Warmup, c.Optim.WarmupRatio, c.Optim.Schedule, c.Optim.MinLRRatio, c.Optim.TotalSteps = s.LR, s.Warmup, 0, s.Schedule, s.MinLRRatio, s.Steps
	c.Loss.KLCoef, c.Reward.KLCoef = 0, 0
	c.Advantage.Estimator = algo.EstGRPO
	c.Advantage.GAE.BiLevel = false
	return c
}
