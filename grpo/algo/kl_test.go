package algo

import (
	"strings"
	"testing"
)

func TestKLPenaltyAndRewards(t *testing.T) {
	// δ = ℓ − ℓ_ref = −1 − (−1.5) = 0.5: k1 = 0.5, k2 = 0.125, k3 = e^−0.5 + 0.5 − 1 = 0.10653065971263342,
	// abs = 0.5; δ = −0.5 (ℓ and ℓ_ref swapped): k1 = −0.5, abs = 0.5.
	for kind, want := range map[KLKind]float64{KLK1: 0.5, KLK2: 0.125, KLK3: 0.10653065971263342, KLAbs: 0.5} {
		if got, err := KLPenalty(kind, -1, -1.5); err != nil || !near(got, want, 1e-15) {
			t.Errorf("%s = %.17g (%v), want %.17g", kind, got, err, want)
		}
	}
	if got, _ := KLPenalty(KLAbs, -1.5, -1); got != 0.5 {
		t.Errorf("abs(δ=−0.5) = %v, want 0.5", got)
	}
	if got, _ := KLPenalty(KLK1, -1.5, -1); got != -0.5 {
		t.Errorf("k1(δ=−0.5) = %v, want −0.5", got)
	}
	// k3's clamps: δ = 30 → exponent −30 clamped to −20: e^−20 + 20 − 1 ≈ 19 → clamped to 10;
	// δ = −30 → e^20 − 20 − 1 → 10. k3 is never negative.
	if got, _ := KLPenalty(KLK3, 0, -30); got != 10 {
		t.Errorf("k3(δ=30) = %v, want 10", got)
	}
	if got, _ := KLPenalty(KLK3, -30, 0); got != 10 {
		t.Errorf("k3(δ=−30) = %v, want 10", got)
	}
	// An unknown estimator is an error naming it (verl's "full" needs whole distributions).
	if _, err := KLPenalty("full", 0, 0); err == nil || !strings.Contains(err.Error(), `"full"`) {
		t.Errorf("KLPenalty(full): %v, want an error naming it", err)
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
	if err := KLAbs.Validate("loss.kl_kind"); err != nil {
		t.Errorf("abs: %v", err)
	}
	expectErr(t, "Validate", KLKind("kl").Validate("loss.kl_kind"), "loss.kl_kind", `"kl"`, "k1, k2, k3, abs")
}
