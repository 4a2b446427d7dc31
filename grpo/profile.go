package grpo

import "github.com/mtgrpo/mtgrpo/rollout"

// ProfileConfig says which parts of the rollout's time split each Step adds to its metrics, in
// seconds summed over the step's episodes (rollout.EpisodeProfile; the phases run concurrently,
// so the sums can exceed the step's wall time). It is the profiling: section.
type ProfileConfig struct {
	// Enable adds every part: profile/generate_s, queue_s, env_s, reset_s, reward_s, condense_s.
	Enable bool `yaml:"enable"`
	// Rewards adds profile/reward_s (reward computation and closing the episode).
	Rewards bool `yaml:"rewards"`
	// Condensation adds profile/condense_s (context condensation and the chat template).
	Condensation bool `yaml:"condensation"`
}

// profile adds the time split of trajs that c asks for.
func (m Metrics) profile(c ProfileConfig, trajs []*rollout.Trajectory) {
	if !c.Enable && !c.Rewards && !c.Condensation {
		return
	}
	sum := rollout.SumProfiles(trajs)
	if c.Enable {
		m["profile/generate_s"], m["profile/queue_s"] = sum.Generate.Seconds(), sum.Queue.Seconds()
		m["profile/env_s"], m["profile/reset_s"] = sum.Env.Seconds(), sum.Reset.Seconds()
	}
	if c.Enable || c.Rewards {
		m["profile/reward_s"] = sum.Reward.Seconds()
	}
	if c.Enable || c.Condensation {
		m["profile/condense_s"] = sum.Condense.Seconds()
	}
}
