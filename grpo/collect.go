package grpo

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo/exchange"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// rollout generates the step's trajectories: Rollout.Tasks tasks from src, Rollout.GroupSize episodes
// each. With DAPO's dynamic sampling, groups whose rewards are all equal carry no signal and are
// dropped, and more tasks are drawn until Tasks groups with signal are collected or MaxGenBatches
// rounds have run (then the step trains on what it has). frac_reward_zero_std is measured on the
// first round, before any filtering. Deviation D11 (grpo/algo/doc.go): singleton groups are
// dropped too.
func (t *Trainer) rollout(ctx context.Context, src TaskSource, m Metrics) ([]*rollout.Trajectory, error) {
	r := t.cfg.Rollout
	rounds := t.cfg.DAPO.MaxGenBatches
	if !t.cfg.DAPO.DynamicSampling || rounds == 0 {
		rounds = max(rounds, 1)
	}
	var kept []*rollout.Trajectory
	groups, generated := 0, 0
	failed, played, why := 0, 0, "" // failed episodes over the rounds, and the first's cause
	for round := 0; round < rounds && groups < r.Tasks; round++ {
		want := r.Tasks - groups
		tasks, err := src.Next(want)
		if err != nil {
			return nil, fmt.Errorf("grpo: step %d: tasks: %w", t.iter, err)
		}
		if len(tasks) == 0 {
			return nil, fmt.Errorf("grpo: step %d: the task source is empty", t.iter)
		}
		trajs, err := t.play(ctx, tasks, round, generated)
		if err != nil {
			return nil, err
		}
		generated += len(tasks)
		played += len(trajs)
		if n, w := rollout.Failures(trajs); n > 0 {
			failed += n
			if why == "" {
				why = w
			}
		}
		zero := zeroVarianceGroups(trajs)
		if round == 0 {
			m["frac_reward_zero_std"] = float64(len(zero)) / float64(len(tasks))
		}
		if !t.cfg.DAPO.DynamicSampling {
			return trajs, nil
		}
		for _, tr := range trajs {
			if !zero[tr.Group] {
				kept = append(kept, tr)
			}
		}
		groups += len(tasks) - len(zero)
	}
	m["dapo/gen_rounds"] = float64(generated) / float64(r.Tasks)
	m["dapo/kept_groups"] = float64(groups)
	if len(kept) == 0 && failed > 0 { // the failures, not the groups they left equal, are the news
		return nil, fmt.Errorf("grpo: step %d: dynamic sampling found no group with differing rewards in %d rounds; %d of %d episodes failed: %s",
			t.iter, rounds, failed, played, why)
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("grpo: step %d: dynamic sampling found no group with differing rewards in %d rounds", t.iter, rounds)
	}
	return kept, nil
}

// play runs Group episodes of each task. Groups are numbered from first so that they stay distinct
// across dynamic-sampling rounds; each round has its own sampling seed. Data parallel, each rank
// plays its contiguous share of the tasks, numbered as in the whole batch, and the ranks exchange
// their trajectories: every rank returns the whole round (dist.go).
func (t *Trainer) play(ctx context.Context, tasks []env.Task, round, first int) ([]*rollout.Trajectory, error) {
	lo, hi := t.dist.playShare(len(tasks))
	trajs, err := t.playPart(ctx, tasks[lo:hi], lo, t.iter, round, first)
	if err != nil {
		return nil, err
	}
	if trajs, err = exchange.Trajectories(t.dist.all(), trajs, tasks, first); err != nil {
		return nil, fmt.Errorf("grpo: step %d: %w", t.iter, err)
	}
	return trajs, nil
}

// playPart runs the episodes of tasks, which start at position lo of their round's tasks, for
// iteration iter.
func (t *Trainer) playPart(ctx context.Context, tasks []env.Task, lo, iter, round, first int) ([]*rollout.Trajectory, error) {
	r := t.cfg.Rollout
	d, err := t.runner(t.gen, t.tok, rollout.DriverConfig{
		Sampling: r.Sampling, Condenser: r.Condenser, MaxTurns: r.MaxTurns, MaxContextTokens: r.MaxContextTokens,
		ChatVars: r.ChatVars, MaskTruncated: r.MaskTruncated, Workers: r.Workers, MaxOpenEpisodes: openEpisodeLimit(r.MaxOpenEpisodes, t.envs),
		Seed: t.cfg.Seed ^ uint64(iter)<<20 ^ uint64(round)<<12, FirstIndex: lo * r.GroupSize,
	})
	if err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	var eps []rollout.Episode
	for i, task := range tasks {
		for range r.GroupSize {
			eps = append(eps, rollout.Episode{Env: t.envs.New(), Task: task, Group: first + lo + i})
		}
	}
	trajs, _, err := d.Run(ctx, eps)
	if err != nil {
		return nil, fmt.Errorf("grpo: step %d: rollout: %w", iter, err)
	}
	for _, tr := range trajs {
		containBadReward(tr)
	}
	return trajs, nil
}

// containBadReward turns a trajectory whose rewards are not finite (a reward function returned
// NaN or ±Inf) into a failed one: it is left out of training and reported through Err, and the
// rest of the batch trains.
func containBadReward(tr *rollout.Trajectory) {
	if tr.Err != nil {
		return
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	what := ""
	switch {
	case bad(tr.Reward):
		what = fmt.Sprintf("reward %v", tr.Reward)
	case bad(tr.Score.TurnReward):
		what = fmt.Sprintf("turn reward %v", tr.Score.TurnReward)
	default:
		for k, tu := range tr.Turns {
			if bad(tu.Reward) {
				what = fmt.Sprintf("turn %d reward %v", k, tu.Reward)
				break
			}
		}
	}
	if what == "" {
		return
	}
	var names []string
	for k, v := range tr.Score.Metrics {
		if bad(v) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	tr.Err = fmt.Errorf("task %s: %s is not finite (from %s): trajectory left out of training", tr.Task.ID, what, strings.Join(names, ", "))
	tr.End = rollout.EndError
}

// zeroVarianceGroups returns the groups whose trajectories all have the same reward (a singleton
// group included: it has no variance either).
func zeroVarianceGroups(trajs []*rollout.Trajectory) map[int]bool {
	first := map[int]float64{}
	same := map[int]bool{}
	for _, tr := range trajs {
		if v, ok := first[tr.Group]; !ok {
			first[tr.Group], same[tr.Group] = tr.Reward, true
		} else if v != tr.Reward {
			same[tr.Group] = false
		}
	}
	out := map[int]bool{}
	for g, s := range same {
		if s {
			out[g] = true
		}
	}
	return out
}
