package grpo

import (
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/rollout"
)

func TestProfileMetrics(t *testing.T) {
	// Two episodes: generate 1 s + 2 s, queue 0.5 s + 0, env 3 s, reset 0.25 s each, reward 1 s,
	// condense 0.5 s + 1.5 s.
	trajs := []*rollout.Trajectory{
		{Profile: rollout.EpisodeProfile{Generate: time.Second, Queue: 500 * time.Millisecond, Env: 3 * time.Second,
			Reset: 250 * time.Millisecond, Reward: time.Second, Condense: 500 * time.Millisecond}},
		{Profile: rollout.EpisodeProfile{Generate: 2 * time.Second, Reset: 250 * time.Millisecond,
			Condense: 1500 * time.Millisecond}},
	}
	m := Metrics{}
	m.profile(ProfileConfig{}, trajs)
	if len(m) != 0 {
		t.Errorf("profiling off: %v", m)
	}
	m.profile(ProfileConfig{Rewards: true}, trajs)
	if len(m) != 1 || m["profile/reward_s"] != 1 {
		t.Errorf("rewards only: %v, want profile/reward_s 1", m)
	}
	m = Metrics{}
	m.profile(ProfileConfig{Enable: true}, trajs)
	want := Metrics{"profile/generate_s": 3, "profile/queue_s": 0.5, "profile/env_s": 3, "profile/reset_s": 0.5,
		"profile/reward_s": 1, "profile/condense_s": 2}
	if len(m) != len(want) {
		t.Errorf("enable: %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}

func TestConfigDecisions(t *testing.T) {
	c := Defaults()
	if c.NeedsReference() || c.NeedsCritic() {
		t.Errorf("defaults need a reference %v, a critic %v; want neither", c.NeedsReference(), c.NeedsCritic())
	}
	c.Reward.KLCoef = 0.01
	c.Advantage.Estimator = algo.EstGAE
	if !c.NeedsReference() || !c.NeedsCritic() {
		t.Error("a KL in the reward needs the reference; gae needs a critic")
	}
	// 10 steps of 2 epochs × 3 mini-batches: 60 optimizer steps; a set length stays.
	c.Update.Epochs, c.Update.MiniBatches = 2, 3
	c.ScheduleSteps(10)
	if c.Optim.TotalSteps != 60 {
		t.Errorf("TotalSteps = %d, want 60", c.Optim.TotalSteps)
	}
	c.ScheduleSteps(99)
	if c.Optim.TotalSteps != 60 {
		t.Errorf("TotalSteps = %d after a second call, want 60 kept", c.Optim.TotalSteps)
	}
	for _, tc := range []struct{ configured, server, want int }{
		{0, 0, 0}, {5, 0, 5}, {0, 4, 4}, {5, 4, 4}, {3, 4, 3},
	} {
		if got := openEpisodeLimit(tc.configured, &env.Environment{MaxConcurrent: tc.server}); got != tc.want {
			t.Errorf("openEpisodeLimit(%d, server %d) = %d, want %d", tc.configured, tc.server, got, tc.want)
		}
	}
}
