package algo

// DAPO's overlong buffer penalty (Yu et al., "DAPO: An Open-Source LLM Reinforcement Learning
// System at Scale", arXiv 2503.14476). Its other pieces live where they act: clip-higher is
// grpo.LossConfig.ClipHigh, token-level aggregation AggTokenMean, dynamic sampling's group filter
// the trainer's rollout phase (grpo/collect.go), overlong filtering rollout's MaskTruncated.
// Reference: verl verl/workers/reward_manager/dapo.py (overlong buffer).

import (
	"math"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Overlong is DAPO's soft overlong punishment (verl's reward_model.overlong_buffer).
type Overlong struct {
	// Buffer is the length of the buffer before the maximum length (overlong_buffer.len).
	Buffer int
	// Factor is the penalty at the maximum length (overlong_buffer.penalty_factor).
	Factor float64
}

// Validate names the first bad field against the maximum output length.
func (o Overlong) Validate(maxLen int) error {
	return setting.Check(setting.In("dapo.overlong_len", o.Buffer, 1, maxLen).Because("the maximum output length"),
		setting.AtLeast("dapo.overlong_factor", o.Factor, 0))
}

// Penalty is the reward added to an output of n tokens when at most maxLen were allowed:
// min(−(n − (maxLen − Buffer))/Buffer·Factor, 0), i.e. 0 up to maxLen − Buffer tokens, then
// linear down to −Factor at maxLen.
func (o Overlong) Penalty(n, maxLen int) float64 {
	exceed := float64(n - (maxLen - o.Buffer))
	return math.Min(-exceed/float64(o.Buffer)*o.Factor, 0)
}
