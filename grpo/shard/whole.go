package shard

import (
	"strings"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// whole is torch.AdamW over every parameter on every rank; with a process group the gradients
// are summed across the ranks in persistent buckets before clipping. Summed, not averaged: the
// trainer weighs every token by its share of the whole mini-batch's loss (algo.AggWeights), so
// the sum over ranks is the single-process gradient.
//
// A single process keeps the gradients in persistent flat buffers (torch.GradBuffers: each
// gradient a view of one buffer per dtype, as DDP's gradient_as_bucket_view): backward adds into
// them in place, and zeroing, the norm, the clipping and the float32 copy for the masters run over
// one tensor per dtype instead of one per parameter. A parameter that backward did not reach has
// no gradient for the step, as without buffers; the optimizer's state and checkpoints are the same.
type whole struct {
	opt     *torch.AdamW
	params  []*torch.Tensor
	buckets *torch.GradBuckets // nil in a single process
	flat    *torch.GradBuffers // a single process's gradients; nil with a process group
	held    []int              // the parameters flat holds (those that require grad), in order
}

// newAdamW makes torch.AdamW over params (mixed precision: float32 master weights for bf16/f16
// ones), exempting biases and normalisation weights from weight decay, as Hugging Face's Trainer
// does. Its learning rate is set at each step.
func newAdamW(params []torch.NamedTensor, s Settings) (*torch.AdamW, error) {
	opt, err := torch.NewAdamW(params, torch.AdamWConfig{Beta1: s.Beta1, Beta2: s.Beta2, Eps: s.Eps, WeightDecay: s.WeightDecay})
	if err != nil {
		return nil, err
	}
	var exempt []string
	for _, p := range params {
		if noDecay(p.Name) {
			exempt = append(exempt, p.Name)
		}
	}
	if err := opt.NoDecayNames(exempt...); err != nil {
		opt.Close()
		return nil, err
	}
	return opt, nil
}

// noDecay reports whether a parameter is exempt from weight decay (biases, norm weights).
func noDecay(name string) bool {
	return strings.HasSuffix(name, ".bias") || strings.HasSuffix(name, "norm.weight")
}

// newWhole makes the optimizer of params; with pg (data parallel) its gradient buckets.
func newWhole(params []torch.NamedTensor, pg *torch.ProcessGroup, s Settings) (*whole, error) {
	opt, err := newAdamW(params, s)
	if err != nil {
		return nil, err
	}
	w := &whole{opt: opt}
	for _, p := range params {
		w.params = append(w.params, p.Tensor)
	}
	if err := torch.Do(func() error {
		if pg != nil {
			w.buckets = pg.NewGradBuckets(w.params, s.BucketBytes, s.Overlap)
			return nil
		}
		for i, p := range w.params {
			if p.RequiresGrad() {
				w.held = append(w.held, i)
			}
		}
		w.flat = torch.NewGradBuffers(w.params)
		return nil
	}); err != nil {
		opt.Close()
		return nil, err
	}
	return w, nil
}

func (w *whole) options() model.ForwardOptions { return model.ForwardOptions{} }

func (w *whole) arm() {
	if w.buckets != nil && w.buckets.Overlap() {
		w.buckets.Arm()
	}
}

func (w *whole) passes(n int) int { return n }
func (w *whole) idle()            {}
func (w *whole) shard()           {}
func (w *whole) unshard()         {}

func (w *whole) clip(maxNorm float64) float64 {
	if w.flat != nil {
		return w.flat.ClipGradNorm(maxNorm)
	}
	if w.buckets != nil {
		w.buckets.AllReduce(1)
	}
	return torch.ClipGradNorm(w.params, maxNorm)
}

func (w *whole) step(lr float64) {
	w.opt.Config.LR = lr
	if w.flat == nil {
		w.opt.Step()
		w.opt.ZeroGrad()
		return
	}
	s := torch.NewScope()
	defer s.Close()
	grads := make([]*torch.Tensor, len(w.params))
	for k, g := range w.flat.StepGrads() {
		grads[w.held[k]] = g
	}
	w.opt.StepWith(grads)
	w.flat.Zero()
}

func (w *whole) skip() {
	w.opt.Skip()
	if w.flat != nil {
		w.flat.Zero()
	}
}
func (w *whole) steps() int { return int(w.opt.Steps() + w.opt.Skipped()) }

func (w *whole) state() map[string]*torch.Tensor             { return w.opt.State() }
func (w *whole) loadState(st map[string]*torch.Tensor) error { return w.opt.LoadState(st) }

func (w *whole) close() {
	if w.buckets != nil {
		w.buckets.Close()
	}
	w.flat.Close()
	w.opt.Close()
}
