package env

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// MaxOutsideValue bounds the magnitude of a number that comes from outside the process (a
// reward, a turn reward or a metric from a reward function or an environment server): far
// beyond any reward scale, well within what group means, standard deviations, losses and the
// report's charts compute without overflowing.
const MaxOutsideValue = 1e6

// CheckOutside is the one check on a number from outside: finite, of magnitude at most
// MaxOutsideValue. what names the value in the error ("reward", "turn_rewards[2]").
func CheckOutside(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > MaxOutsideValue {
		return fmt.Errorf("%s %v: want a finite number of magnitude at most %g", what, v, MaxOutsideValue)
	}
	return nil
}

// checkScore applies CheckOutside to everything an external reward answered.
func checkScore(v ExternalScore) error {
	if err := CheckOutside("reward", v.Reward); err != nil {
		return err
	}
	for i, r := range v.TurnRewards {
		if err := CheckOutside(fmt.Sprintf("turn_rewards[%d]", i), r); err != nil {
			return err
		}
	}
	for k, m := range v.Metrics {
		if err := CheckOutside(fmt.Sprintf("metrics[%q]", k), m); err != nil {
			return err
		}
	}
	return nil
}

// ExternalReward is a reward computed outside the process: a command or an HTTP endpoint that
// reads the trajectory as a TrajectoryRecord (package env/extreward). Unlike a RewardFunc it can
// fail (a server down, a malformed answer); the error names the trajectory and the field, and
// the rollout then marks the episode as failed instead of training on a made-up reward.
// Implementations are safe for concurrent use.
type ExternalReward interface {
	Score(ctx context.Context, t *Trajectory) (ExternalScore, error)
}

// ExternalScore is what an external reward function answers for one trajectory.
type ExternalScore struct {
	Reward float64
	// TurnRewards is nil or holds one reward per turn.
	TurnRewards []float64
	// Metrics are reported as reward/<function name>/<metric>.
	Metrics map[string]float64
}

// ExternalFunc is a named, weighted external reward in a Rubric. Its value counts like a
// RewardFunc's (weight·value in the sum, reported as reward/<name>, a gate under the context
// rules when Gate is set); its turn rewards, weighted, add to the rubric's turn rewards.
type ExternalFunc struct {
	Name   string
	Weight float64
	Gate   bool
	Reward ExternalReward
}

// WithRubric returns a copy of e whose episodes score with wrap(their own rubric): how an
// external reward is put on any environment.
func (e *Environment) WithRubric(wrap func(*Rubric) *Rubric) *Environment {
	c := *e
	inner := e.New
	c.New = func() Env { return &rubricOverride{Env: inner(), wrap: wrap} }
	return &c
}

type rubricOverride struct {
	Env
	wrap func(*Rubric) *Rubric
}

func (r *rubricOverride) Rubric() *Rubric { return r.wrap(r.Env.Rubric()) }

// scoreExternal runs the external functions; their values join the trajectory functions' sum.
func (r *Rubric) scoreExternal(ctx context.Context, t *Trajectory, s *Score) (sum float64, gates bool, turns [][]float64, err error) {
	gates = true
	for _, f := range r.External {
		v, err := f.Reward.Score(ctx, t)
		if err != nil {
			return 0, false, nil, fmt.Errorf("reward %s: %w", f.Name, err)
		}
		if err := checkScore(v); err != nil {
			return 0, false, nil, fmt.Errorf("reward %s: task %s: %w", f.Name, t.Task.ID, err)
		}
		if v.TurnRewards != nil && len(v.TurnRewards) != len(t.Turns) {
			return 0, false, nil, fmt.Errorf("reward %s: task %s: turn_rewards has %d values for %d turns",
				f.Name, t.Task.ID, len(v.TurnRewards), len(t.Turns))
		}
		s.Metrics["reward/"+f.Name] = v.Reward
		keys := make([]string, 0, len(v.Metrics))
		for k := range v.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s.Metrics["reward/"+f.Name+"/"+k] = v.Metrics[k]
		}
		sum += f.Weight * v.Reward
		if f.Gate && v.Reward < 1 {
			gates = false
		}
		turns = append(turns, v.TurnRewards)
	}
	return sum, gates, turns, nil
}

// addExternalTurns adds the external functions' weighted turn rewards (turns[k] belongs to
// r.External[k]) and reports their means as turn_reward/<name>.
func (r *Rubric) addExternalTurns(turns [][]float64, s *Score) {
	for k, tr := range turns {
		if tr == nil {
			continue
		}
		mean := 0.0
		for i, v := range tr {
			s.TurnRewards[i] += r.External[k].Weight * v
			mean += v / float64(len(tr))
		}
		s.Metrics["turn_reward/"+r.External[k].Name] = mean
	}
}
