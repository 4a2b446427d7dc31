package grpo

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// The credit phase: trajectory rewards (shaped by the overlong penalty and a KL-in-reward term)
// become per-token advantages on the samples. Outcome estimators give one advantage per trajectory
// and broadcast it to every trained token of every turn (multi-turn GRPO with condensed contexts:
// each turn is its own sample, its context masked); MT-GRPO gives the turns up to the first tool
// result their own credit; GAE reads the critic's values token by token; REINFORCE++ discounts the
// rewards token by token without a critic.

// credit computes the advantages of every sample and records the reward and advantage metrics.
// Failed trajectories have no samples and take no part in the group statistics.
func (t *Trainer) credit(trajs []*rollout.Trajectory, samples []*sample, m Metrics) error {
	byTraj := map[int][]*sample{}
	for _, s := range samples {
		byTraj[s.traj] = append(byTraj[s.traj], s)
	}
	var idx []int // trajectories with samples, in batch order
	for i := range trajs {
		if len(byTraj[i]) > 0 {
			idx = append(idx, i)
		}
	}
	scores := make([]float64, len(idx))
	klRewards := make(map[*sample][]float64)
	for k, i := range idx {
		scores[k] = trajs[i].Reward + t.overlong(trajs[i])
		if t.cfg.Reward.KLCoef > 0 {
			for _, s := range byTraj[i] {
				r, err := t.klReward(s)
				if err != nil {
					return err
				}
				klRewards[s] = r
				if t.cfg.Advantage.Estimator.Outcome() || t.cfg.Advantage.Estimator == algo.EstMTGRPO {
					for _, v := range r {
						scores[k] += v
					}
				}
			}
		}
	}
	m.stat("critic/rewards", scores)
	var err error
	switch est := t.cfg.Advantage.Estimator; {
	case est.Outcome():
		err = t.outcomeCredit(trajs, idx, scores, byTraj, m)
	case est == algo.EstMTGRPO:
		err = t.mtCredit(trajs, idx, scores, byTraj, m)
	case est == algo.EstGAE:
		err = t.gaeCredit(trajs, idx, byTraj, klRewards)
	case est == algo.EstReinforcePP:
		err = t.reinforceCredit(trajs, idx, scores, byTraj, klRewards, m)
	default:
		err = fmt.Errorf("grpo: estimator %q has no credit assignment", est)
	}
	if err != nil {
		return err
	}
	var all []float64
	for _, s := range samples {
		for i, on := range s.Mask {
			if on {
				all = append(all, float64(s.adv[i]))
			}
		}
	}
	m.stat("critic/advantages", all)
	return nil
}

// outcomeCredit: one advantage per trajectory from its group (GRPO, Dr.GRPO, RLOO,
// REINFORCE++-baseline), on every trained token of every turn.
func (t *Trainer) outcomeCredit(trajs []*rollout.Trajectory, idx []int, scores []float64, byTraj map[int][]*sample, m Metrics) error {
	groups, tokens := make([]int, len(idx)), make([]int, len(idx))
	for k, i := range idx {
		groups[k] = trajs[i].Group
		for _, s := range byTraj[i] {
			tokens[k] += s.trained
		}
	}
	adv, st, err := algo.OutcomeAdvantage(t.cfg.Advantage, scores, groups, tokens)
	if err != nil {
		return err
	}
	m.groupStats(st)
	for k, i := range idx {
		for _, s := range byTraj[i] {
			s.setAdv(func(int) float64 { return adv[k] })
		}
	}
	return nil
}

// mtCredit: MT-GRPO's Â^out + c·Â^turn on the turns up to the first tool result, Â^out after,
// Â^comb without a tool result.
func (t *Trainer) mtCredit(trajs []*rollout.Trajectory, idx []int, scores []float64, byTraj map[int][]*sample, m Metrics) error {
	in := make([]algo.MTTrajectory, len(idx))
	for k, i := range idx {
		tr := trajs[i]
		in[k] = algo.MTTrajectory{Group: tr.Group, Outcome: scores[k], Turn: tr.Score.TurnReward, Turns: len(tr.Turns),
			ToolTurn: firstToolResult(tr)}
	}
	adv, st, err := algo.MTGRPOAdvantage(in, t.cfg.Advantage)
	if err != nil {
		return err
	}
	m.groupStats(st.Outcome)
	for k, i := range idx {
		for _, s := range byTraj[i] {
			a := adv[k][s.turn]
			s.setAdv(func(int) float64 { return a })
		}
	}
	return nil
}

// groupStats records the advantage phase's group statistics. frac_reward_zero_std keeps the value
// measured on the rollout before dynamic sampling filtered anything.
func (m Metrics) groupStats(st algo.GroupStats) {
	for k, v := range st.Metrics() {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
}

// firstToolResult is the index of the turn whose tool call brought the trajectory's first tool
// result (a tool message, an error reported by the tool included), or -1.
func firstToolResult(tr *rollout.Trajectory) int {
	for k, tu := range tr.Turns {
		for _, msg := range tu.Step.Messages {
			if msg.Role == "tool" {
				return k
			}
		}
	}
	return -1
}

// gaeCredit: per-token advantages and returns from the critic's values (plain or bi-level GAE),
// with turn rewards on each turn's last trained token and the trajectory reward on the last turn.
func (t *Trainer) gaeCredit(trajs []*rollout.Trajectory, idx []int, byTraj map[int][]*sample, kl map[*sample][]float64) error {
	in := make([][]algo.GAETurn, len(idx))
	for k, i := range idx {
		tr := trajs[i]
		ss := byTraj[i]
		for j, s := range ss {
			turn := algo.GAETurn{Values: s.trainedValues(s.values), Reward: tr.Turns[s.turn].Reward}
			if j == len(ss)-1 {
				turn.Reward += tr.Reward + t.overlong(tr)
			}
			turn.TokenRewards = kl[s]
			in[k] = append(in[k], turn)
		}
	}
	adv, ret, err := algo.GAEAdvantage(in, t.cfg.Advantage.GAE)
	if err != nil {
		return err
	}
	for k, i := range idx {
		for j, s := range byTraj[i] {
			a, r := adv[k][j], ret[k][j]
			s.setAdv(func(n int) float64 { return a[n] })
			s.returns = s.spread(r)
		}
	}
	return nil
}

// reinforceCredit: REINFORCE++'s per-token advantages, the discounted rewards (turn rewards on
// each turn's last trained token, the trajectory's reward and overlong penalty on the last turn's,
// KL rewards on their tokens) whitened over the batch. The groups only feed the metrics.
func (t *Trainer) reinforceCredit(trajs []*rollout.Trajectory, idx []int, scores []float64, byTraj map[int][]*sample,
	kl map[*sample][]float64, m Metrics) error {
	in := make([][]algo.RewardTurn, len(idx))
	groups := make([]int, len(idx))
	for k, i := range idx {
		tr := trajs[i]
		groups[k] = tr.Group
		ss := byTraj[i]
		for j, s := range ss {
			turn := algo.RewardTurn{Tokens: s.trained, Reward: tr.Turns[s.turn].Reward, TokenRewards: kl[s]}
			if j == len(ss)-1 {
				turn.Reward += tr.Reward + t.overlong(tr)
			}
			in[k] = append(in[k], turn)
		}
	}
	_, st, err := algo.GRPOOutcomeAdvantage(scores, groups, 0, false)
	if err != nil {
		return err
	}
	m.groupStats(st)
	adv, _, err := algo.ReinforcePlusPlusAdvantage(in, t.cfg.Advantage.GAE.Gamma)
	if err != nil {
		return err
	}
	for k, i := range idx {
		for j, s := range byTraj[i] {
			a := adv[k][j]
			s.setAdv(func(n int) float64 { return a[n] })
		}
	}
	return nil
}

// overlong is DAPO's overlong penalty of a trajectory: the penalty of its longest output against
// the per-turn limit (0 when off).
func (t *Trainer) overlong(tr *rollout.Trajectory) float64 {
	d := t.cfg.DAPO
	if d.OverlongLen == 0 {
		return 0
	}
	longest := 0
	for _, tu := range tr.Turns {
		longest = max(longest, len(tu.Output))
	}
	return algo.Overlong{Buffer: d.OverlongLen, Factor: d.OverlongFactor}.Penalty(longest, t.maxNewTokens())
}

// maxNewTokens is the per-turn output limit in effect.
func (t *Trainer) maxNewTokens() int {
	if n := t.cfg.Rollout.Sampling.MaxNewTokens; n > 0 {
		return n
	}
	return rollout.DefaultMaxNewTokens
}

// klReward is −β·KL(ℓ, ℓ_ref) for each trained token of s, in order.
func (t *Trainer) klReward(s *sample) ([]float64, error) {
	lp, ref := s.trainedValues(s.logProbsNow()), s.trainedValues(s.ref)
	r, _, err := algo.KLRewards(t.cfg.Reward.KLKind, lp, ref, t.cfg.Reward.KLCoef)
	return r, err
}

// setAdv gives the n-th trained token of s the advantage a(n) (0 elsewhere).
func (s *sample) setAdv(a func(n int) float64) {
	s.adv = make([]float32, len(s.IDs))
	n := 0
	for i, on := range s.Mask {
		if on {
			s.adv[i] = float32(a(n))
			n++
		}
	}
}

// trainedValues lists v at the trained tokens of s, in order.
func (s *sample) trainedValues(v []float32) []float64 {
	out := make([]float64, 0, s.trained)
	for i, on := range s.Mask {
		if on {
			out = append(out, float64(v[i]))
		}
	}
	return out
}

// spread places one value per trained token back at the tokens' positions.
func (s *sample) spread(v []float64) []float32 {
	out := make([]float32, len(s.IDs))
	n := 0
	for i, on := range s.Mask {
		if on {
			out[i] = float32(v[n])
			n++
		}
	}
	return out
}

// logProbsNow is the policy's log-probs of s before this step's update: ℓ_old when computed,
// else the sampler's (equal up to rounding on the same weights; see the sampler-vs-trainer metric).
func (s *sample) logProbsNow() []float32 {
	if s.old != nil {
		return s.old
	}
	return s.LogProbs
}
