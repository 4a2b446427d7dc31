package shard

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Settings are an Optimizer's: AdamW's hyper-parameters (the learning rate comes with each Step),
// gradient clipping, and how the training ranks share the work.
type Settings struct {
	// Beta1 and Beta2 are AdamW's moment decays, Eps its ε, WeightDecay its decoupled weight
	// decay (biases and normalisation weights are exempt, as in Hugging Face's Trainer).
	Beta1, Beta2, Eps, WeightDecay float64
	// MaxGradNorm clips the global gradient norm in Passes (0: no clipping).
	MaxGradNorm float64
	// Stage is the ZeRO stage over the process group: memplan.StageDP keeps everything whole on
	// every rank and sums the gradients in buckets; StageZeRO1 shards the float32 masters and
	// AdamW's moments, StageZeRO2 also the gradients (reduced unit by unit inside each backward
	// pass), StageZeRO3 also the weights inside Update (gathered unit by unit as a pass needs
	// them; the passes must use gradient checkpointing). Without a process group it is ignored.
	Stage memplan.Stage
	// BucketBytes is the size of a gradient bucket and of a sharded reduction's or gather's round
	// (0: torch.DefaultBucketBytes, DDP's 25 MB).
	BucketBytes int64
	// Overlap starts each bucket's all-reduce during the last backward pass of a mini-batch, as
	// soon as its gradients are ready (StageDP only).
	Overlap bool
}

// Units groups the parameters for ZeRO-2 and -3: Of[i] is parameter i's unit, numbered from 0 in
// the order a pass uses them (model.Model.Units: the embedding, each decoder layer, then the final
// norm and an untied head), and Tied says that the last unit's head is unit 0's embedding. The
// other stages ignore it.
type Units struct {
	Of   []int
	Tied bool
}

// UnitsOf is m's units, for m's Parameters (with LoRA adapters, no parameter is tied).
func UnitsOf(m *model.Model) Units {
	return Units{Of: m.Units(), Tied: m.Config.TieWordEmbeddings && m.LoRA() == nil}
}

// Optimizer is AdamW over a list of trainable parameters (float32 master weights for bfloat16
// and float16 ones), with the gradient reduction of data-parallel ranks and ZeRO's sharding
// behind it. A mini-batch is one Passes and one Step; an update's mini-batches run inside Update.
// Call every method on the torch thread; with a process group, every rank calls them in the same
// order (most are collectives).
type Optimizer struct {
	e        engine
	pg       *torch.ProcessGroup
	maxNorm  float64 // clipping's bound (+Inf: none)
	norm     float64 // the last Passes' gradient norm
	gradsSet bool    // Passes has made gradients that Step has not used
}

// engine is how the work is shared: whole on every rank (whole.go) or sharded (zero.go).
type engine interface {
	// options are model.ForwardOptions.GradsReady and .Weights for a training pass.
	options() model.ForwardOptions
	// arm says the next backward pass is the last before clip (a reduction may overlap it).
	arm()
	// passes is the number of passes to make when this rank has n micro-batches: n, or the most
	// of any rank where passes hold collectives (a collective then); idle makes one pass's
	// collectives without gradients of this rank's.
	passes(n int) int
	idle()
	// shard frees the whole weights (ZeRO-3; the masters hold them) and unshard gathers them
	// back (a collective); nothing otherwise.
	shard()
	unshard()
	// clip reduces the gradients across ranks, scales them to a global norm of at most maxNorm
	// and returns the norm before clipping.
	clip(maxNorm float64) float64
	// step updates the weights with lr and drops the gradients; skip drops them only.
	step(lr float64)
	skip()
	// steps counts the steps taken and skipped.
	steps() int
	// state and loadState are the checkpoint in torch.AdamW's format, whatever the sharding.
	state() map[string]*torch.Tensor
	loadState(map[string]*torch.Tensor) error
	close()
}

// New makes the optimizer of params (unique names; their units u for ZeRO-2 and -3) over the
// process group pg (nil: one process) with settings s. Every rank calls it with the same
// parameters and settings. Call on the torch thread.
func New(params []torch.NamedTensor, u Units, pg *torch.ProcessGroup, s Settings) (*Optimizer, error) {
	switch {
	case s.Stage < memplan.StageDP || s.Stage > memplan.StageZeRO3:
		return nil, fmt.Errorf("shard: ZeRO stage %d: want 0 to 3", s.Stage)
	case s.BucketBytes < 0:
		return nil, fmt.Errorf("shard: bucket bytes %d: want >= 0", s.BucketBytes)
	case !(s.MaxGradNorm >= 0) || math.IsInf(s.MaxGradNorm, 1):
		return nil, fmt.Errorf("shard: max grad norm %v: want a finite number >= 0", s.MaxGradNorm)
	}
	o := &Optimizer{pg: pg, maxNorm: s.MaxGradNorm}
	if o.maxNorm == 0 {
		o.maxNorm = math.Inf(1)
	}
	var err error
	if pg != nil && s.Stage != memplan.StageDP {
		o.e, err = newZero(pg, params, u, s)
	} else {
		o.e, err = newWhole(params, pg, s)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Passes runs one mini-batch's backward passes and returns the gradient norm, before clipping,
// of the whole mini-batch (every rank's micro-batches). pass(i, fo) trains micro-batch i of this
// rank's n: it runs the model's training pass with fo's GradsReady and Weights (and whatever
// else it needs) and backpropagates its loss; the gradients add up over the passes. The
// reduction is armed before the last pass; where passes hold collectives (ZeRO-2 and -3) every
// rank makes as many as the rank with the most micro-batches (a count agreed first), the ones past
// n idle; then the gradients are summed across ranks and clipped to Settings.MaxGradNorm. A
// non-finite norm is returned as it is: Step then skips. pass's error comes back as it is.
func (o *Optimizer) Passes(n int, pass func(i int, fo model.ForwardOptions) error) (norm float64, err error) {
	total := n
	if err := o.collective("agreeing on the backward passes", func() { total = o.e.passes(n) }); err != nil {
		return 0, err
	}
	fo := o.e.options()
	for i := range n {
		if i == n-1 {
			o.e.arm()
		}
		if err := pass(i, fo); err != nil {
			return 0, err
		}
	}
	if err := o.collective("idle backward passes", func() {
		for i := n; i < total; i++ {
			o.e.idle()
		}
	}); err != nil {
		return 0, err
	}
	if err := o.collective("summing gradients", func() { norm = o.e.clip(o.maxNorm) }); err != nil {
		return 0, err
	}
	o.norm, o.gradsSet = norm, true
	return norm, nil
}

// Step updates the weights with learning rate lr from the last Passes' gradients and drops them.
// When that gradient norm was not finite it skips instead: the gradients are dropped, weights,
// masters and moments untouched, and stepped is false.
func (o *Optimizer) Step(lr float64) (stepped bool, err error) {
	if !o.gradsSet {
		return false, fmt.Errorf("shard: Step without Passes")
	}
	o.gradsSet = false
	if math.IsNaN(o.norm) || math.IsInf(o.norm, 0) {
		return false, torch.Do(func() error { o.e.skip(); return nil })
	}
	if err := o.collective("updating the weights", func() { o.e.step(lr) }); err != nil {
		return false, err
	}
	return true, nil
}

// Update runs fn, an update's mini-batches (Passes and Step), and leaves the weights whole after
// it, for generation, checkpoints and export. Under ZeRO-3 no rank holds the whole weights inside
// it (each pass gathers a unit while it needs it) and Update gathers them again at the end (a
// collective); otherwise it only runs fn. fn's error comes back as it is.
func (o *Optimizer) Update(fn func() error) error {
	if err := torch.Do(func() error { o.e.shard(); return nil }); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	return o.collective("gathering the weights", o.e.unshard)
}

// Steps is the number of steps taken and skipped (a loaded state's included).
func (o *Optimizer) Steps() int { return o.e.steps() }

// State is the optimizer's checkpoint in torch.AdamW's format (torch/optim_state.go: keyed by
// parameter name, whole tensors, float32 masters of bfloat16 and float16 parameters), whatever
// the sharding: a state resumes at any world size and stage. Sharded, it is a collective that
// gathers the tensors onto the CPU, in the current scope; otherwise the tensors are the live
// buffers. Write them out before the next Step.
func (o *Optimizer) State() map[string]*torch.Tensor { return o.e.state() }

// LoadState takes a State (of any world size and stage) and keeps what this rank holds. Every
// entry is checked first: an error names it and changes nothing. A float32 parameter has no
// master entry: its weights are restored by the caller first.
func (o *Optimizer) LoadState(st map[string]*torch.Tensor) error { return o.e.loadState(st) }

// Close frees the optimizer state and buffers (the parameters are the caller's).
func (o *Optimizer) Close() { o.e.close() }

// collective runs fn, whose collectives are over the group, and says where a failure happened.
func (o *Optimizer) collective(what string, fn func()) error {
	if err := torch.Collective(o.pg, what, fn); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	return nil
}
