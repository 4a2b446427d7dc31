package algo

import (
	"math"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Schedule is the learning-rate schedule after warmup.
type Schedule string

// Schedules.
const (
	// Constant keeps the peak learning rate after warmup (verl's and TRL's default for RL).
	Constant Schedule = "constant"
	// Cosine decays from the peak to MinLRRatio·peak over the remaining steps (half a cosine).
	Cosine Schedule = "cosine"
)

// ParseSchedule reads a schedule name.
func ParseSchedule(s string) (Schedule, error) {
	return setting.Parse("lr schedule", s, []Schedule{Constant, Cosine}, nil)
}

// UnmarshalText reads a schedule's name as ParseSchedule does (YAML, flags).
func (s *Schedule) UnmarshalText(b []byte) error { return setting.Decode(s, b, ParseSchedule) }

// LR is the learning rate of optimizer step `step` (0-based) out of `total` steps: a linear warmup
// from peak/warmup to peak over the first `warmup` steps (as torch's LinearLR/Hugging Face's
// get_*_schedule_with_warmup, which start at step 1/warmup rather than 0 so the first update is not
// wasted), then the schedule. total <= 0 means unknown (cosine then stays at the peak).
func LR(peak float64, step, warmup, total int, s Schedule, minRatio float64) float64 {
	if warmup > 0 && step < warmup {
		return peak * float64(step+1) / float64(warmup)
	}
	if s != Cosine || total <= warmup {
		return peak
	}
	progress := float64(step-warmup) / float64(max(1, total-warmup))
	progress = min(progress, 1)
	floor := peak * minRatio
	return floor + (peak-floor)*0.5*(1+math.Cos(math.Pi*progress))
}
