package grpo

import (
	"math"
	"testing"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/torch"
)

// ppoCase is six tokens in a [2, 3] layout, the last one padding with garbage in every input.
// ε_low = ε_high = 0.2, token-mean over 5 trained tokens (w = 0.2):
//
//	t0: A = +1, ρ = 1.1  unclipped       L = −1.1            dL/dℓ = −A·ρ = −1.1
//	t1: A = +1, ρ = 1.5  clipped at 1.2  L = −1.2            dL/dℓ = 0
//	t2: A = −1, ρ = 0.5  clipped at 0.8  L = 0.8             dL/dℓ = 0
//	t3: A = −2, ρ = 5    max(10, 2.4) = 10; dual clip c = 3: min(10, 6) = 6, dL/dℓ = 0
//	                     (without dual clip L = 10, dL/dℓ = −A·ρ = 10)
//	t4: A = −1, ρ = 2    max(2, 1.2) = 2 < 3 = −A·c: L = 2, dL/dℓ = 2
func ppoCase() LossInputs {
	old := []float64{-1, -2, -0.5, -3, -1.5, math.NaN()}
	lp := append(addLn(old[:5], []float64{1.1, 1.5, 0.5, 5, 2}), 7)
	return LossInputs{
		LogProbs:   leaf(lp, 2, 3),
		Old:        tf(old, 2, 3),
		Advantages: tf([]float64{1, 1, -1, -2, -1, 100}, 2, 3),
		Weights:    tf([]float64{0.2, 0.2, 0.2, 0.2, 0.2, 0}, 2, 3),
		Mask:       tf([]float64{1, 1, 1, 1, 1, 0}, 2, 3),
	}
}

func TestLossPPOClipHandWorked(t *testing.T) {
	onTorch(t, func() {
		in := ppoCase()
		c := DefaultLossConfig()
		c.DualClip = 3
		loss, st, err := Loss(c, in)
		if err != nil {
			t.Error(err)
			return
		}
		// Σ w·L = 0.2·(−1.1 − 1.2 + 0.8 + 6 + 2) = 1.3; gradient w·dL/dℓ.
		if got := loss.Float(); !near(got, 1.3, 1e-5) {
			t.Errorf("dual clip: loss = %.7g, want 1.3", got)
		}
		expectSlice(t, "dual clip: dloss/dℓ", grad(loss, in.LogProbs), []float64{-0.22, 0, 0, 0, 0.4, 0}, 1e-5)
		// Clipped: t1, t2 (2/5); dual clip: t3 (1/5); ppo_kl = mean(ℓ_old − ℓ) = −ln(1.1·1.5·0.5·5·2)/5.
		expectMetrics(t, "dual clip", st.Metrics(1), map[string]float64{
			"actor/pg_loss": 1.3, "actor/pg_clipfrac": 0.4, "actor/pg_clipfrac_lower": 0.2,
			"actor/ppo_kl": -math.Log(8.25) / 5, "actor/loss_tokens": 5,
			"actor/kl_loss": math.NaN(), "actor/entropy": math.NaN(), "rollout_corr/rollout_is_mean": math.NaN(),
		}, 1e-5)

		c.DualClip = 0
		loss, st, _ = Loss(c, in)
		// Without dual clip t3 keeps L = 10: 0.2·(−1.1 − 1.2 + 0.8 + 10 + 2) = 2.1.
		if got := loss.Float(); !near(got, 2.1, 1e-5) {
			t.Errorf("no dual clip: loss = %.7g, want 2.1", got)
		}
		expectSlice(t, "no dual clip: dloss/dℓ", grad(loss, in.LogProbs), []float64{-0.22, 0, 0, 2, 0.4, 0}, 1e-5)
		expectMetrics(t, "no dual clip", st.Metrics(1), map[string]float64{"actor/pg_clipfrac_lower": 0}, 0)

		// Clip-higher ε_high = 0.28 leaves t1 clipped at 1.28: 0.2·(−1.1 − 1.28 + 0.8 + 10 + 2).
		c.ClipHigh = 0.28
		loss, _, _ = Loss(c, in)
		if got := loss.Float(); !near(got, 0.2*10.42, 1e-5) {
			t.Errorf("clip-higher: loss = %.7g, want %.7g", got, 0.2*10.42)
		}
	})
}

// TestLossOnPolicyGradient: with ℓ_old = ℓ.detach() the ratio is 1, the loss is −Σ w·A and the
// gradient is −w·A on every token (the policy gradient).
func TestLossOnPolicyGradient(t *testing.T) {
	onTorch(t, func() {
		in := LossInputs{
			LogProbs:   leaf([]float64{-0.3, -2, -1.2}, 3),
			Advantages: tf([]float64{0.5, -1.5, 2}, 3),
			Weights:    tf([]float64{0.25, 0.5, 0.25}, 3),
			Mask:       tf([]float64{1, 1, 1}, 3),
		}
		loss, st, err := Loss(DefaultLossConfig(), in)
		if err != nil {
			t.Error(err)
			return
		}
		// −(0.25·0.5 − 0.5·1.5 + 0.25·2) = 0.125.
		if got := loss.Float(); !near(got, 0.125, 1e-6) {
			t.Errorf("loss = %v, want 0.125", got)
		}
		expectSlice(t, "dloss/dℓ", grad(loss, in.LogProbs), []float64{-0.125, 0.75, -0.5}, 1e-6)
		expectMetrics(t, "on-policy", st.Metrics(1), map[string]float64{"actor/pg_clipfrac": 0, "actor/ppo_kl": 0}, 0)
	})
}

func TestLossGSPOSequencesOfDifferentLengths(t *testing.T) {
	// Sample 0: t0, t1 (2 tokens), ℓ − ℓ_old = 0.1, 0.3: s_0 = e^0.2 = 1.2214028, A = +1.
	// Sample 1: t2, t3, t4 (3 tokens), ℓ − ℓ_old = −0.05, 0.1, 0.1: s_1 = e^0.05 = 1.0512711,
	// A = −0.5. t5 is padding with sample index 0 and a log-ratio of 5 that must not reach s_0.
	// seq-mean-token-mean weights: 1/(2·2) = 0.25 for sample 0, 1/(2·3) for sample 1.
	old := []float64{-1, -2, -1.5, -0.7, -2.2, -1}
	lp := []float64{-0.9, -1.7, -1.55, -0.6, -2.1, 4}
	in := func() LossInputs {
		return LossInputs{
			LogProbs:   leaf(lp, 2, 3),
			Old:        tf(old, 2, 3),
			Advantages: tf([]float64{1, 1, -0.5, -0.5, -0.5, 9}, 2, 3),
			Weights:    tf([]float64{0.25, 0.25, 1. / 6, 1. / 6, 1. / 6, 0}, 2, 3),
			Mask:       tf([]float64{1, 1, 1, 1, 1, 0}, 2, 3),
			Sample:     ti([]int64{0, 0, 1, 1, 1, 0}, 2, 3),
			Samples:    2,
		}
	}
	s0, s1 := math.Exp(0.2), math.Exp(0.05)
	onTorch(t, func() {
		c := DefaultLossConfig()
		c.Policy = PolicyGSPO
		x := in()
		loss, st, err := Loss(c, x)
		if err != nil {
			t.Error(err)
			return
		}
		// GSPO's ε (3e-4, 4e-4): s_0 is clipped to 1.0004, L = −1.0004 on both tokens, no gradient.
		// Sample 1 (A < 0): max(0.5·s_1, 0.5·1.0004) = 0.5·s_1, unclipped, the same gradient
		// w·(−A)·s_1 = s_1/12 on each of its tokens whatever their own ratios.
		// Σ w·L = 2·0.25·(−1.0004) + 3·(1/6)·0.5·s_1 = −0.5002 + 0.25·s_1.
		if got, want := loss.Float(), -0.5002+0.25*s1; !near(got, want, 1e-5) {
			t.Errorf("loss = %.7g, want %.7g", got, want)
		}
		expectSlice(t, "dloss/dℓ", grad(loss, x.LogProbs), []float64{0, 0, s1 / 12, s1 / 12, s1 / 12, 0}, 1e-6)
		expectMetrics(t, "gspo", st.Metrics(1), map[string]float64{"actor/pg_clipfrac": 0.4}, 1e-6)

		// A wide clip (0.3) leaves s_0 unclipped: L = −s_0 per token, gradient 0.25·(−1)·s_0.
		// Σ w·L = 0.5·(−s_0) + 0.25·s_1.
		c.GSPOClipLow, c.GSPOClipHigh = 0.3, 0.3
		x = in()
		loss, _, _ = Loss(c, x)
		if got, want := loss.Float(), -0.5*s0+0.25*s1; !near(got, want, 1e-5) {
			t.Errorf("wide clip: loss = %.7g, want %.7g", got, want)
		}
		expectSlice(t, "wide clip: dloss/dℓ", grad(loss, x.LogProbs), []float64{-0.25 * s0, -0.25 * s0, s1 / 12, s1 / 12, s1 / 12, 0}, 1e-5)
	})
}

func TestLossCISPOKeepsClippedGradients(t *testing.T) {
	// t0: ℓ_old = −1, ρ = 1.5, A = +1: ρ̂ = clip(1.5) = 1.2, L = −1.2·ℓ = −1.2·(−1 + ln 1.5) =
	// 0.71344186, dL/dℓ = −1.2 (clipped, yet it keeps its gradient).
	// t1: ℓ = ℓ_old = −2, A = −1: L = −1·(−1)·(−2) = −2, dL/dℓ = 1.
	// w = 0.5 each: Σ w·L = 0.5·(0.71344186 − 2) = −0.64327907.
	onTorch(t, func() {
		c := DefaultLossConfig()
		c.Policy = PolicyCISPO
		in := LossInputs{
			LogProbs:   leaf([]float64{-1 + math.Log(1.5), -2, 0}, 1, 3),
			Old:        tf([]float64{-1, -2, 0}, 1, 3),
			Advantages: tf([]float64{1, -1, 0}, 1, 3),
			Weights:    tf([]float64{0.5, 0.5, 0}, 1, 3),
			Mask:       tf([]float64{1, 1, 0}, 1, 3),
		}
		loss, st, err := Loss(c, in)
		if err != nil {
			t.Error(err)
			return
		}
		if got := loss.Float(); !near(got, -0.64327907, 1e-6) {
			t.Errorf("loss = %.8g, want −0.64327907", got)
		}
		expectSlice(t, "dloss/dℓ", grad(loss, in.LogProbs), []float64{-0.6, 0.5, 0}, 1e-6)
		expectMetrics(t, "cispo", st.Metrics(1), map[string]float64{"actor/pg_clipfrac": 0.5}, 1e-6)
	})
}

func TestLossKLAndEntropy(t *testing.T) {
	// Advantages 0, so only KL and entropy act. t0: δ = ℓ − ℓ_ref = −1 − (−1.5) = 0.5; t1: δ = 0;
	// t2 padding (reference NaN). β = 0.1, k3: KL = (e^−0.5 + 0.5 − 1, 0) = (0.10653066, 0);
	// d k3/dℓ = 1 − e^(ℓ_ref − ℓ) = 1 − e^−0.5 = 0.39346934. Entropy H = (2, 4), c_H = 0.01.
	// w = 0.5: loss = 0.1·0.5·0.10653066 − 0.01·0.5·(2 + 4) = 0.00532653 − 0.03 = −0.02467347;
	// dloss/dℓ = (0.1·0.5·0.39346934, 0) = (0.01967347, 0); dloss/dH = −0.01·0.5 = −0.005.
	onTorch(t, func() {
		c := DefaultLossConfig()
		c.KLCoef, c.EntropyCoef = 0.1, 0.01
		in := LossInputs{
			LogProbs:   leaf([]float64{-1, -2, -3}, 3),
			Ref:        tf([]float64{-1.5, -2, math.NaN()}, 3),
			Advantages: tf([]float64{0, 0, 0}, 3),
			Weights:    tf([]float64{0.5, 0.5, 0}, 3),
			Mask:       tf([]float64{1, 1, 0}, 3),
			Entropy:    leaf([]float64{2, 4, math.Inf(1)}, 3),
		}
		loss, st, err := Loss(c, in)
		if err != nil {
			t.Error(err)
			return
		}
		if got := loss.Float(); !near(got, -0.02467347, 1e-7) {
			t.Errorf("loss = %.8g, want −0.02467347", got)
		}
		expectSlice(t, "dloss/dℓ", grad(loss, in.LogProbs), []float64{0.01967347, 0, 0}, 1e-7)
		expectSlice(t, "dloss/dH", grad(loss, in.Entropy), []float64{-0.005, -0.005, 0}, 1e-7)
		// kl_loss = Σ w·KL = 0.05326533; entropy = token mean (2 + 4)/2.
		expectMetrics(t, "kl+entropy", st.Metrics(1), map[string]float64{"actor/kl_loss": 0.05326533, "actor/entropy": 3}, 1e-7)

		// k1 and k2 in the loss: Σ w·β·KL with KL = δ or δ²/2: 0.1·0.5·0.5 and 0.1·0.5·0.125;
		// gradients β·w·1 and β·w·δ.
		c.EntropyCoef = 0
		for kind, want := range map[algo.KLKind][2]float64{algo.KLK1: {0.025, 0.05}, algo.KLK2: {0.00625, 0.025}} {
			c.KLKind = kind
			loss, _, _ := Loss(c, in)
			if got := loss.Float(); !near(got, want[0], 1e-7) {
				t.Errorf("%s: loss = %.8g, want %v", kind, got, want[0])
			}
			expectSlice(t, string(kind)+": dloss/dℓ[0]", grad(loss, in.LogProbs)[:1], want[1:], 1e-7)
		}
	})
}

func TestTokenKLMatchesKLPenalty(t *testing.T) {
	lp := []float64{-1, -0.2, -3, 0, -30, -0.5}
	ref := []float64{-1.5, -0.2, -1, -30, 0, -0.25}
	onTorch(t, func() {
		for _, kind := range []algo.KLKind{algo.KLK1, algo.KLK2, algo.KLK3, algo.KLAbs} {
			kl, err := TokenKL(kind, tf(lp, 6), tf(ref, 6))
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, len(lp))
			for i := range lp {
				want[i], _ = algo.KLPenalty(kind, lp[i], ref[i])
			}
			expectSlice(t, string(kind), kl.Float64s(), want, 1e-5)
		}
		if _, err := TokenKL("full", tf(lp, 6), tf(ref, 6)); err == nil {
			t.Error("TokenKL(full): no error")
		}
	})
}

// TestPPOKLClampedAsTheRatio: actor/ppo_kl is the mean of −clamp(ℓ − ℓ_old, ±20), the clamp the
// ratio uses (verl's compute_policy_loss_vanilla). δ = ℓ − ℓ_old = 25, −30, 1 on three tokens:
// clamped 20, −20, 1 → ppo_kl = −(20 − 20 + 1)/3 = −1/3 (unclamped it would be −(25 − 30 + 1)/3 = 4/3).
func TestPPOKLClampedAsTheRatio(t *testing.T) {
	onTorch(t, func() {
		old := []float64{-30, -1, -2}
		in := LossInputs{
			LogProbs:   leaf([]float64{-5, -31, -1}, 3),
			Old:        tf(old, 3),
			Advantages: tf([]float64{0, 0, 0}, 3),
			Weights:    tf([]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, 3),
			Mask:       tf([]float64{1, 1, 1}, 3),
		}
		_, st, err := Loss(DefaultLossConfig(), in)
		if err != nil {
			t.Fatal(err)
		}
		expectMetrics(t, "clamped", st.Metrics(1), map[string]float64{"actor/ppo_kl": -1.0 / 3}, 1e-6)
	})
}

// TestLossKLAbs: the abs estimator in the loss, β = 0.1, w = 0.5 on two tokens with δ = 0.5 and
// −0.5: loss = 0.1·0.5·(0.5 + 0.5) = 0.05; dloss/dℓ = β·w·sign(δ) = (0.05, −0.05).
func TestLossKLAbs(t *testing.T) {
	onTorch(t, func() {
		c := DefaultLossConfig()
		c.KLCoef, c.KLKind = 0.1, algo.KLAbs
		in := LossInputs{
			LogProbs:   leaf([]float64{-1, -2}, 2),
			Ref:        tf([]float64{-1.5, -1.5}, 2),
			Advantages: tf([]float64{0, 0}, 2),
			Weights:    tf([]float64{0.5, 0.5}, 2),
			Mask:       tf([]float64{1, 1}, 2),
		}
		loss, st, err := Loss(c, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := loss.Float(); !near(got, 0.05, 1e-7) {
			t.Errorf("loss = %.8g, want 0.05", got)
		}
		expectSlice(t, "dloss/dℓ", grad(loss, in.LogProbs), []float64{0.05, -0.05}, 1e-7)
		expectMetrics(t, "abs", st.Metrics(1), map[string]float64{"actor/kl_loss": 0.5}, 1e-7)
	})
}

// isCase: four trained tokens with ℓ_old = ℓ (ρ = 1, A = 1, so L_pg = −1) and sampler log-probs
// such that ℓ_old − ℓ_roll = ln 3, 0, ln 0.25, ln 4; samples {t0, t1} and {t2, t3}; t4 padding
// with a NaN sampler log-prob. w = 0.25; ISMin 0.5, ISMax 2.
func isCase() LossInputs {
	lp := []float64{-1, -1, -1, -1, -1}
	roll := []float64{-1 - math.Log(3), -1, -1 - math.Log(0.25), -1 - math.Log(4), math.NaN()}
	return LossInputs{
		LogProbs:   leaf(lp, 5),
		Rollout:    tf(roll, 5),
		Advantages: tf([]float64{1, 1, 1, 1, 1}, 5),
		Weights:    tf([]float64{0.25, 0.25, 0.25, 0.25, 0}, 5),
		Mask:       tf([]float64{1, 1, 1, 1, 0}, 5),
		Sample:     ti([]int64{0, 0, 1, 1, 0}, 5),
		Samples:    2,
	}
}

func TestLossImportanceSampling(t *testing.T) {
	// Token ratios 3, 1, 0.25, 4; sequence ratios 3 (sample 0) and 0.25·4 = 1 (sample 1).
	// The weights, the loss −Σ w·w_IS and the statistics of each mode:
	ln3, ln4 := math.Log(3), math.Log(4)
	cases := []struct {
		mode                ISMode
		w                   []float64
		max, min, high, low float64
	}{
		{ISTokenTruncate, []float64{2, 1, 0.5, 2}, 4, 0.25, 0.5, 0.25},
		{ISTokenMask, []float64{0, 1, 0, 0}, 4, 0.25, 0.5, 0.25},
		{ISSeqTruncate, []float64{2, 2, 1, 1}, 3, 1, 0.5, 0},
		{ISSeqMask, []float64{0, 0, 1, 1}, 3, 1, 0.5, 0},
	}
	onTorch(t, func() {
		for _, tc := range cases {
			c := DefaultLossConfig()
			c.IS, c.ISMin, c.ISMax = tc.mode, 0.5, 2
			in := isCase()
			loss, st, err := Loss(c, in)
			if err != nil {
				t.Error(err)
				return
			}
			sum := tc.w[0] + tc.w[1] + tc.w[2] + tc.w[3]
			if got := loss.Float(); !near(got, -0.25*sum, 1e-5) {
				t.Errorf("%s: loss = %.7g, want %.7g", tc.mode, got, -0.25*sum)
			}
			wantGrad := []float64{-0.25 * tc.w[0], -0.25 * tc.w[1], -0.25 * tc.w[2], -0.25 * tc.w[3], 0}
			expectSlice(t, string(tc.mode)+": dloss/dℓ", grad(loss, in.LogProbs), wantGrad, 1e-5)
			expectMetrics(t, string(tc.mode), st.Metrics(1), map[string]float64{
				"rollout_corr/rollout_is_mean": sum / 4, "rollout_corr/rollout_is_max": tc.max,
				"rollout_corr/rollout_is_min": tc.min, "rollout_corr/rollout_is_ratio_fraction_high": tc.high,
				"rollout_corr/rollout_is_ratio_fraction_low": tc.low,
				// |ℓ_roll − ℓ| = ln 3, 0, ln 4, ln 4 whatever the mode.
				"rollout_corr/logprob_abs_diff_mean": (ln3 + 2*ln4) / 4, "rollout_corr/logprob_abs_diff_max": ln4,
			}, 1e-5)
		}
		// IS off with sampler log-probs: the loss is uncorrected, the mismatch still measured.
		loss, st, _ := Loss(DefaultLossConfig(), isCase())
		if got := loss.Float(); !near(got, -1, 1e-6) {
			t.Errorf("IS off: loss = %v, want −1", got)
		}
		expectMetrics(t, "IS off", st.Metrics(1), map[string]float64{
			"rollout_corr/logprob_abs_diff_max": ln4, "rollout_corr/rollout_is_mean": math.NaN(),
		}, 1e-5)
	})
}

func TestLossErrors(t *testing.T) {
	onTorch(t, func() {
		in := ppoCase()
		c := DefaultLossConfig()
		c.KLCoef = 0.1
		_, _, err := Loss(c, in)
		expectErr(t, "KL without Ref", err, "Ref is nil", "KLCoef = 0.1")

		c = DefaultLossConfig()
		c.Policy = PolicyGSPO
		_, _, err = Loss(c, in)
		expectErr(t, "GSPO without Sample", err, "Sample is nil", "gspo")

		c = DefaultLossConfig()
		c.IS = ISTokenTruncate
		_, _, err = Loss(c, in)
		expectErr(t, "IS without Rollout", err, "Rollout is nil", "token_truncate")

		bad := in
		bad.Advantages = tf([]float64{1, 2, 3}, 3)
		_, _, err = Loss(DefaultLossConfig(), bad)
		expectErr(t, "shape", err, "Advantages has shape [3]", "LogProbs [2 3]")

		c = DefaultLossConfig()
		c.Policy = "grpo"
		_, _, err = Loss(c, in)
		expectErr(t, "unknown policy", err, `"grpo"`, "vanilla, gspo, cispo")
	})
}

func TestLossConfigValidate(t *testing.T) {
	if err := DefaultLossConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for field, mutate := range map[string]func(*LossConfig){
		"loss.clip_low":       func(c *LossConfig) { c.ClipLow = -0.1 },
		"loss.clip_high":      func(c *LossConfig) { c.ClipHigh = math.NaN() },
		"loss.dual_clip":      func(c *LossConfig) { c.DualClip = 0.5 },
		"loss.gspo_clip_high": func(c *LossConfig) { c.GSPOClipHigh = -1 },
		"loss.kl_coef":        func(c *LossConfig) { c.KLCoef = -1 },
		"loss.kl_kind":        func(c *LossConfig) { c.KLCoef, c.KLKind = 0.1, "k4" },
		"loss.entropy_coef":   func(c *LossConfig) { c.EntropyCoef = math.Inf(1) },
		"loss.is":             func(c *LossConfig) { c.IS = "token" },
		"loss.is_max":         func(c *LossConfig) { c.IS, c.ISMax = ISSeqMask, 0 },
		"loss.is_min":         func(c *LossConfig) { c.IS, c.ISMin = ISSeqMask, 3 },
		"loss.agg":            func(c *LossConfig) { c.Agg.Mode = "sum" },
	} {
		c := DefaultLossConfig()
		mutate(&c)
		expectErr(t, field, c.Validate(), field)
	}
	for s, want := range map[string]PolicyLoss{"vanilla": PolicyPPO, "ppo": PolicyPPO, "gspo": PolicyGSPO, "cispo": PolicyCISPO} {
		if got, err := ParsePolicyLoss(s); err != nil || got != want {
			t.Errorf("ParsePolicyLoss(%q) = %q, %v", s, got, err)
		}
	}
	for s, want := range map[string]ISMode{"": ISOff, "off": ISOff, "sequence_mask": ISSeqMask} {
		if got, err := ParseISMode(s); err != nil || got != want {
			t.Errorf("ParseISMode(%q) = %q, %v", s, got, err)
		}
	}
	_, err := ParseISMode("tis")
	expectErr(t, "ParseISMode", err, `"tis"`)
}

// TestLossLeavesOnlyItsResults: Loss frees its intermediates; the caller's scope gains exactly
// the loss and the stats tensor, and closing it returns to the start.
func TestLossLeavesOnlyItsResults(t *testing.T) {
	onTorch(t, func() {
		start := torch.LiveTensors()
		for range 5 {
			s := torch.NewScope()
			in := isCase()
			c := DefaultLossConfig()
			c.IS, c.Policy = ISSeqTruncate, PolicyGSPO
			before := torch.LiveTensors()
			loss, st, err := Loss(c, in)
			if err != nil {
				t.Error(err)
			}
			if got := torch.LiveTensors() - before; got != 2 {
				t.Errorf("Loss left %d tensors, want 2 (loss, stats)", got)
			}
			torch.Backward([]*torch.Tensor{loss}, torch.BackwardOpts{})
			_ = st.Metrics(1)
			s.Close()
		}
		if got := torch.LiveTensors(); got != start {
			t.Errorf("live tensors %d after the loop, %d before", got, start)
		}
	})
}
