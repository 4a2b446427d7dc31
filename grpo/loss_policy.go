package grpo

import "github.com/mtgrpo/mtgrpo/torch"

// pgTerms is a policy loss per token with its clipping indicators.
type pgTerms struct {
	loss    *torch.Tensor // L_pg per token
	clipped *torch.Tensor // bool: the clipped branch was taken (pg_clipfrac)
	lower   *torch.Tensor // bool: dual clip's bound was taken (pg_clipfrac_lower); nil: never
}

// ratio is ρ = exp(clamp(ℓ − ℓ_old, −20, 20)), as verl clamps it.
func (p *prepared) ratio() *torch.Tensor { return p.lp.Sub(p.old).Clamp(-20, 20).Exp() }

// ppoClip is PPO's clipped surrogate with clip-higher and optional dual clip, per token:
// L = max(−A·ρ, −A·clip(ρ, 1−ε_low, 1+ε_high)), and for A < 0 with dual clip c, min(L, −A·c).
// Reference: verl compute_policy_loss_vanilla.
func ppoClip(c LossConfig, p *prepared) pgTerms {
	ratio := p.ratio()
	negA := p.adv.Neg()
	l1 := negA.Mul(ratio)
	l2 := negA.Mul(ratio.Clamp(1-c.ClipLow, 1+c.ClipHigh))
	l := l1.Maximum(l2)
	t := pgTerms{loss: l, clipped: l2.Gt(l1)}
	if c.DualClip > 0 {
		l3 := negA.MulScalar(c.DualClip)
		neg := p.adv.LtScalar(0)
		t.lower = l.Gt(l3).And(neg)
		t.loss = torch.Where(neg, l.Minimum(l3), l)
	}
	return t
}

// gspo is GSPO's sequence-level clipped surrogate, per token with the sample's ratio:
// log s_i = mean over the sample's trained tokens of (ℓ − ℓ_old) (no gradient),
// log s_{i,t} = min(log s_i + ℓ_t − sg[ℓ_t], 10), L = max(−A·s, −A·clip(s, 1−ε_low, 1+ε_high)).
// Its gradient on token t is −A·s_i·∇ℓ_t where unclipped. Reference: verl
// compute_policy_loss_gspo.
func gspo(c LossConfig, p *prepared) pgTerms {
	d := p.masked(p.lp.Sub(p.old)).Detach()
	seqLog := p.segSum(d).Div(p.segSum(p.m).ClampMin(1))
	s := p.lp.Sub(p.lp.Detach()).Add(p.perToken(seqLog)).ClampMax(10).Exp()
	negA := p.adv.Neg()
	l1 := negA.Mul(s)
	l2 := negA.Mul(s.Clamp(1-c.GSPOClipLow, 1+c.GSPOClipHigh))
	return pgTerms{loss: l1.Maximum(l2), clipped: l2.Gt(l1)}
}

// cispo is CISPO's loss per token, L = −sg[clip(ρ, 1−ε_low, 1+ε_high)]·A·ℓ: every token keeps the
// gradient −ρ̂·A·∇ℓ, clipped or not. Reference: verl compute_policy_loss_cispo.
func cispo(c LossConfig, p *prepared) pgTerms {
	ratio := p.ratio()
	lo, hi := 1-c.ClipLow, 1+c.ClipHigh
	w := ratio.Clamp(lo, hi).Detach()
	return pgTerms{
		loss:    w.Mul(p.adv).Mul(p.lp).Neg(),
		clipped: ratio.LtScalar(lo).Or(ratio.GtScalar(hi)),
	}
}

// isTerms is the importance-sampling correction per token.
type isTerms struct {
	w         *torch.Tensor // the weight the policy loss is multiplied by
	ratio     *torch.Tensor // ρ_IS before truncation or masking (token or sequence level)
	high, low *torch.Tensor // bool: ρ_IS above ISMax, below ISMin
}

// isWeights is the sampler-vs-trainer importance weight, ρ_IS = exp(clamp(ℓ_old − ℓ_roll, ±20))
// per token, or exp(clamp(Σ_t(ℓ_old − ℓ_roll), ±20)) over the sample's trained tokens, truncated
// to [ISMin, ISMax] or zeroed outside it. No gradient flows through it. References: TRL
// grpo_trainer.py (vllm_importance_sampling_mode), verl rollout_corr_helper.py
// compute_rollout_correction_weights.
func isWeights(c LossConfig, p *prepared) *isTerms {
	var t isTerms
	torch.NoGrad(func() {
		logr := p.masked(p.old.Sub(p.roll))
		if c.IS.sequence() {
			logr = p.perToken(p.segSum(logr))
		}
		t.ratio = logr.Clamp(-20, 20).Exp()
		t.high = t.ratio.GtScalar(c.ISMax)
		t.low = t.ratio.LtScalar(c.ISMin) // ISMin 0: never (ρ > 0)
		switch c.IS {
		case ISTokenTruncate, ISSeqTruncate:
			t.w = t.ratio.Clamp(c.ISMin, c.ISMax)
		case ISTokenMask, ISSeqMask:
			t.w = t.ratio.MaskedFill(t.high.Or(t.low), 0)
		}
	})
	return &t
}
