package report

import (
	"slices"
	"testing"
)

// Labels fall on round steps written with just the decimals they need: [0, 641.55] steps by 200
// (641.55/5 = 128 rounds up to 200), [1.5, 1.7] by 0.05, [0, 1] by 0.2, [0, 2.625] by 1 (0.525
// rounds up to 1), [-0.06, 0.06] by 0.025.
func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 641.55, []string{"0", "200", "400", "600"}},
		{1.5, 1.7, []string{"1.50", "1.55", "1.60", "1.65", "1.70"}},
		{0, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{0, 2.625, []string{"0", "1", "2"}},
		{-0.06, 0.06, []string{"-0.050", "-0.025", "0.000", "0.025", "0.050"}},
		{0, 1e6, []string{"0", "200000", "400000", "600000", "800000", "1000000"}},
	} {
		var got []string
		for _, tk := range (niceTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("[%v, %v]: %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}
