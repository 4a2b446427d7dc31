package algo

// KL to the reference model: Schulman's estimators of KL(π_θ‖π_ref) from one sample's log-probs
// (http://joschu.net/blog/kl-approx.html), with verl's clamps, one token at a time. Reference:
// verl core_algos.py kl_penalty_forward, compute_rewards / apply_kl_penalty (KL in the reward).

import (
	"fmt"
	"math"
	"slices"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// KLKind names a KL estimator, spelled as verl's kl_loss_type / kl_penalty.
type KLKind string

// KL estimators, with δ = ℓ − ℓ_ref.
const (
	// KLK1 = δ (verl also "kl"): unbiased, high variance, can be negative per token.
	KLK1 KLKind = "k1"
	// KLK2 = ½δ² (verl also "mse"): its gradient is the KL's.
	KLK2 KLKind = "k2"
	// KLK3 = exp(−δ) + δ − 1 (verl also "low_var_kl"), the exponent clamped to ±20 and the result
	// to ±10: unbiased, never negative, low variance. The default.
	KLK3 KLKind = "k3"
	// KLAbs = |δ| (verl's "abs"): never negative, biased; its gradient is sign(δ).
	KLAbs KLKind = "abs"
)

var klKinds = []KLKind{KLK1, KLK2, KLK3, KLAbs}

// ParseKLKind reads a KL estimator name; unknown names are an error naming the value.
func ParseKLKind(s string) (KLKind, error) {
	return setting.Parse("KL estimator", s, klKinds, map[string]KLKind{"kl": KLK1, "mse": KLK2, "low_var_kl": KLK3})
}

// UnmarshalText reads an estimator's name as ParseKLKind does (YAML, flags).
func (k *KLKind) UnmarshalText(b []byte) error { return setting.Decode(k, b, ParseKLKind) }

// Validate is nil for a known estimator, else a setting.KeyError for the setting key.
func (k KLKind) Validate(key string) error { return setting.OneOf(key, k, klKinds) }

// errKLKind is an unknown estimator met while computing.
func errKLKind(kind KLKind) error {
	return fmt.Errorf("grpo: unknown KL estimator %q (want %s)", kind, setting.List(klKinds))
}

// KLPenalty is the estimator for one token with log-prob lp under the policy and ref under the
// reference (nats); an unknown kind is an error naming it. Reference: verl kl_penalty_forward
// (kl_penalty for one token; grpo.TokenKL is the tensor form).
func KLPenalty(kind KLKind, lp, ref float64) (float64, error) {
	d := lp - ref
	switch kind {
	case KLK1:
		return d, nil
	case KLK2:
		return 0.5 * d * d, nil
	case KLK3:
		x := math.Max(-20, math.Min(20, -d))
		return math.Max(-10, math.Min(10, math.Exp(x)-x-1)), nil
	case KLAbs:
		return math.Abs(d), nil
	}
	return 0, errKLKind(kind)
}

// KLRewards puts the KL in the reward: per-token rewards −beta·KL(lp, ref) for one sample's
// trained tokens, [T] and [T] → [T], and their mean KL (verl's actor/reward_kl_penalty). lp are
// the log-probs of the policy that sampled the tokens (verl uses old_log_prob). Feed the result to
// GAETurn.TokenRewards, or add it to a score.
func KLRewards(kind KLKind, lp, ref []float64, beta float64) (rewards []float64, meanKL float64, err error) {
	if !slices.Contains(klKinds, kind) {
		return nil, 0, errKLKind(kind)
	}
	if len(lp) != len(ref) {
		return nil, 0, fmt.Errorf("grpo: KLRewards: %d log-probs but %d reference log-probs", len(lp), len(ref))
	}
	rewards = make([]float64, len(lp))
	for t := range lp {
		kl, _ := KLPenalty(kind, lp[t], ref[t]) // kind was checked above
		if !finite(kl) {
			return nil, 0, fmt.Errorf("grpo: KLRewards: token %d: log-prob %v, reference %v", t, lp[t], ref[t])
		}
		rewards[t] = -beta * kl
		meanKL += kl
	}
	if len(lp) > 0 {
		meanKL /= float64(len(lp))
	}
	return rewards, meanKL, nil
}
