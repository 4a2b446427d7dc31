package grpo

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// The eval: and sft: sections check their keys' ranges; the warm-up's only when there is one.
func TestEvalAndSFTSections(t *testing.T) {
	c := Defaults()
	keyOf := func(err error) string {
		if ke, ok := setting.As(err); ok {
			return ke.Key
		}
		return ""
	}
	if err := DefaultEvalConfig().Validate(); err != nil {
		t.Errorf("default eval: %v", err)
	}
	for _, tc := range []struct {
		e   EvalConfig
		key string
	}{{EvalConfig{Samples: 0, TopP: 1}, "eval.samples"}, {EvalConfig{Samples: 1, Temperature: -1, TopP: 1}, "eval.temperature"},
		{EvalConfig{Samples: 1}, "eval.top_p"}} {
		if got := keyOf(tc.e.Validate()); got != tc.key {
			t.Errorf("%+v: key %q, want %q", tc.e, got, tc.key)
		}
	}
	s := DefaultSFTConfig()
	s.Batch = 0 // no warm-up: its sizes do not matter
	if err := c.ValidateSFT(s); err != nil {
		t.Errorf("no warm-up: %v", err)
	}
	s.Steps = 10
	if got := keyOf(c.ValidateSFT(s)); got != "sft.batch" {
		t.Errorf("batch 0: %q", got)
	}
	s = DefaultSFTConfig()
	s.Steps, s.LR = 10, 0
	if got := keyOf(c.ValidateSFT(s)); got != "sft.lr" {
		t.Errorf("lr 0: %q", got)
	}
	s.LR = 1e-4
	c.Rollout.Condenser = rollout.Summary{}
	if got := keyOf(c.ValidateSFT(s)); got != "rollout.condenser.type" {
		t.Errorf("summary condenser: %q", got)
	}
}

// The warm-up's trainer takes the sft section's optimizer over its own steps, and neither a KL
// term nor a critic, even from a PPO run's configuration.
func TestForSFT(t *testing.T) {
	c := Defaults()
	c.Advantage.Estimator, c.Advantage.GAE.BiLevel = algo.EstGAE, true
	c.Loss.KLCoef, c.Reward.KLCoef = 0.1, 0.1
	c.Optim.WarmupRatio = 0.5
	s := SFTConfig{Steps: 200, LR: 2e-3, Warmup: 10, Schedule: algo.Cosine, MinLRRatio: 0.1, Batch: 4, Tasks: 8}
	g := c.ForSFT(s)
	if o := g.Optim; o.LR != 2e-3 || o.Warmup != 10 || o.WarmupRatio != 0 || o.Schedule != algo.Cosine || o.MinLRRatio != 0.1 || o.TotalSteps != 200 {
		t.Errorf("optimizer %+v", o)
	}
	if g.NeedsReference() || g.NeedsCritic() {
		t.Errorf("the warm-up needs a reference %v or a critic %v", g.NeedsReference(), g.NeedsCritic())
	}
	if err := g.Validate(); err != nil {
		t.Errorf("the warm-up's configuration: %v", err)
	}
	if c.Optim.LR != Defaults().Optim.LR || !c.NeedsCritic() {
		t.Errorf("ForSFT changed the run's configuration")
	}
}

// A warm-up given as a ratio is resolved against the run's optimizer steps, rounded up as TRL and
// OpenRLHF do; steps given outright win.
func TestWarmupSteps(t *testing.T) {
	for _, tc := range []struct {
		warmup      int
		ratio       float64
		total, want int
	}{
		{0, 0.05, 90, 5},    // 4.5 → 5
		{0, 0.03, 100, 3},   // exactly 3
		{0, 0.1, 0, 0},      // the run's length unknown yet
		{7, 0.05, 90, 7},    // optim.warmup wins
		{0, 0, 90, 0},       // no warm-up
		{0, 0.5, 1, 1},      // ½ step → 1
		{0, 0.01, 2000, 20}, // 20
	} {
		o := OptimConfig{Warmup: tc.warmup, WarmupRatio: tc.ratio, TotalSteps: tc.total}
		if got := o.WarmupSteps(); got != tc.want {
			t.Errorf("%+v: %d warm-up steps, want %d", tc, got, tc.want)
		}
	}
	c := Defaults()
	c.Optim.WarmupRatio = 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "optim.warmup_ratio: 1: must be in [0, 1)") {
		t.Errorf("warm-up over the whole run: %v", err)
	}
}

// The dist: section's ranges and what data parallelism needs of the rest, by key.
func TestDistSection(t *testing.T) {
	keyOf := func(err error) string {
		if ke, ok := setting.As(err); ok {
			return ke.Key + ": " + ke.Err.Error()
		}
		return fmt.Sprint(err)
	}
	c := Defaults()
	withIS := Defaults()
	withIS.Loss.IS = ISTokenTruncate
	dynamic := withIS
	dynamic.DAPO.DynamicSampling = true
	for _, tc := range []struct {
		c    Config
		d    DistConfig
		want string
	}{
		{c, DistConfig{}, "<nil>"},
		{c, DistConfig{Stage: 4}, "dist.zero_stage: 4: must be at most 3"},
		{c, DistConfig{Stage: memplan.StageZeRO2, RolloutRanks: 1}, "dist.rollout_ranks: 1 rollout ranks with ZeRO stage 2"},
		{c, DistConfig{Stage: memplan.StageZeRO3}, "dist.zero_stage: 3: ZeRO-3 gathers each layer again"},
		{c, DistConfig{RolloutRanks: 1}, "dist.rollout_ranks: 1: rollout ahead trains one step off-policy"},
		{withIS, DistConfig{RolloutRanks: 1}, "<nil>"},
		{dynamic, DistConfig{RolloutRanks: 1}, "dist.rollout_ranks: 1: rollout ahead does not support dapo.dynamic_sampling"},
		{c, DistConfig{Timeout: -time.Second}, "dist.timeout: -1s: must be at least 0s"},
	} {
		if got := keyOf(tc.c.ValidateDist(tc.d)); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %s, want %s", tc.d, got, tc.want)
		}
	}
}
