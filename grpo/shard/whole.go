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
type whole struct {
	opt     *torch.AdamW
	params  []*torch.Tensor
	buckets *torch.GradBuckets // nil in a single process
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
	if pg != nil {
		if err := torch.Do(func() error {
			w.buckets = pg.NewGradBuckets(w.params, s.BucketBytes, s.Overlap)
			return nil
		}); err != nil {
			opt.Close()
			return nil, err
		}
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
	if w.buckets != nil {
		w.buckets.AllReduce(1)
	}
	return torch.ClipGradNorm(w.params, maxNorm)
}

func (w *whole) step(lr float64) {
	w.opt.Config.LR = lr
	w.opt.Step()
	w.opt.ZeroGrad()
}

func (w *whole) skip()      { w.opt.Skip() }
func (w *whole) steps() int { return int(w.opt.Steps() + w.opt.Skipped()) }

func (w *whole) state() map[string]*torch.Tensor             { return w.opt.State() }
func (w *whole) loadState(st map[string]*torch.Tensor) error { return w.opt.LoadState(st) }

func (w *whole) close() {
	if w.buckets != nil {
		w.buckets.Close()
	}
	w.opt.Close()
}
