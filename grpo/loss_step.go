package grpo

import (
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// setWeights gives every trained token of a mini-batch its aggregation weight, computed over the
// whole mini-batch (algo.AggWeights), so that its micro-batches' losses add up to the mini-batch's.
func (t *Trainer) setWeights(mb []*sample) error {
	in := make([]algo.AggSample, len(mb))
	for i, s := range mb {
		in[i] = algo.AggSample{Tokens: s.trained, Traj: s.traj}
	}
	w, err := algo.AggWeights(in, t.cfg.Loss.Agg)
	if err != nil {
		return err
	}
	for i, s := range mb {
		s.weight = make([]float32, len(s.IDs))
		for k, on := range s.Mask {
			if on {
				s.weight[k] = float32(w[i])
			}
		}
	}
	return nil
}

// lossInputs lays the micro-batch's per-token inputs out in b's layout next to the pass's
// log-probs and entropies. The sampler's log-probs go in on the first epoch (the
// sampler-vs-trainer comparison) and whenever importance sampling needs them.
func (t *Trainer) lossInputs(b *model.Batch, micro []*sample, out model.Output, first bool) LossInputs {
	dev := out.LogProbs.Device()
	get := func(f func(*sample) []float32) *torch.Tensor { return perToken(b, micro, dev, f) }
	in := LossInputs{
		LogProbs:   out.LogProbs,
		Entropy:    out.Entropy,
		Advantages: get(func(s *sample) []float32 { return s.adv }),
		Weights:    get(func(s *sample) []float32 { return s.weight }),
		Mask:       get(func(s *sample) []float32 { return maskOf(s) }),
		Sample:     sampleIndex(b, micro, dev),
		Samples:    int64(len(micro)),
	}
	if t.cfg.needsOld() {
		in.Old = get(func(s *sample) []float32 { return s.old })
	}
	if t.cfg.Loss.KLCoef > 0 {
		in.Ref = get(func(s *sample) []float32 { return s.ref })
	}
	if first || t.cfg.Loss.IS != ISOff {
		in.Rollout = get(func(s *sample) []float32 { return s.LogProbs })
	}
	return in
}

// sampleIndex is each token's sample index within the micro-batch (int64, b's layout; padding
// gets 0, which the mask makes harmless).
func sampleIndex(b *model.Batch, micro []*sample, dev torch.Device) *torch.Tensor {
	return perToken(b, micro, dev, func(s *sample) []float32 {
		v := make([]float32, len(s.IDs))
		for i := range v {
			v[i] = float32(indexOf(micro, s))
		}
		return v
	}).ToDType(torch.Int64)
}

func indexOf(micro []*sample, s *sample) int {
	for i, x := range micro {
		if x == s {
			return i
		}
	}
	return -1
}

// maskOf is the sample's trained mask as 0/1.
func maskOf(s *sample) []float32 {
	m := make([]float32, len(s.IDs))
	for i, on := range s.Mask {
		if on {
			m[i] = 1
		}
	}
	return m
}

// statAcc adds loss statistics over micro-batches on the device, in a scope of its own, and
// reads them once.
type statAcc struct {
	scope   *torch.Scope
	st      Stats
	updates int
}

func newStatAcc() *statAcc { return &statAcc{scope: torch.NewLongScope("grpo stats")} }

// add accumulates st (which belongs to the caller's scope).
func (a *statAcc) add(st Stats) {
	sum := a.st.Add(st)
	if old := a.st.Tensor(); old != nil && old != sum.Tensor() {
		old.Free()
	}
	sum.Tensor().MoveTo(a.scope)
	a.st = sum
}

// report writes the metrics (one device→host copy) under the given prefix-free verl names.
func (a *statAcc) report(m Metrics) {
	if a.st.Tensor() == nil {
		return
	}
	for k, v := range a.st.Metrics(a.updates) {
		m[k] = v
	}
}

func (a *statAcc) close() { a.scope.Close() }
