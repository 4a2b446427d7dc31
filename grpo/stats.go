package grpo

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Stats is a loss's metrics for one or more micro-batches as one small float64 tensor on the
// loss's device: sums (token counts, Σ w·L, Σ m·x...) and a few maxima. The trainer adds the
// Stats of its micro-batches on the device (Add) and reads them once per step (Metrics), one
// device→host copy. The zero Stats is empty; adding to it gives the other operand.
type Stats struct {
	t *torch.Tensor
	l *statLayout
}

// statLayout describes a Stats tensor: nSum sums, then maxima; finish turns the values into
// named metrics.
type statLayout struct {
	name   string
	nSum   int
	nMax   int
	finish func(v []float64, updates float64) map[string]float64
}

// Tensor is the underlying tensor (nil for the zero Stats), for moving it between scopes.
func (s Stats) Tensor() *torch.Tensor { return s.t }

// Add returns s and o combined on the device: sums added, maxima maxed. Both must come from the
// same loss (policy or value): mixing them panics.
func (s Stats) Add(o Stats) Stats {
	switch {
	case s.t == nil:
		return o
	case o.t == nil:
		return s
	case s.l != o.l:
		panic(fmt.Sprintf("grpo: Stats.Add: %s stats added to %s stats", o.l.name, s.l.name))
	}
	if s.l.nMax == 0 {
		return Stats{t: s.t.Add(o.t), l: s.l}
	}
	n := int64(s.l.nSum)
	sums := s.t.Narrow(0, 0, n).Add(o.t.Narrow(0, 0, n))
	maxes := s.t.Narrow(0, n, int64(s.l.nMax)).Maximum(o.t.Narrow(0, n, int64(s.l.nMax)))
	return Stats{t: torch.Cat([]*torch.Tensor{sums, maxes}, 0), l: s.l}
}

// Metrics reads the stats (one device→host copy) and names them as verl does. updates is the
// number of optimizer updates (mini-batches) whose micro-batches were added into s: losses are
// reported per update (verl's actor/pg_loss), rates and means per token. The zero Stats gives an
// empty map.
func (s Stats) Metrics(updates int) map[string]float64 {
	if s.t == nil {
		return map[string]float64{}
	}
	return s.l.finish(s.t.Float64s(), math.Max(1, float64(updates)))
}

// makeStats stacks 0-d float tensors (sums first, then maxima) into a Stats of layout l.
func makeStats(l *statLayout, vals []*torch.Tensor) Stats {
	if len(vals) != l.nSum+l.nMax {
		panic(fmt.Sprintf("grpo: %s stats: %d values for %d slots", l.name, len(vals), l.nSum+l.nMax))
	}
	for i, v := range vals {
		vals[i] = v.ToDType(torch.Float64)
	}
	return Stats{t: torch.Stack(vals, 0), l: l}
}

// ratio is num/den, 0 when den is 0.
func ratio(num, den float64) float64 {
	if den == 0 {
		return 0
	}
	return num / den
}

// Policy stats slots: sums, then maxima.
const (
	psTokens     = iota // Σ m
	psPG                // Σ w·L_pg·w_IS
	psClip              // Σ m·[clipped]
	psClipLow           // Σ m·[dual clip]
	psPPOKL             // Σ m·−clamp(ℓ − ℓ_old, ±20), the ratio's own clamp (verl's ppo_kl)
	psKLTokens          // Σ m when the KL term is on
	psKL                // Σ w·KL
	psEntTokens         // Σ m when entropies are given
	psEnt               // Σ m·H
	psRollTokens        // Σ m when sampler log-probs are given
	psAbsDiff           // Σ m·|ℓ_roll − ℓ|
	psISTokens          // Σ m when IS is on
	psISWeight          // Σ m·w_IS
	psISHigh            // Σ m·[ρ_IS > ISMax]
	psISLow             // Σ m·[ρ_IS < ISMin]
	psAbsDiffMax        // max |ℓ_roll − ℓ|
	psISMax             // max ρ_IS
	psISNegMin          // −min ρ_IS
	psSlots
)

var policyLayout = &statLayout{name: "policy", nSum: psAbsDiffMax, nMax: psSlots - psAbsDiffMax, finish: policyMetrics}

// policyStats measures one micro-batch (under no-grad).
func policyStats(p *prepared, pg pgTerms, pgLoss, kl *torch.Tensor, is *isTerms) Stats {
	dev := p.lp.Device()
	zero, negInf := torch.Scalar(0, torch.Float32, dev), torch.Scalar(math.Inf(-1), torch.Float32, dev)
	sum := func(x *torch.Tensor) *torch.Tensor { return p.masked(x).Sum(false) }
	count := func(b *torch.Tensor) *torch.Tensor { return b.And(p.mb).ToDType(torch.Float32).Sum(false) }
	maxOf := func(x *torch.Tensor) *torch.Tensor { return x.MaskedFill(p.off, math.Inf(-1)).Max(false) }
	tokens := p.m.Sum(false)
	v := make([]*torch.Tensor, psSlots)
	for i := range v {
		v[i] = zero
	}
	v[psAbsDiffMax], v[psISMax], v[psISNegMin] = negInf, negInf, negInf
	v[psTokens] = tokens
	v[psPG] = p.masked(pgLoss.Detach()).Mul(p.w).Sum(false)
	v[psClip] = count(pg.clipped)
	if pg.lower != nil {
		v[psClipLow] = count(pg.lower)
	}
	v[psPPOKL] = sum(p.lp.Detach().Sub(p.old).Clamp(-20, 20).Neg())
	if kl != nil {
		v[psKLTokens] = tokens
		v[psKL] = p.masked(kl.Detach()).Mul(p.w).Sum(false)
	}
	if p.ent != nil {
		v[psEntTokens] = tokens
		v[psEnt] = sum(p.ent.Detach())
	}
	if p.roll != nil {
		diff := p.roll.Sub(p.lp.Detach()).Abs()
		v[psRollTokens], v[psAbsDiff], v[psAbsDiffMax] = tokens, sum(diff), maxOf(diff)
	}
	if is != nil {
		v[psISTokens], v[psISWeight] = tokens, sum(is.w)
		v[psISHigh], v[psISLow] = count(is.high), count(is.low)
		v[psISMax], v[psISNegMin] = maxOf(is.ratio), maxOf(is.ratio.Neg())
	}
	return makeStats(policyLayout, v)
}

func policyMetrics(v []float64, updates float64) map[string]float64 {
	tok := v[psTokens]
	m := map[string]float64{
		"actor/pg_loss":           v[psPG] / updates,
		"actor/pg_clipfrac":       ratio(v[psClip], tok),
		"actor/pg_clipfrac_lower": ratio(v[psClipLow], tok),
		"actor/ppo_kl":            ratio(v[psPPOKL], tok),
		"actor/loss_tokens":       tok,
	}
	if v[psKLTokens] > 0 {
		m["actor/kl_loss"] = v[psKL] / updates
	}
	if v[psEntTokens] > 0 {
		m["actor/entropy"] = v[psEnt] / v[psEntTokens]
	}
	if n := v[psRollTokens]; n > 0 {
		m["rollout_corr/logprob_abs_diff_mean"] = v[psAbsDiff] / n
		m["rollout_corr/logprob_abs_diff_max"] = v[psAbsDiffMax]
	}
	if n := v[psISTokens]; n > 0 {
		m["rollout_corr/rollout_is_mean"] = v[psISWeight] / n
		m["rollout_corr/rollout_is_max"] = v[psISMax]
		m["rollout_corr/rollout_is_min"] = -v[psISNegMin]
		m["rollout_corr/rollout_is_ratio_fraction_high"] = v[psISHigh] / n
		m["rollout_corr/rollout_is_ratio_fraction_low"] = v[psISLow] / n
	}
	return m
}
