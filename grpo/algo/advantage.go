package algo

// Outcome advantages: one scalar per trajectory from its score and its group (the copies of one
// task), in plain Go. References: verl verl/trainer/ppo/core_algos.py
// (compute_grpo_outcome_advantage, compute_rloo_outcome_advantage,
// compute_reinforce_plus_plus_baseline_outcome_advantage; TRL grpo_trainer.py
// _generate_and_score_completions for scale_rewards=batch); DeepSeekMath (arXiv 2402.03300) for
// GRPO, Dr.GRPO (arXiv 2503.20783), RLOO (arXiv 2402.14740), REINFORCE++ (arXiv 2501.03262).
//
// Deviations from verl, on purpose: D1 (singletons get 0) and D2 (equal scores give exactly 0),
// stated in doc.go.

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Estimator names an advantage estimator, spelled as in verl's algorithm.adv_estimator where verl
// has the estimator.
type Estimator string

// Estimators.
const (
	// EstGRPO: A_i = (s_i − μ_g)/(σ_g + ε), σ with Bessel's correction; without the division when
	// AdvConfig.NormStd is off (verl's norm_adv_by_std_in_grpo).
	EstGRPO Estimator = "grpo"
	// EstDrGRPO: A_i = s_i − μ_g (Dr.GRPO; verl spells it grpo with norm_adv_by_std_in_grpo=false,
	// TRL loss_type dr_grpo, which is also accepted).
	EstDrGRPO Estimator = "drgrpo"
	// EstRLOO: A_i = s_i − mean_{j≠i} s_j.
	EstRLOO Estimator = "rloo"
	// EstReinforcePPBaseline: a_i = s_i − μ_g, then whitened over the batch's trained tokens.
	EstReinforcePPBaseline Estimator = "reinforce_plus_plus_baseline"
	// EstReinforcePP: REINFORCE++ without a baseline: discounted returns of each trajectory's
	// rewards over its trained tokens, whitened over the batch (ReinforcePlusPlusAdvantage).
	// Not an outcome estimator: the advantage varies along the trajectory when γ < 1.
	EstReinforcePP Estimator = "reinforce_plus_plus"
	// EstMultiTurnGRPO: GRPO's advantage per trajectory on every trained token of every turn
	// (condensed contexts: each turn is its own sample). The advantage is EstGRPO's; what differs
	// is the reward (1/max_t|c_t|) and AggConfig.Turns, which say how turns are weighed.
	EstMultiTurnGRPO Estimator = "grpo_multiturn"
	// EstMTGRPO: MT-GRPO turn-level credit (arXiv 2505.11821), see MTGRPOAdvantage.
	EstMTGRPO Estimator = "mt_grpo"
	// EstGAE: PPO's GAE from a critic's values (GAE); GAEConfig.BiLevel selects RAGEN's bi-level
	// GAE (BiLevelGAE).
	EstGAE Estimator = "gae"
)

var estimators = []Estimator{EstGRPO, EstDrGRPO, EstRLOO, EstReinforcePP, EstReinforcePPBaseline, EstMultiTurnGRPO, EstMTGRPO, EstGAE}

// ParseEstimator reads an estimator name; unknown names are an error naming the value.
func ParseEstimator(s string) (Estimator, error) {
	return setting.Parse("advantage estimator", s, estimators, map[string]Estimator{"dr_grpo": EstDrGRPO})
}

// UnmarshalText reads an estimator's name as ParseEstimator does (YAML, flags).
func (e *Estimator) UnmarshalText(b []byte) error { return setting.Decode(e, b, ParseEstimator) }

// Outcome reports whether e is computed from trajectory scores alone (by OutcomeAdvantage).
func (e Estimator) Outcome() bool {
	switch e {
	case EstGRPO, EstDrGRPO, EstRLOO, EstReinforcePPBaseline, EstMultiTurnGRPO:
		return true
	}
	return false
}

// AdvConfig configures the advantage estimator.
type AdvConfig struct {
	// Estimator is the estimator (grpo).
	Estimator Estimator `yaml:"estimator"`
	// Eps is ε in (s−μ)/(σ+ε): verl 1e-6 (the default), TRL 1e-4.
	Eps float64 `yaml:"eps"`
	// NormStd divides by the group std (grpo, grpo_multiturn, mt_grpo; default on). Off is Dr.GRPO.
	NormStd bool `yaml:"norm_std"`
	// StdOver is where grpo's and grpo_multiturn's std comes from when NormStd is on: each
	// group's own (group, the default; "" reads as group) or every score of the step (batch,
	// TRL's scale_rewards="batch").
	StdOver StdScope `yaml:"std_over"`
	// TurnCoef is MT-GRPO's c_turn, the weight of the turn advantage (default 1).
	TurnCoef float64 `yaml:"turn_coef"`
	// GAE configures gae; its keys (gamma, lambda, bi_level, turn_gamma) sit beside the others.
	GAE GAEConfig `yaml:",inline"`
}

// StdScope says over which scores grpo's std is taken.
type StdScope string

// Std scopes.
const (
	// StdGroup: each group's own Bessel std (GRPO, TRL's scale_rewards="group").
	StdGroup StdScope = "group"
	// StdBatch: the Bessel std of every score of the step (TRL's scale_rewards="batch").
	StdBatch StdScope = "batch"
)

var stdScopes = []StdScope{StdGroup, StdBatch}

// ParseStdScope reads a std scope ("" is group); unknown values are an error naming the value.
func ParseStdScope(s string) (StdScope, error) {
	return setting.Parse("std scope", s, stdScopes, map[string]StdScope{"": StdGroup})
}

// UnmarshalText reads a std scope as ParseStdScope does (YAML, flags).
func (s *StdScope) UnmarshalText(b []byte) error { return setting.Decode(s, b, ParseStdScope) }

// DefaultAdvConfig is verl's defaults: grpo, ε = 1e-6, std normalisation on within each group;
// c_turn = 1 as in MT-GRPO; GAE γ = λ = 1, γ_turn = 0.95 as in RAGEN.
func DefaultAdvConfig() AdvConfig {
	return AdvConfig{Estimator: EstGRPO, Eps: 1e-6, NormStd: true, StdOver: StdGroup, TurnCoef: 1, GAE: DefaultGAEConfig()}
}

// Validate names the first bad field (a setting.KeyError). Bi-level GAE needs the gae
// estimator: it is GAE over a critic's values.
func (c AdvConfig) Validate() error {
	if err := setting.OneOf("advantage.estimator", c.Estimator, estimators); err != nil {
		return err
	}
	if c.StdOver != "" {
		if err := setting.OneOf("advantage.std_over", c.StdOver, stdScopes); err != nil {
			return err
		}
	}
	if err := setting.Check(setting.AtLeast("advantage.eps", c.Eps, 0), setting.Finite("advantage.turn_coef", c.TurnCoef)); err != nil {
		return err
	}
	if c.GAE.BiLevel && c.Estimator != EstGAE {
		return setting.Errorf("advantage.bi_level", "bi-level GAE needs a critic: set advantage.estimator gae "+
			"(algorithm.adv_estimator=gae), not %s", c.Estimator)
	}
	if c.Estimator == EstGAE || c.Estimator == EstReinforcePP {
		return c.GAE.Validate()
	}
	return nil
}

// GroupStats describes the groups of a batch, for metrics and dynamic sampling.
type GroupStats struct {
	// Groups counts distinct groups; Singletons those of one trajectory (advantage 0).
	Groups, Singletons int
	// ZeroStd counts groups of two or more whose scores are all equal (advantage 0, no signal).
	ZeroStd int
	// FracZeroStd is the fraction of trajectories that sit in a ZeroStd group (TRL's and verl's
	// frac_reward_zero_std; equal to the fraction of groups when groups have equal sizes).
	FracZeroStd float64
	// MeanStd is the mean over groups of two or more of the score std (Bessel), TRL's reward_std.
	MeanStd float64
}

// Metrics names the statistics as TRL and verl log them (frac_reward_zero_std, reward_std).
func (s GroupStats) Metrics() map[string]float64 {
	return map[string]float64{"frac_reward_zero_std": s.FracZeroStd, "reward_std": s.MeanStd}
}

// group is one group's members (indices into the batch) in batch order.
type group struct {
	id      int
	members []int
}

// groupsOf splits a batch by group id, groups in order of first appearance.
func groupsOf(ids []int) []group {
	at := map[int]int{}
	var gs []group
	for i, id := range ids {
		k, ok := at[id]
		if !ok {
			k = len(gs)
			at[id] = k
			gs = append(gs, group{id: id})
		}
		gs[k].members = append(gs[k].members, i)
	}
	return gs
}

// moments returns the mean, the Bessel std and whether all scores of the group are equal.
func moments(scores []float64, members []int) (mean, std float64, equal bool) {
	equal = true
	for _, i := range members {
		mean += scores[i]
		equal = equal && scores[i] == scores[members[0]]
	}
	n := float64(len(members))
	mean /= n
	if len(members) < 2 || equal {
		return mean, 0, equal
	}
	var ss float64
	for _, i := range members {
		d := scores[i] - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / (n - 1)), false
}

// checkScores validates a batch of scores and group ids.
func checkScores(scores []float64, groups []int) error {
	if len(scores) != len(groups) {
		return fmt.Errorf("grpo: %d scores but %d group ids", len(scores), len(groups))
	}
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return fmt.Errorf("grpo: score of trajectory %d is %v", i, s)
		}
	}
	return nil
}

// groupAdvantages applies f to every group of two or more with spread (mean, std), leaving 0 for
// singletons and equal-score groups, and collects the statistics.
func groupAdvantages(scores []float64, groups []int, f func(s, mean, std float64, n int) float64) ([]float64, GroupStats, error) {
	if err := checkScores(scores, groups); err != nil {
		return nil, GroupStats{}, err
	}
	adv := make([]float64, len(scores))
	var st GroupStats
	var stdSum float64
	var zeroStdTraj, multi int
	for _, g := range groupsOf(groups) {
		st.Groups++
		if len(g.members) == 1 {
			st.Singletons++
			continue
		}
		mean, std, equal := moments(scores, g.members)
		multi++
		stdSum += std
		if equal {
			st.ZeroStd++
			zeroStdTraj += len(g.members)
			continue
		}
		for _, i := range g.members {
			adv[i] = f(scores[i], mean, std, len(g.members))
		}
	}
	if len(scores) > 0 {
		st.FracZeroStd = float64(zeroStdTraj) / float64(len(scores))
	}
	if multi > 0 {
		st.MeanStd = stdSum / float64(multi)
	}
	return adv, st, nil
}

// GRPOOutcomeAdvantage is GRPO's outcome advantage, scores [B] and group ids [B] → advantages [B]:
// A_i = (s_i − μ_g)/(σ_g + eps) with σ the Bessel std of the group, or A_i = s_i − μ_g when
// normStd is off (Dr.GRPO). Singletons and equal-score groups get 0.
// Reference: verl compute_grpo_outcome_advantage; DeepSeekMath eq. (3); Dr.GRPO §3.
func GRPOOutcomeAdvantage(scores []float64, groups []int, eps float64, normStd bool) ([]float64, GroupStats, error) {
	if !(eps >= 0) {
		return nil, GroupStats{}, fmt.Errorf("grpo: GRPOOutcomeAdvantage eps = %v, want ≥ 0", eps)
	}
	return groupAdvantages(scores, groups, func(s, mean, std float64, _ int) float64 {
		if normStd {
			return (s - mean) / (std + eps)
		}
		return s - mean
	})
}

// GRPOBatchStdAdvantage is GRPO's outcome advantage with the std taken over the whole batch,
// scores [B] and group ids [B] → advantages [B]: A_i = (s_i − μ_g)/(σ_B + eps) with σ_B the
// Bessel std of all B scores (0 when B < 2). Singletons and equal-score groups get 0 (their
// s_i − μ_g is 0). Reference: TRL GRPOTrainer with scale_rewards="batch" (nanstd(rewards)).
func GRPOBatchStdAdvantage(scores []float64, groups []int, eps float64) ([]float64, GroupStats, error) {
	if !(eps >= 0) {
		return nil, GroupStats{}, fmt.Errorf("grpo: GRPOBatchStdAdvantage eps = %v, want ≥ 0", eps)
	}
	adv, st, err := GRPOOutcomeAdvantage(scores, groups, 0, false)
	if err != nil {
		return nil, st, err
	}
	all := make([]int, len(scores))
	for i := range all {
		all[i] = i
	}
	_, std, _ := moments(scores, all)
	for i := range adv {
		adv[i] /= std + eps
	}
	return adv, st, nil
}

// RLOOAdvantage is RLOO's advantage, scores [B], group ids [B] → advantages [B]:
// A_i = s_i − mean_{j≠i} s_j = n/(n−1)·(s_i − μ_g). Singletons and equal-score groups get 0.
// Reference: verl compute_rloo_outcome_advantage; Ahmadian et al. (arXiv 2402.14740) eq. (9).
func RLOOAdvantage(scores []float64, groups []int) ([]float64, GroupStats, error) {
	return groupAdvantages(scores, groups, func(s, mean, _ float64, n int) float64 {
		return float64(n) / float64(n-1) * (s - mean)
	})
}

// ReinforcePlusPlusBaselineAdvantage is REINFORCE++-baseline's advantage, scores [B], group ids [B], trained tokens per
// trajectory [B] (nil: every trajectory weighs 1) → advantages [B]: a_i = s_i − μ_g (0 for
// singletons), then whitened over the batch's tokens: A_i = (a_i − m)/sqrt(v + 1e-8) with m and v
// the token-weighted mean and Bessel variance (verl whitens the token-level tensor, so a
// trajectory weighs its token count). Fewer than two tokens in all: zeros.
// Reference: verl compute_reinforce_plus_plus_baseline_outcome_advantage, verl_F.masked_whiten.
func ReinforcePlusPlusBaselineAdvantage(scores []float64, groups []int, tokens []int) ([]float64, GroupStats, error) {
	a, st, err := GRPOOutcomeAdvantage(scores, groups, 0, false)
	if err != nil {
		return nil, st, err
	}
	if tokens != nil && len(tokens) != len(scores) {
		return nil, st, fmt.Errorf("grpo: %d scores but %d token counts", len(scores), len(tokens))
	}
	w := make([]float64, len(a))
	for i := range w {
		w[i] = 1
		if tokens != nil {
			if tokens[i] < 0 {
				return nil, st, fmt.Errorf("grpo: trajectory %d has %d trained tokens", i, tokens[i])
			}
			w[i] = float64(tokens[i])
		}
	}
	return whitenWeighted(a, w), st, nil
}

// whitenWeighted returns (x − m)/sqrt(v + 1e-8) where m and v are the mean and Bessel variance of
// the multiset holding x[i] w[i] times (verl's masked_whiten over the tokens). A total weight
// below 2 gives zeros.
func whitenWeighted(x, w []float64) []float64 {
	var n, sum float64
	for i := range x {
		n += w[i]
		sum += w[i] * x[i]
	}
	out := make([]float64, len(x))
	if n < 2 {
		return out
	}
	mean := sum / n
	var ss float64
	for i := range x {
		d := x[i] - mean
		ss += w[i] * d * d
	}
	inv := 1 / math.Sqrt(ss/(n-1)+1e-8)
	for i := range x {
		out[i] = (x[i] - mean) * inv
	}
	return out
}

// OutcomeAdvantage computes the outcome advantage of c.Estimator (grpo, drgrpo, grpo_multiturn,
// rloo, reinforce_plus_plus_baseline) for scores [B] with group ids [B]; tokens [B] are the trained
// tokens per trajectory, read only by reinforce_plus_plus_baseline (nil: one each). mt_grpo and gae
// need more than scores: use MTGRPOAdvantage, or GAEAdvantage. verl picks the function by name
// (get_adv_estimator_fn); this is that switch for the outcome estimators.
func OutcomeAdvantage(c AdvConfig, scores []float64, groups []int, tokens []int) ([]float64, GroupStats, error) {
	if err := c.Validate(); err != nil {
		return nil, GroupStats{}, err
	}
	switch c.Estimator {
	case EstGRPO, EstMultiTurnGRPO:
		if c.NormStd && c.StdOver == StdBatch {
			return GRPOBatchStdAdvantage(scores, groups, c.Eps)
		}
		return GRPOOutcomeAdvantage(scores, groups, c.Eps, c.NormStd)
	case EstDrGRPO:
		return GRPOOutcomeAdvantage(scores, groups, c.Eps, false)
	case EstRLOO:
		return RLOOAdvantage(scores, groups)
	case EstReinforcePPBaseline:
		return ReinforcePlusPlusBaselineAdvantage(scores, groups, tokens)
	}
	return nil, GroupStats{}, fmt.Errorf("grpo: estimator %q needs more than trajectory scores (see MTGRPOAdvantage, GAEAdvantage, ReinforcePlusPlusAdvantage)", c.Estimator)
}
