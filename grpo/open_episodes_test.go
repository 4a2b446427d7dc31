package grpo

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/torch"
)

// countedEnv counts the episodes open (between Reset and Close) at once.
type countedEnv struct {
	env.Env
	c *openCount
}

type openCount struct {
	mu        sync.Mutex
	open, max int
}

func (e *countedEnv) Reset(ctx context.Context, t env.Task) (env.Start, error) {
	e.c.mu.Lock()
	e.c.open++
	e.c.max = max(e.c.max, e.c.open)
	e.c.mu.Unlock()
	return e.Env.Reset(ctx, t)
}

func (e *countedEnv) Close() error {
	e.c.mu.Lock()
	e.c.open--
	e.c.mu.Unlock()
	return e.Env.Close()
}

// RolloutConfig.MaxOpenEpisodes reaches the driver of training steps and of evaluation: an
// environment server's session limit is never exceeded.
func TestMaxOpenEpisodes(t *testing.T) {
	dir := tinyDir(t, 15, nil)
	err := torch.Run(func() error {
		cfg := smallConfig() // 2 tasks x 4 trajectories: 8 episodes a step
		cfg.Rollout.MaxOpenEpisodes = 3
		var c openCount
		e := newByteEnv(2, byteSum)
		inner := e.New
		e.New = func() env.Env { return &countedEnv{Env: inner(), c: &c} }
		r := newRun(t, dir, e, cfg, nil)
		defer r.close()
		if _, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)}); err != nil {
			return err
		}
		if c.max != 3 {
			t.Errorf("training: at most %d episodes open at once, want 3", c.max)
		}
		c.max = 0
		m, trajs, err := r.eval(context.Background(), sayTasks(6), EvalConfig{Samples: 2, Temperature: cfg.Rollout.Sampling.Temperature, TopP: cfg.Rollout.Sampling.TopP})
		if err != nil {
			return err
		}
		if c.max != 3 {
			t.Errorf("eval: at most %d episodes open at once, want 3", c.max)
		}
		// The headline val/score is the mean reward of the 12 episodes, as val/critic/score/mean.
		sum := 0.0
		for _, tr := range trajs {
			sum += tr.Reward
		}
		if got, ok := m[ValScore]; !ok || !near(got, sum/12, 1e-12) || got != m["val/critic/score/mean"] {
			t.Errorf("%s = %v (present %v), want the mean reward %v", ValScore, got, ok, sum/12)
		}
		if _, ok := m[ValPass1]; !ok || len(trajs) != 12 {
			t.Errorf("%s missing, or %d trajectories (want 12)", ValPass1, len(trajs))
		}
		for k := range m { // every name once: val/ prefixes the rollout statistics, not a step's headlines
			if strings.HasPrefix(k, "val/train/") || strings.HasPrefix(k, "val/val/") {
				t.Errorf("doubled prefix: %s", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
