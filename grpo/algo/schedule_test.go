package algo

import (
	"math"
	"testing"
)

func TestLRSchedule(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	// Warmup 4 to peak 1e-3: steps 0..3 give 0.25, 0.5, 0.75, 1 times the peak.
	for step, want := range []float64{2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3} {
		if got := LR(1e-3, step, 4, 0, Constant, 0); !near(got, want) {
			t.Errorf("constant step %d: %g, want %g", step, got, want)
		}
	}
	// Cosine over total 10 with warmup 2, floor 0.1·peak: step 2 is the peak, step 6 is half way
	// (progress 4/8: cos(π/2) = 0 → floor + (peak-floor)/2 = 0.55), step 10 and beyond the floor.
	cases := map[int]float64{2: 1, 6: 0.55, 10: 0.1, 12: 0.1}
	for step, want := range cases {
		if got := LR(1, step, 2, 10, Cosine, 0.1); !near(got, want) {
			t.Errorf("cosine step %d: %g, want %g", step, got, want)
		}
	}
	if _, err := ParseSchedule("linear-ish"); err == nil {
		t.Error("unknown schedule accepted")
	}
}
