package rollout

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

// slowReset delays Reset by a random few milliseconds, so episodes finish their first contexts in
// a different order on every run.
type slowReset struct {
	env.Env
	rng *rand.Rand
}

func (s slowReset) Reset(ctx context.Context, t env.Task) (env.Start, error) {
	time.Sleep(time.Duration(s.rng.IntN(4000)) * time.Microsecond)
	return s.Env.Reset(ctx, t)
}

// A run's samples depend on its seed only, not on the order in which workers finish: the first
// turns of a group are grouped in episode order before they get their request's seed.
func TestDriverReproducibleWhateverWorkerOrder(t *testing.T) {
	e := openEnv(t, "calc_mult", env.Config{})
	ts := tasks(t, e, 2, 1)
	var outs [][][]int32
	onTorch(t, func() error {
		m := tinyModel(t, 3)
		defer m.Close()
		tok := tiny(t)
		for run := range 3 {
			b, err := NewModelBackend(m, 8, 1024, tok.EOSIDs()...)
			if err != nil {
				return err
			}
			eng, err := NewEngine(b, tok, EngineConfig{Seed: 5})
			if err != nil {
				return err
			}
			d, err := NewDriver(eng, tok, DriverConfig{Sampling: Sampling{MaxNewTokens: 8}, Seed: 9})
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(uint64(run), 1))
			var eps []Episode
			for i, task := range ts {
				for range 4 {
					eps = append(eps, Episode{Env: slowReset{Env: e.New(), rng: rng}, Task: task, Group: i})
				}
			}
			trajs, _, err := d.Run(context.Background(), eps)
			if err != nil {
				return err
			}
			var out [][]int32
			for _, tr := range trajs {
				out = append(out, tr.Turns[0].Output)
			}
			outs = append(outs, out)
			b.Close()
		}
		return nil
	})
	for run := 1; run < len(outs); run++ {
		for i := range outs[0] {
			if !slices.Equal(outs[0][i], outs[run][i]) {
				t.Errorf("run %d, episode %d: output %v, first run %v", run, i, outs[run][i], outs[0][i])
			}
		}
	}
}

// A Run of the second half of a batch with FirstIndex at its start gives those episodes the
// trajectories the whole batch gives them: how data-parallel ranks split a batch and still train
// on the single-process one. (Each task has its own prompt, so each group is its own first
// request in both runs.)
func TestDriverFirstIndexSplitsABatch(t *testing.T) {
	e := openEnv(t, "calc_mult", env.Config{})
	ts := tasks(t, e, 4, 2)
	onTorch(t, func() error {
		m := tinyModel(t, 4)
		defer m.Close()
		tok := tiny(t)
		play := func(first int, part []env.Task) ([]*Trajectory, error) {
			b, err := NewModelBackend(m, 16, 1024, tok.EOSIDs()...)
			if err != nil {
				return nil, err
			}
			defer b.Close()
			eng, err := NewEngine(b, tok, EngineConfig{Seed: 5})
			if err != nil {
				return nil, err
			}
			d, err := NewDriver(eng, tok, DriverConfig{Sampling: Sampling{MaxNewTokens: 8}, Seed: 9, FirstIndex: first * 3})
			if err != nil {
				return nil, err
			}
			var eps []Episode
			for i, task := range part {
				for range 3 {
					eps = append(eps, Episode{Env: e.New(), Task: task, Group: first + i})
				}
			}
			trajs, _, err := d.Run(context.Background(), eps)
			return trajs, err
		}
		whole, err := play(0, ts)
		if err != nil {
			return err
		}
		half, err := play(2, ts[2:])
		if err != nil {
			return err
		}
		for i, tr := range half {
			w := whole[6+i]
			if tr.Index != w.Index || tr.Group != w.Group || !slices.Equal(tr.Turns[0].Output, w.Turns[0].Output) {
				t.Errorf("episode %d: index %d group %d output %v; in the whole batch index %d group %d output %v",
					i, tr.Index, tr.Group, tr.Turns[0].Output, w.Index, w.Group, w.Turns[0].Output)
			}
		}
		return nil
	})
}
