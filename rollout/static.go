package rollout

import (
	"fmt"
	"log"

	"github.com/mtgrpo/mtgrpo/torch"
)

// The static decode step. A step in which every running sequence decodes one token, in slots
// 0..n-1 (the engine keeps them there, compact), runs as one call across the binding: the model's
// forward pass and the sampling of every row on the device, from preallocated buffers
// (model.StaticDecoder), replayed from CUDA graphs on CUDA unless they are switched off. Steps that
// prefill prompts or copy caches run through Backend.Extend and the sampler as before. Both draw
// the same tokens from the same uniform numbers: the request's own stream gives each row's u in
// the same order either way.

// DecodeStepper is a Backend with a static decode step (ModelBackend). A Backend that wraps
// another and keeps its own account of the slots' tokens must implement it too (and count the
// step's tokens) for the engine to use the step through it; otherwise the engine's steps go
// through Extend.
type DecodeStepper interface {
	// StaticOn reports whether the static step can run now.
	StaticOn() bool
	// DecodeStep appends tokens[i] to slot i, samples with params (torch.Sample's columns) under
	// mode and writes len(tokens) rows of torch.SampleOutCols values into out.
	DecodeStep(tokens []int32, params []float32, mode torch.SampleMode, out []float64) error
}

// contiguous reports slots 0, 1, ..., len-1.
func contiguous(slots []int) bool {
	for i, s := range slots {
		if s != i {
			return false
		}
	}
	return true
}

// staticStep samples the step of plan p (one token per sequence, slots 0..n-1) in one static step.
func (e *Engine) staticStep(sd DecodeStepper, p *stepPlan) ([]drawn, error) {
	n := len(p.seqs)
	e.draws = e.draws[:0]
	e.tokens = e.tokens[:0]
	for i, q := range p.seqs {
		e.draws = append(e.draws, draw{s: &q.req.Sampling, u: q.rng.Float64()})
		e.tokens = append(e.tokens, p.tokens[i][0])
	}
	if cap(e.params) < n*torch.SampleCols {
		e.params = make([]float32, e.b.Slots()*torch.SampleCols)
		e.out = make([]float64, e.b.Slots()*torch.SampleOutCols)
	}
	prm := e.params[:n*torch.SampleCols]
	fillParams(prm, e.draws, e.b.Vocab())
	if err := sd.DecodeStep(e.tokens, prm, sampleMode(e.draws), e.out); err != nil {
		return nil, err
	}
	e.stats.StaticSteps++
	return readDrawn(e.out, n), nil
}

// StaticOn reports whether decode steps run as one static step: on unless SetStaticStep(false),
// and off while the model has LoRA adapters (the static step multiplies the base weights only;
// the adapters' products go through Extend).
func (b *ModelBackend) StaticOn() bool { return b.static != nil && !b.eager && b.M.LoRA() == nil }

// SetStaticStep turns the static decode step on (the default) or off; off, every step runs
// through Extend and the sampler, op by op (for comparisons).
func (b *ModelBackend) SetStaticStep(on bool) { b.eager = !on }

// SetCUDAGraphs turns the static step's CUDA graphs on (the default on CUDA) or off
// (rollout.cuda_graphs, verl's enforce_eager); nothing on the CPU, where the step runs eagerly.
func (b *ModelBackend) SetCUDAGraphs(on bool) {
	if b.static != nil {
		b.static.Graphs = on && b.M.Device.IsCUDA()
	}
}

// DecoderStats are the static step's graph counters (captures, their time, the pool's bytes).
func (b *ModelBackend) DecoderStats() torch.DecoderStats {
	if b.static == nil {
		return torch.DecoderStats{}
	}
	return b.static.Stats()
}

// DecodeStep runs one static step (DecodeStepper).
func (b *ModelBackend) DecodeStep(tokens []int32, params []float32, mode torch.SampleMode, out []float64) error {
	info, err := b.static.Step(tokens, params, mode, out)
	if err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	if info.FellBack {
		msg := "rollout: CUDA graphs of the decode step are off for this run, decoding eagerly: " + b.static.Stats().GraphsOff
		if b.Warn != nil {
			b.Warn(msg)
		} else {
			log.Print("warning: " + msg)
		}
	}
	return nil
}

// newStatic makes the static decoder of the backend's cache.
func (b *ModelBackend) newStatic() error {
	s, err := b.M.NewStaticDecoder(b.Cache)
	if err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	b.static = s
	return nil
}

var _ DecodeStepper = (*ModelBackend)(nil)
