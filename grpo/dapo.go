package grpo

// DAPO's pieces that are decisions on the host (Yu et al., "DAPO: An Open-Source LLM
// Reinforcement Learning System at Scale", arXiv 2503.14476): dynamic sampling's group filter,
// the overlong buffer penalty, and masking truncated samples. Clip-higher is LossConfig.ClipHigh,
// token-level aggregation AggTokenMean. References: verl verl/workers/reward_manager/dapo.py
// (overlong buffer), verl recipe/dapo dapo_ray_trainer.py (filter_groups).

import (
	"math"
)

// FilterGroups is dynamic sampling's filter: it keeps the groups whose scores [B] (group ids [B])
// are not all equal, and singletons (as verl's recipe does; their advantage is 0 anyway). keep[i]
// says whether trajectory i stays; dropped lists the removed group ids in order of first
// appearance. The trainer keeps sampling until the batch holds enough kept groups, with a cap on
// the attempts (verl's max_num_gen_batches).
func FilterGroups(scores []float64, groups []int) (keep []bool, dropped []int, err error) {
	if err := checkScores(scores, groups); err != nil {
		return nil, nil, err
	}
	keep = make([]bool, len(scores))
	for _, g := range groupsOf(groups) {
		_, _, equal := moments(scores, g.members)
		drop := len(g.members) > 1 && equal
		if drop {
			dropped = append(dropped, g.id)
		}
		for _, i := range g.members {
			keep[i] = !drop
		}
	}
	return keep, dropped, nil
}

// Overlong is DAPO's soft overlong punishment (verl's reward_model.overlong_buffer).
type Overlong struct {
	// Buffer is the length of the buffer before the maximum length (overlong_buffer.len).
	Buffer int
	// Factor is the penalty at the maximum length (overlong_buffer.penalty_factor).
	Factor float64
}

// Validate names the first bad field against the maximum output length.
func (o Overlong) Validate(maxLen int) error {
	if o.Buffer <= 0 || o.Buffer > maxLen {
		return badKey("dapo.overlong_len", "%d, want 1..%d (the maximum length)", o.Buffer, maxLen)
	}
	if !(o.Factor >= 0) || math.IsInf(o.Factor, 1) {
		return badKey("dapo.overlong_factor", "%v, want a finite value ≥ 0", o.Factor)
	}
	return nil
}

// Penalty is the reward added to an output of n tokens when at most maxLen were allowed:
// min(−(n − (maxLen − Buffer))/Buffer·Factor, 0), i.e. 0 up to maxLen − Buffer tokens, then
// linear down to −Factor at maxLen.
func (o Overlong) Penalty(n, maxLen int) float64 {
	exceed := float64(n - (maxLen - o.Buffer))
	return math.Min(-exceed/float64(o.Buffer)*o.Factor, 0)
}

// TruncMask says which samples a truncated output (cut by the length limit) takes out of
// training. DAPO masks truncated samples ("overlong filtering"): their reward says more about
// length than about quality.
type TruncMask string

// Truncation masks.
const (
	// TruncOff trains truncated turns like any other.
	TruncOff TruncMask = "off"
	// TruncTurn masks the truncated turn only (rollout's DriverConfig.MaskTruncated).
	TruncTurn TruncMask = "turn"
	// TruncTrajectory masks every turn of a trajectory that has a truncated turn: the whole
	// trajectory is the "sample" DAPO filters.
	TruncTrajectory TruncMask = "trajectory"
)

var truncMasks = []TruncMask{TruncOff, TruncTurn, TruncTrajectory}

// ParseTruncMask reads a truncation mask; unknown values are an error naming the value.
func ParseTruncMask(s string) (TruncMask, error) {
	return parseEnum("truncation mask", s, truncMasks, nil)
}

// TrainedTurns decides per trajectory and turn, truncated [B][turns] → trained [B][turns],
// whether the turn's sample is trained under mode.
func TrainedTurns(mode TruncMask, truncated [][]bool) ([][]bool, error) {
	if err := checkEnum("truncation mask", mode, truncMasks); err != nil {
		return nil, err
	}
	out := make([][]bool, len(truncated))
	for i, turns := range truncated {
		any := false
		for _, tr := range turns {
			any = any || tr
		}
		out[i] = make([]bool, len(turns))
		for t, tr := range turns {
			switch mode {
			case TruncOff:
				out[i][t] = true
			case TruncTurn:
				out[i][t] = !tr
			case TruncTrajectory:
				out[i][t] = !any
			}
		}
	}
	return out, nil
}
