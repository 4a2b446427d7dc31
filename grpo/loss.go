package grpo

// The actor's loss on one micro-batch: policy loss (PPO clip, GSPO or CISPO), KL to the
// reference, entropy bonus and truncated importance sampling between the sampler's and the
// trainer's log-probs, aggregated with host-computed weights (algo.AggWeights) and returned with its
// metric sums (Stats). References: verl core_algos.py compute_policy_loss_vanilla,
// compute_policy_loss_gspo, compute_policy_loss_cispo, kl_penalty; verl
// verl/workers/actor/dp_actor.py update_policy (how the terms add up); TRL grpo_trainer.py
// _compute_loss (vllm_importance_sampling_mode); verl rollout_corr_helper.py.
//
// Deviations from verl, on purpose: D8 (dual-clip off by default), D9 (one set of weights for
// the three terms) and D10 (actor/entropy as a token mean), stated in grpo/algo/doc.go.
//
// With one update per batch, ℓ_old = ℓ.detach(): ρ ≡ 1, so the displayed pg_loss is −Σ w·A (about
// 0 with group-normalised advantages) while the gradient, −Σ w·A·∇ℓ, is the policy gradient.

import (
	"fmt"
	"slices"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/torch"
)

// PolicyLoss names a policy loss, spelled as verl's policy_loss.loss_mode.
type PolicyLoss string

// Policy losses, with ρ = exp(clamp(ℓ − ℓ_old, ±20)) per token.
const (
	// PolicyPPO is PPO's clipped surrogate, max(−A·ρ, −A·clip(ρ, 1−ε_low, 1+ε_high)), with optional
	// dual clip min(·, −A·c) for A < 0 (Schulman et al. arXiv 1707.06347; Ye et al. arXiv
	// 1912.09729; clip-higher from DAPO).
	PolicyPPO PolicyLoss = "vanilla"
	// PolicyGSPO clips the sequence-level ratio s_i = exp(mean_t(ℓ − ℓ_old)) over a sample's trained
	// tokens (a turn, with per-turn samples), with a gradient through every token: log s_{i,t} =
	// sg[log s_i] + ℓ_t − sg[ℓ_t], clamped at 10 (Zheng et al. arXiv 2507.18071; TRL
	// importance_sampling_level="sequence").
	PolicyGSPO PolicyLoss = "gspo"
	// PolicyCISPO is −sg[clip(ρ, 1−ε_low, 1+ε_high)]·A·ℓ: the IS weight is clipped and its gradient
	// stopped, so no token loses its gradient to clipping (MiniMax-M1, arXiv 2506.13585).
	PolicyCISPO PolicyLoss = "cispo"
)

var policyLosses = []PolicyLoss{PolicyPPO, PolicyGSPO, PolicyCISPO}

// ParsePolicyLoss reads a policy loss name ("ppo" is accepted for vanilla); unknown names are an
// error naming the value.
func ParsePolicyLoss(s string) (PolicyLoss, error) {
	return setting.Parse("policy loss", s, policyLosses, map[string]PolicyLoss{"ppo": PolicyPPO})
}

// UnmarshalText reads a policy loss's name as ParsePolicyLoss does (YAML, flags).
func (p *PolicyLoss) UnmarshalText(b []byte) error { return setting.Decode(p, b, ParsePolicyLoss) }

// ISMode is how the sampler-vs-trainer importance ratio ρ_IS = π_old/π_roll corrects the policy
// loss (TRL's vllm_importance_sampling_mode; verl's rollout_is and rollout_rs). Token modes use
// each token's ratio, sequence modes the sample's product exp(Σ_t(ℓ_old − ℓ_roll)).
type ISMode string

// Importance-sampling corrections.
const (
	ISOff ISMode = "off"
	// ISTokenTruncate multiplies each token's loss by clamp(ρ_IS, ISMin, ISMax) (TIS).
	ISTokenTruncate ISMode = "token_truncate"
	// ISTokenMask multiplies by ρ_IS, or by 0 where ρ_IS is outside [ISMin, ISMax].
	ISTokenMask ISMode = "token_mask"
	// ISSeqTruncate multiplies every token of a sample by its clamped sequence ratio.
	ISSeqTruncate ISMode = "sequence_truncate"
	// ISSeqMask multiplies by the sequence ratio, or by 0 for the whole sample when it is outside
	// [ISMin, ISMax] (TRL's default mode).
	ISSeqMask ISMode = "sequence_mask"
)

var isModes = []ISMode{ISOff, ISTokenTruncate, ISTokenMask, ISSeqTruncate, ISSeqMask}

// ParseISMode reads an importance-sampling mode ("" and "none" mean off); unknown values are an
// error naming the value.
func ParseISMode(s string) (ISMode, error) {
	return setting.Parse("importance sampling mode", s, isModes, map[string]ISMode{"": ISOff, "none": ISOff})
}

// UnmarshalText reads a mode's name as ParseISMode does (YAML, flags).
func (m *ISMode) UnmarshalText(b []byte) error { return setting.Decode(m, b, ParseISMode) }

func (m ISMode) on() bool       { return m != ISOff && m != "" }
func (m ISMode) sequence() bool { return m == ISSeqTruncate || m == ISSeqMask }

// LossConfig configures the actor loss. DefaultLossConfig has verl's defaults.
type LossConfig struct {
	// Policy is the policy loss (vanilla).
	Policy PolicyLoss `yaml:"policy"`
	// ClipLow and ClipHigh are ε_low and ε_high of PPO's clip (0.2, 0.2; DAPO's clip-higher sets
	// ClipHigh 0.28); CISPO clips its IS weight to [1−ClipLow, 1+ClipHigh] (ClipLow 1: no lower
	// bound).
	ClipLow  float64 `yaml:"clip_low"`
	ClipHigh float64 `yaml:"clip_high"`
	// DualClip is dual-clip PPO's c (> 1) for negative advantages; 0 is off (the default; verl's
	// clip_ratio_c = 3 is always on).
	DualClip float64 `yaml:"dual_clip"`
	// GSPOClipLow and GSPOClipHigh clip GSPO's sequence ratio (3e-4, 4e-4 as in the GSPO paper).
	GSPOClipLow  float64 `yaml:"gspo_clip_low"`
	GSPOClipHigh float64 `yaml:"gspo_clip_high"`
	// KLCoef is β of the KL-to-reference term in the loss (0: no term, no reference model).
	KLCoef float64 `yaml:"kl_coef"`
	// KLKind is the KL estimator (k3).
	KLKind algo.KLKind `yaml:"kl_kind"`
	// EntropyCoef is the entropy bonus coefficient (0).
	EntropyCoef float64 `yaml:"entropy_coef"`
	// IS corrects the sampler-vs-trainer mismatch (off); ISMax is the cap C (2) and ISMin the lower
	// bound (0: none) of its ratio.
	IS    ISMode  `yaml:"is"`
	ISMin float64 `yaml:"is_min"`
	ISMax float64 `yaml:"is_max"`
	// Agg is the loss aggregation, applied through Weights; its keys (agg, agg_turns, agg_norm)
	// sit beside the others.
	Agg algo.AggConfig `yaml:",inline"`
}

// DefaultLossConfig is verl's actor defaults (clip 0.2/0.2, k3, no KL, no entropy, token-mean)
// with dual clip and importance sampling off and the IS cap at 2.
func DefaultLossConfig() LossConfig {
	return LossConfig{
		Policy: PolicyPPO, ClipLow: 0.2, ClipHigh: 0.2,
		GSPOClipLow: 3e-4, GSPOClipHigh: 4e-4,
		KLKind: algo.KLK3, IS: ISOff, ISMax: 2, Agg: algo.DefaultAggConfig(),
	}
}

// Validate names the first bad field (a setting.KeyError).
func (c LossConfig) Validate() error {
	if err := setting.OneOf("loss.policy", c.Policy, policyLosses); err != nil {
		return err
	}
	if err := setting.Check(
		setting.In("loss.clip_low", c.ClipLow, 0, 1),
		setting.AtLeast("loss.clip_high", c.ClipHigh, 0),
		setting.AtLeast("loss.dual_clip", c.DualClip, 1).Above().OrZero("off"),
		setting.In("loss.gspo_clip_low", c.GSPOClipLow, 0, 1),
		setting.AtLeast("loss.gspo_clip_high", c.GSPOClipHigh, 0),
		setting.AtLeast("loss.kl_coef", c.KLCoef, 0),
		setting.Finite("loss.entropy_coef", c.EntropyCoef),
	); err != nil {
		return err
	}
	if c.KLCoef > 0 {
		if err := c.KLKind.Validate("loss.kl_kind"); err != nil {
			return err
		}
	}
	if c.IS != "" {
		if err := setting.OneOf("loss.is", c.IS, isModes); err != nil {
			return err
		}
	}
	if c.IS.on() {
		err := setting.Check(setting.AtLeast("loss.is_max", c.ISMax, 0).Above(),
			setting.In("loss.is_min", c.ISMin, 0, c.ISMax).Below().Because("below loss.is_max"))
		if err != nil {
			return err
		}
	}
	return c.Agg.Validate()
}

// LossInputs are the per-token tensors of one micro-batch, all of one shape (the trainer passes
// the model batch's [rows, cols], a row possibly holding several packed samples). Float inputs may
// be any float dtype; the loss computes in float32.
type LossInputs struct {
	// LogProbs is ℓ, the trainer's log-probs of the taken tokens (requires grad).
	LogProbs *torch.Tensor
	// Old is ℓ_old, the log-probs before this batch's first update; nil means ℓ.detach() (one
	// update per batch).
	Old *torch.Tensor
	// Ref is ℓ_ref, the reference model's log-probs; required when KLCoef > 0, else unused.
	Ref *torch.Tensor
	// Rollout is ℓ_roll, the sampler's log-probs (after temperature); required when IS is on.
	// When given, the sampler-vs-trainer difference |ℓ_roll − ℓ| is always measured.
	Rollout *torch.Tensor
	// Advantages per token.
	Advantages *torch.Tensor
	// Weights are the aggregation weights per token (Weights, spread over each sample's tokens),
	// 0 off the trained tokens.
	Weights *torch.Tensor
	// Mask is the trained mask (bool or 0/1): metrics count these tokens, and the loss ignores
	// whatever the other inputs hold off them.
	Mask *torch.Tensor
	// Entropy is the per-token entropy; required when EntropyCoef ≠ 0, else only measured.
	Entropy *torch.Tensor
	// Sample is each token's sample index (int64) in [0, Samples), padding included (any valid
	// index: masked tokens add nothing). Required by GSPO and the sequence IS modes. The indices
	// are used on the device, where an out-of-range index is a device-side assert on CUDA: build
	// them on the host from the packing.
	Sample  *torch.Tensor
	Samples int64
}

// Loss computes the actor loss of one micro-batch, Σ w·(L_pg·w_IS + β·KL − c_H·H) over its tokens
// (a scalar float32 tensor to backpropagate), and its metric sums. Because the weights carry the
// mini-batch's global counts, the losses and the stats of its micro-batches add up to those of the
// whole mini-batch. Results belong to the caller's scope; intermediates are freed.
func Loss(c LossConfig, in LossInputs) (loss *torch.Tensor, st Stats, err error) {
	defer torch.Recover(&err)
	if err := c.Validate(); err != nil {
		return nil, Stats{}, err
	}
	s := torch.NewScope()
	defer s.Close()
	p, err := prepare(c, in)
	if err != nil {
		return nil, Stats{}, err
	}
	var pg pgTerms
	switch c.Policy {
	case PolicyPPO:
		pg = ppoClip(c, p)
	case PolicyGSPO:
		pg = gspo(c, p)
	case PolicyCISPO:
		pg = cispo(c, p)
	}
	var is *isTerms
	pgLoss := pg.loss
	if c.IS.on() {
		is = isWeights(c, p)
		pgLoss = pgLoss.Mul(is.w)
	}
	total := pgLoss
	var kl *torch.Tensor
	if c.KLCoef > 0 {
		if kl, err = TokenKL(c.KLKind, p.lp, p.ref); err != nil {
			return nil, Stats{}, err
		}
		total = total.Add(kl.MulScalar(c.KLCoef))
	}
	if c.EntropyCoef != 0 {
		total = total.Sub(p.ent.MulScalar(c.EntropyCoef))
	}
	loss = p.masked(total).Mul(p.w).Sum(false)
	torch.NoGrad(func() { st = policyStats(p, pg, pgLoss, kl, is) })
	s.Keep(loss, st.t)
	return loss, st, nil
}

// prepared holds the inputs as float32 tensors of one shape, the mask as bool and float.
type prepared struct {
	lp, old, ref, roll, adv, w, ent *torch.Tensor
	m, off                          *torch.Tensor // float mask, bool complement
	mb                              *torch.Tensor // bool mask
	idx                             *torch.Tensor // flat int64 sample index, or nil
	samples                         int64
	shape                           []int64
}

func prepare(c LossConfig, in LossInputs) (*prepared, error) {
	if in.LogProbs == nil {
		return nil, fmt.Errorf("grpo: Loss: LogProbs is nil")
	}
	shape := in.LogProbs.Shape()
	if in.LogProbs.Numel() == 0 {
		return nil, fmt.Errorf("grpo: Loss: LogProbs %v is empty", shape)
	}
	needSample := c.Policy == PolicyGSPO || c.IS.sequence()
	for _, x := range []struct {
		name     string
		t        *torch.Tensor
		required bool
	}{
		{"Advantages", in.Advantages, true}, {"Weights", in.Weights, true}, {"Mask", in.Mask, true},
		{"Old", in.Old, false}, {"Ref", in.Ref, c.KLCoef > 0}, {"Rollout", in.Rollout, c.IS.on()},
		{"Entropy", in.Entropy, c.EntropyCoef != 0}, {"Sample", in.Sample, needSample},
	} {
		if x.t == nil {
			if x.required {
				return nil, fmt.Errorf("grpo: Loss: %s is nil but %s needs it", x.name, lossNeed(x.name, c))
			}
			continue
		}
		if got := x.t.Shape(); !slices.Equal(got, shape) {
			return nil, fmt.Errorf("grpo: Loss: %s has shape %v, LogProbs %v", x.name, got, shape)
		}
	}
	p := &prepared{shape: shape, samples: in.Samples}
	p.mb = in.Mask.ToDType(torch.Bool)
	p.off = p.mb.Not()
	p.m = p.mb.ToDType(torch.Float32)
	// Every input is zeroed off the trained tokens before use: garbage there (a NaN reference
	// log-prob on padding) would otherwise reach the gradient as 0·NaN even though the loss masks it.
	f32 := func(t *torch.Tensor) *torch.Tensor {
		if t == nil {
			return nil
		}
		return p.masked(t.ToDType(torch.Float32))
	}
	p.lp, p.ref, p.roll, p.adv, p.w, p.ent = f32(in.LogProbs), f32(in.Ref), f32(in.Rollout), f32(in.Advantages), f32(in.Weights), f32(in.Entropy)
	p.old = f32(in.Old)
	if p.old == nil {
		p.old = p.lp.Detach()
	}
	if in.Sample != nil && needSample {
		if in.Sample.DType() != torch.Int64 || in.Samples <= 0 {
			return nil, fmt.Errorf("grpo: Loss: Sample is %v with Samples = %d, want int64 indices and Samples > 0", in.Sample.DType(), in.Samples)
		}
		p.idx = in.Sample.Reshape(-1)
	}
	return p, nil
}

func lossNeed(name string, c LossConfig) string {
	switch name {
	case "Ref":
		return fmt.Sprintf("KLCoef = %v", c.KLCoef)
	case "Rollout":
		return fmt.Sprintf("IS = %s", c.IS)
	case "Entropy":
		return fmt.Sprintf("EntropyCoef = %v", c.EntropyCoef)
	case "Sample":
		return fmt.Sprintf("Policy = %s, IS = %s", c.Policy, c.IS)
	}
	return "the loss"
}

// masked zeroes x off the trained tokens (whatever x holds there, NaN included).
func (p *prepared) masked(x *torch.Tensor) *torch.Tensor { return x.MaskedFill(p.off, 0) }

// segSum adds x per sample, token layout → [Samples]; x must be 0 off the trained tokens.
func (p *prepared) segSum(x *torch.Tensor) *torch.Tensor {
	return torch.Zeros([]int64{p.samples}, x.DType(), x.Device()).ScatterAdd(0, p.idx, x.Reshape(-1))
}

// perToken spreads a per-sample value [Samples] over the token layout.
func (p *prepared) perToken(v *torch.Tensor) *torch.Tensor {
	return v.IndexSelect(0, p.idx).View(p.shape...)
}
