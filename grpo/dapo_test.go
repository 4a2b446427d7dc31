package grpo

import (
	"slices"
	"strings"
	"testing"
)

func TestFilterGroups(t *testing.T) {
	// Group 2: all 1 (dropped); group 9: mixed (kept); group 4: a singleton (kept, as verl's
	// recipe keeps it); group 0: all 0 (dropped).
	keep, dropped, err := FilterGroups([]float64{1, 0, 1, 1, 0.5, 0, 0}, []int{2, 9, 2, 9, 4, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true, false, true, true, false, false}; !slices.Equal(keep, want) {
		t.Errorf("keep = %v, want %v", keep, want)
	}
	if want := []int{2, 0}; !slices.Equal(dropped, want) {
		t.Errorf("dropped = %v, want %v", dropped, want)
	}
}

func TestOverlongPenalty(t *testing.T) {
	// Max 100 tokens, buffer 20, factor 1: no penalty up to 80 tokens, then −(n − 80)/20.
	o := Overlong{Buffer: 20, Factor: 1}
	if err := o.Validate(100); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]float64{10: 0, 80: 0, 85: -0.25, 90: -0.5, 100: -1} {
		if got := o.Penalty(n, 100); !near(got, want, 1e-15) {
			t.Errorf("Penalty(%d) = %v, want %v", n, got, want)
		}
	}
	// Factor 0.5 halves it.
	if got := (Overlong{Buffer: 20, Factor: 0.5}).Penalty(90, 100); !near(got, -0.25, 1e-15) {
		t.Errorf("factor 0.5: %v, want -0.25", got)
	}
	expectErr(t, "buffer too long", Overlong{Buffer: 200, Factor: 1}.Validate(100), "dapo.overlong_len", "200")
	expectErr(t, "negative factor", Overlong{Buffer: 20, Factor: -1}.Validate(100), "dapo.overlong_factor")
}

func TestTrainedTurns(t *testing.T) {
	truncated := [][]bool{{false, true, false}, {false, false}, {}}
	for mode, want := range map[TruncMask][][]bool{
		TruncOff:        {{true, true, true}, {true, true}, {}},
		TruncTurn:       {{true, false, true}, {true, true}, {}},
		TruncTrajectory: {{false, false, false}, {true, true}, {}},
	} {
		got, err := TrainedTurns(mode, truncated)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("%s: trajectory %d: %v, want %v", mode, i, got[i], want[i])
			}
		}
	}
	_, err := TrainedTurns("sample", truncated)
	expectErr(t, "unknown", err, `"sample"`)
	if m, err := ParseTruncMask("trajectory"); err != nil || m != TruncTrajectory {
		t.Errorf("ParseTruncMask = %q, %v", m, err)
	}
}

func TestKLValueAndRewards(t *testing.T) {
	// δ = ℓ − ℓ_ref = −1 − (−1.5) = 0.5: k1 = 0.5, k2 = 0.125, k3 = e^−0.5 + 0.5 − 1 = 0.10653065971263342,
	// abs = 0.5; δ = −0.5 (ℓ and ℓ_ref swapped): k1 = −0.5, abs = 0.5.
	for kind, want := range map[KLKind]float64{KLK1: 0.5, KLK2: 0.125, KLK3: 0.10653065971263342, KLAbs: 0.5} {
		if got, err := KLValue(kind, -1, -1.5); err != nil || !near(got, want, 1e-15) {
			t.Errorf("%s = %.17g (%v), want %.17g", kind, got, err, want)
		}
	}
	if got, _ := KLValue(KLAbs, -1.5, -1); got != 0.5 {
		t.Errorf("abs(δ=−0.5) = %v, want 0.5", got)
	}
	if got, _ := KLValue(KLK1, -1.5, -1); got != -0.5 {
		t.Errorf("k1(δ=−0.5) = %v, want −0.5", got)
	}
	// k3's clamps: δ = 30 → exponent −30 clamped to −20: e^−20 + 20 − 1 ≈ 19 → clamped to 10;
	// δ = −30 → e^20 − 20 − 1 → 10. k3 is never negative.
	if got, _ := KLValue(KLK3, 0, -30); got != 10 {
		t.Errorf("k3(δ=30) = %v, want 10", got)
	}
	if got, _ := KLValue(KLK3, -30, 0); got != 10 {
		t.Errorf("k3(δ=−30) = %v, want 10", got)
	}
	// An unknown estimator is an error naming it (verl's "full" needs whole distributions).
	if _, err := KLValue("full", 0, 0); err == nil || !strings.Contains(err.Error(), `"full"`) {
		t.Errorf("KLValue(full): %v, want an error naming it", err)
	}
	if k, err := ParseKLKind("abs"); err != nil || k != KLAbs {
		t.Errorf("ParseKLKind(abs) = %q, %v", k, err)
	}
	// KL in the reward, β = 0.1, k1: KL (0.5, 0) → rewards (−0.05, 0), mean KL 0.25.
	r, mean, err := KLRewards(KLK1, []float64{-1, -2}, []float64{-1.5, -2}, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	expectSlice(t, "KL rewards", r, []float64{-0.05, 0}, 1e-15)
	if !near(mean, 0.25, 1e-15) {
		t.Errorf("mean KL = %v, want 0.25", mean)
	}
	_, _, err = KLRewards(KLK1, []float64{-1}, []float64{-1, -2}, 0.1)
	expectErr(t, "lengths", err, "1 log-probs", "2 reference")
	for s, want := range map[string]KLKind{"kl": KLK1, "mse": KLK2, "low_var_kl": KLK3, "k3": KLK3} {
		if got, err := ParseKLKind(s); err != nil || got != want {
			t.Errorf("ParseKLKind(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	_, err = ParseKLKind("full")
	expectErr(t, "ParseKLKind", err, `"full"`)
}
