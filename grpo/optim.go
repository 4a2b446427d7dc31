package grpo

import (
	"math"
	"strings"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// optimizer is the AdamW a trainer steps: whole on every rank (a single process, or data parallel
// with the gradients summed across ranks first), or sharded across ranks (ZeRO-1 and ZeRO-2,
// dist_zero.go).
type optimizer interface {
	// Arm says the next backward pass is the last before ClipGradNorm, so the gradient reduction
	// may overlap it (when configured).
	Arm()
	// GradsReady is model.ForwardOptions.GradsReady for the training passes: ZeRO-2 reduces each
	// unit's gradients in the backward pass (a collective); nil: nothing to do.
	GradsReady() func(unit int)
	// Passes is the number of backward passes to make for a mini-batch of which this rank has n
	// micro-batches: n, or the most of any rank where passes hold collectives (ZeRO-2; itself a
	// collective then). The passes past n are Idle.
	Passes(n int) int
	// Idle takes part in one pass's collectives without gradients of this rank's.
	Idle()
	// Shard frees the whole weights for the update and Unshard gathers them back after it
	// (ZeRO-3; Unshard is a collective); UnitWeights is then model.ForwardOptions.Weights for the
	// update's passes (nil otherwise).
	Shard()
	Unshard()
	UnitWeights() model.UnitWeights
	// ClipGradNorm sums the gradients across ranks (data parallel), scales them so that their
	// global L2 norm is at most maxNorm (+Inf: no clipping) and returns the norm before clipping;
	// a non-finite norm must be followed by Skip.
	ClipGradNorm(maxNorm float64) float64
	// Step updates the weights with learning rate lr and drops the gradients.
	Step(lr float64)
	// Skip drops the gradients without touching weights or state (a non-finite norm).
	Skip()
	// State and LoadState are the optimizer's checkpoint in torch.AdamW's format (keyed by
	// parameter name, whole tensors), whatever the sharding: a state resumes at any world size.
	// Under ZeRO-1 both are collectives.
	State() map[string]*torch.Tensor
	LoadState(map[string]*torch.Tensor) error
	// Master is a parameter's float32 master weights (nil for float32 parameters, or on ranks
	// that do not hold it whole).
	Master(name string) *torch.Tensor
	Close()
}

// newAdamW makes an optimizer over params (mixed precision: float32 master weights for bf16/f16
// ones), exempting biases and normalisation weights from weight decay, as Hugging Face's Trainer
// does.
func newAdamW(params []torch.NamedTensor, lr float64, o OptimConfig) (*torch.AdamW, error) {
	opt, err := torch.NewAdamW(params, adamWConfig(lr, o))
	if err != nil {
		return nil, err
	}
	var exempt []string
	for _, p := range params {
		if noDecay(p.Name) {
			exempt = append(exempt, p.Name)
		}
	}
	return opt, opt.NoDecayNames(exempt...)
}

func adamWConfig(lr float64, o OptimConfig) torch.AdamWConfig {
	return torch.AdamWConfig{LR: lr, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay}
}

// noDecay reports whether a parameter is exempt from weight decay (biases, norm weights).
func noDecay(name string) bool {
	return strings.HasSuffix(name, ".bias") || strings.HasSuffix(name, "norm.weight")
}

// wholeAdamW is torch.AdamW over every parameter; with buckets (data parallel), the gradients are
// summed across ranks before clipping. Summed, not averaged: every token's aggregation weight is
// already its share of the whole mini-batch's loss (algo.AggWeights), so the sum over ranks is the
// single-process gradient.
type wholeAdamW struct {
	*torch.AdamW
	params  []*torch.Tensor
	buckets *torch.GradBuckets // nil in a single process
}

// newWholeAdamW makes the optimizer of params; with d (data parallel) its gradient buckets on the
// training ranks.
func newWholeAdamW(params []torch.NamedTensor, lr float64, o OptimConfig, d *Dist) (*wholeAdamW, error) {
	opt, err := newAdamW(params, lr, o)
	if err != nil {
		return nil, err
	}
	w := &wholeAdamW{AdamW: opt, params: tensorsOf(params)}
	if d != nil && d.train != nil {
		if err := torch.Do(func() error {
			w.buckets = d.train.NewGradBuckets(w.params, d.cfg.BucketBytes, d.cfg.Overlap)
			return nil
		}); err != nil {
			opt.Close()
			return nil, err
		}
	}
	return w, nil
}

func tensorsOf(params []torch.NamedTensor) []*torch.Tensor {
	out := make([]*torch.Tensor, len(params))
	for i, p := range params {
		out[i] = p.Tensor
	}
	return out
}

func (w *wholeAdamW) Arm() {
	if w.buckets != nil && w.buckets.Overlap() {
		w.buckets.Arm()
	}
}

func (w *wholeAdamW) GradsReady() func(int) { return nil }
func (w *wholeAdamW) Passes(n int) int      { return n }
func (w *wholeAdamW) Idle()                 {}
func (w *wholeAdamW) Shard()                {}
func (w *wholeAdamW) Unshard()              {}

func (w *wholeAdamW) UnitWeights() model.UnitWeights { return nil }

func (w *wholeAdamW) ClipGradNorm(maxNorm float64) float64 {
	if w.buckets != nil {
		w.buckets.AllReduce(1)
	}
	return torch.ClipGradNorm(w.params, maxNorm)
}

func (w *wholeAdamW) Step(lr float64) {
	w.Config.LR = lr
	w.AdamW.Step()
	w.ZeroGrad()
}

func (w *wholeAdamW) Close() {
	if w.buckets != nil {
		w.buckets.Close()
	}
	w.AdamW.Close()
}

// clipNorm is maxNorm as ClipGradNorm takes it: 0 (no clipping) is +Inf.
func clipNorm(maxNorm float64) float64 {
	if maxNorm == 0 {
		return math.Inf(1)
	}
	return maxNorm
}
