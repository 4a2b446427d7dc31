package grpo

// The critic's clipped value loss for PPO. Reference: verl core_algos.py compute_value_loss
// (from TRL's ppo_trainer); the clip keeps the new value within ε_v of the value the advantages
// were computed with.

import (
	"fmt"
	"math"
	"slices"

	"github.com/mtgrpo/mtgrpo/torch"
)

// ValueInputs are the critic's per-token tensors of one micro-batch, all of one shape.
type ValueInputs struct {
	// Values are the critic's predictions V (requires grad).
	Values *torch.Tensor
	// Old are the values the advantages were computed with; nil means Values.detach() (no clip).
	Old *torch.Tensor
	// Returns are the targets R (GAE's returns).
	Returns *torch.Tensor
	// Weights are the aggregation weights (algo.AggWeights), 0 off the trained tokens; Mask the trained mask.
	Weights, Mask *torch.Tensor
}

// ValueLoss is ½·Σ w·max((V − R)², (clip(V, V_old − clip, V_old + clip) − R)²) over the
// micro-batch's tokens (float32 math), with its metric sums (critic/vf_loss, critic/vf_clipfrac,
// critic/vpred_mean). clip is verl's cliprange_value (0.5), > 0; +Inf disables clipping.
func ValueLoss(clip float64, in ValueInputs) (loss *torch.Tensor, st Stats, err error) {
	defer torch.Recover(&err)
	if !(clip > 0) {
		return nil, Stats{}, fmt.Errorf("grpo: ValueLoss: clip = %v, want > 0", clip)
	}
	if in.Values == nil || in.Returns == nil || in.Weights == nil || in.Mask == nil {
		return nil, Stats{}, fmt.Errorf("grpo: ValueLoss: Values, Returns, Weights and Mask are required")
	}
	shape := in.Values.Shape()
	for _, x := range []struct {
		name string
		t    *torch.Tensor
	}{{"Old", in.Old}, {"Returns", in.Returns}, {"Weights", in.Weights}, {"Mask", in.Mask}} {
		if x.t != nil && !slices.Equal(x.t.Shape(), shape) {
			return nil, Stats{}, fmt.Errorf("grpo: ValueLoss: %s has shape %v, Values %v", x.name, x.t.Shape(), shape)
		}
	}
	s := torch.NewScope()
	defer s.Close()
	mb := in.Mask.ToDType(torch.Bool)
	off := mb.Not()
	f32 := func(t *torch.Tensor) *torch.Tensor { return t.ToDType(torch.Float32).MaskedFill(off, 0) }
	v := f32(in.Values)
	old := v.Detach()
	if in.Old != nil {
		old = f32(in.Old)
	}
	ret, w := f32(in.Returns), f32(in.Weights)
	vc := v
	if !math.IsInf(clip, 1) {
		vc = old.Add(v.Sub(old).Clamp(-clip, clip))
	}
	l1, l2 := v.Sub(ret).Square(), vc.Sub(ret).Square()
	per := l1.Maximum(l2).MaskedFill(off, 0).Mul(w)
	loss = per.Sum(false).MulScalar(0.5)
	torch.NoGrad(func() {
		m := mb.ToDType(torch.Float32)
		st = makeStats(valueLayout, []*torch.Tensor{
			m.Sum(false),
			loss.Detach(),
			l2.Gt(l1).And(mb).ToDType(torch.Float32).Sum(false),
			v.Detach().MaskedFill(off, 0).Sum(false),
		})
	})
	s.Keep(loss, st.t)
	return loss, st, nil
}

// Value stats slots (sums only).
const (
	vsTokens = iota // Σ m
	vsLoss          // ½·Σ w·L
	vsClip          // Σ m·[clipped branch larger]
	vsV             // Σ m·V
	vsSlots
)

var valueLayout = &statLayout{name: "value", nSum: vsSlots, finish: func(v []float64, updates float64) map[string]float64 {
	return map[string]float64{
		"critic/vf_loss":     v[vsLoss] / updates,
		"critic/vf_clipfrac": ratio(v[vsClip], v[vsTokens]),
		"critic/vpred_mean":  ratio(v[vsV], v[vsTokens]),
	}
}}

// ExplainedVariance is 1 − Var(R − V)/(Var(R) + 1e-5) over the trained tokens' values and
// returns (unbiased variances; verl's critic/vf_explained_var): 1 when the critic predicts every
// return, 0 when it predicts no more than their mean (a constant value), negative when its errors
// vary more than the returns do. Since GAE's advantages are whitened, a constant value is no
// baseline at all: this, not vf_loss, says whether the critic helps. NaN for fewer than two
// tokens or slices of unequal length.
func ExplainedVariance(values, returns []float64) float64 {
	n := len(values)
	if n < 2 || len(returns) != n {
		return math.NaN()
	}
	diff := make([]float64, n)
	for i := range values {
		diff[i] = returns[i] - values[i]
	}
	return 1 - variance(diff)/(variance(returns)+1e-5)
}

// variance is the unbiased variance of xs (len(xs) >= 2).
func variance(xs []float64) float64 {
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return ss / float64(len(xs)-1)
}
