package env

import (
	"context"
	"fmt"
	"sort"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// RewardFunc is a named, weighted trajectory-level reward.
type RewardFunc struct {
	Name   string
	Weight float64
	// Gate marks a pass/fail condition (format, correctness): under a context-length rule the
	// reward is zero unless every gate returns at least 1.
	Gate bool
	Fn   func(t *Trajectory) float64
}

// TurnRewardFunc is a named, weighted turn-level reward, evaluated for each turn i.
type TurnRewardFunc struct {
	Name   string
	Weight float64
	Fn     func(t *Trajectory, i int) float64
}

// RewardRule is how a rubric turns its functions into the trajectory reward: their weighted sum,
// or one of the context-length rules of multi-turn GRPO with condensed contexts (env.reward_rule).
type RewardRule string

// Reward rules.
const (
	// RuleOff: reward = Σ weight·value over the trajectory functions.
	RuleOff RewardRule = "off"
	// RuleInverse: reward = 1/max_t|c_t| if every gate passes, else 0 (the seed's definition).
	RuleInverse RewardRule = "inverse"
	// RuleScaled: reward = budget/max_t|c_t| if every gate passes, else 0 (same ordering,
	// values near 1 instead of near 1e-3).
	RuleScaled RewardRule = "scaled"
)

var rewardRules = []RewardRule{RuleOff, RuleInverse, RuleScaled}

// ParseRewardRule reads a rule's name ("" is off).
func ParseRewardRule(s string) (RewardRule, error) {
	return setting.Parse("reward rule", s, rewardRules, map[string]RewardRule{"": RuleOff})
}

// UnmarshalText reads a rule's name as ParseRewardRule does (YAML, flags).
func (r *RewardRule) UnmarshalText(b []byte) error { return setting.Decode(r, b, ParseRewardRule) }

// Rubric combines reward functions into one trajectory reward and per-turn rewards.
type Rubric struct {
	Funcs []RewardFunc
	Turn  []TurnRewardFunc
	// External are rewards computed outside the process (commands, HTTP endpoints); they are
	// summed and gated like Funcs, and only they can make Score fail on a trajectory.
	External []ExternalFunc
	// Rule is RuleOff ("" means off), RuleInverse or RuleScaled.
	Rule RewardRule
	// Budget is the numerator of RuleScaled, in tokens (e.g. the context budget).
	Budget int
}

// Score is a rubric's verdict on one trajectory.
type Score struct {
	// Reward is the trajectory reward (R_out in MT-GRPO).
	Reward float64
	// TurnRewards holds each turn's weighted turn reward, one per turn.
	TurnRewards []float64
	// TurnReward is R_turn for MT-GRPO: the sum of TurnRewards over the turns up to and including
	// the first turn that called a tool (all turns when none did).
	TurnReward float64
	// Metrics has each function's value under its own name: "reward/<name>" (trajectory),
	// "turn_reward/<name>" (mean over turns), plus "reward/total" and "context/max_tokens".
	Metrics map[string]float64
}

// Score evaluates the rubric with no deadline but the external functions' own; see ScoreContext.
func (r *Rubric) Score(t *Trajectory) (Score, error) { return r.ScoreContext(context.Background(), t) }

// ScoreContext evaluates the rubric. It fails on a bad configuration (unknown rule, a length
// rule without token counts) or when an external function fails, never on the trajectory's
// content. ctx bounds the external functions.
func (r *Rubric) ScoreContext(ctx context.Context, t *Trajectory) (Score, error) {
	s := Score{Metrics: map[string]float64{}}
	sum, gates, extTurns, err := r.scoreExternal(ctx, t, &s)
	if err != nil {
		return Score{}, err
	}
	for _, f := range r.Funcs {
		v := f.Fn(t)
		s.Metrics["reward/"+f.Name] = v
		sum += f.Weight * v
		if f.Gate && v < 1 {
			gates = false
		}
	}
	maxCtx := t.MaxContextTokens()
	s.Metrics["context/max_tokens"] = float64(maxCtx)
	switch r.Rule {
	case "", RuleOff:
		s.Reward = sum
	case RuleInverse, RuleScaled:
		num := 1.0
		if r.Rule == RuleScaled {
			if r.Budget <= 0 {
				return Score{}, fmt.Errorf("env: context reward %q needs Budget > 0", r.Rule)
			}
			num = float64(r.Budget)
		}
		// An episode with no turn (its first context did not fit) has no answer: reward 0.
		if maxCtx <= 0 && len(t.Turns) > 0 {
			return Score{}, fmt.Errorf("env: context reward %q needs the turns' ContextTokens (all are 0)", r.Rule)
		}
		if gates && maxCtx > 0 {
			s.Reward = num / float64(maxCtx)
		}
	default:
		return Score{}, fmt.Errorf("env: unknown context reward rule %q (want %s)", r.Rule, setting.List(rewardRules))
	}
	s.Metrics["reward/total"] = s.Reward
	r.scoreTurns(t, &s, extTurns)
	return s, nil
}

func (r *Rubric) scoreTurns(t *Trajectory, s *Score, ext [][]float64) {
	s.TurnRewards = make([]float64, len(t.Turns))
	means := make(map[string]float64, len(r.Turn))
	for i := range t.Turns {
		for _, f := range r.Turn {
			v := f.Fn(t, i)
			means[f.Name] += v / float64(len(t.Turns))
			s.TurnRewards[i] += f.Weight * v
		}
	}
	for _, f := range r.Turn {
		s.Metrics["turn_reward/"+f.Name] = means[f.Name]
	}
	r.addExternalTurns(ext, s)
	last := len(t.Turns) - 1
	for i, tu := range t.Turns {
		if tu.Result.Info.ToolCalls > 0 {
			last = i
			break
		}
	}
	for i := 0; i <= last; i++ {
		s.TurnReward += s.TurnRewards[i]
	}
}

// Names lists the rubric's function names (trajectory and external, then turn), sorted within
// each group.
func (r *Rubric) Names() []string {
	var a, b []string
	for _, f := range r.Funcs {
		a = append(a, f.Name)
	}
	for _, f := range r.External {
		a = append(a, f.Name)
	}
	for _, f := range r.Turn {
		b = append(b, f.Name)
	}
	sort.Strings(a)
	sort.Strings(b)
	return append(a, b...)
}
