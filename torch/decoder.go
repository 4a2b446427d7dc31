package torch

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// Decoder runs the decode step of a pre-norm decoder (SwiGLU MLP, grouped-query attention over a
// KV cache, RoPE, optional q/k norms and biases) in one crossing per step: embedding, every layer
// with its cache writes, the final norm, the head and Sample, from inputs written into
// preallocated buffers to outputs read from preallocated buffers, with one host synchronisation
// (the copy of the sampled ids) per step. On CUDA the same step is captured as CUDA graphs, one per
// (sampling mode, rows, key positions), and replayed (DecoderStep.Graphs).
//
// Row b of a step is cache slot b. A step of n rows may be padded to Rows rows (graphs have fixed
// shapes): the padding rows decode token 0 and write their keys and values into the last position
// of their slots, which the cache keeps as scratch (its other positions are untouched), and their
// results are dropped.
//
// The weights, cache and RoPE tables are passed to every Step (a Decoder keeps no reference to
// them, so freeing them frees their memory): q/k/v and gate/up are laid out back to back on the
// way (FuseRows). A graph records the addresses it reads; a step that finds one moved (a fused
// group copied into new storage, a reallocated cache) drops every graph and captures them again.
// A capture that fails turns graphs off for the decoder: the step runs eagerly from then on, and
// DecoderStats.GraphsOff says why. Methods run on the torch thread; Close frees the decoder.
type Decoder struct {
	p       C.mt_decoder
	layers  int
	weights []C.mt_tensor // per step, reused: the step itself allocates nothing in Go
	cache   []C.mt_tensor
	info    [C.MT_STEP_INFO]C.int
}

// Layer weight slots of DecoderWeights.Layers (nil where the architecture has none).
const (
	DecInNorm    = C.MT_DL_IN_NORM
	DecQ         = C.MT_DL_Q
	DecK         = C.MT_DL_K
	DecV         = C.MT_DL_V
	DecQBias     = C.MT_DL_Q_BIAS
	DecKBias     = C.MT_DL_K_BIAS
	DecVBias     = C.MT_DL_V_BIAS
	DecQNorm     = C.MT_DL_Q_NORM
	DecKNorm     = C.MT_DL_K_NORM
	DecO         = C.MT_DL_O
	DecOBias     = C.MT_DL_O_BIAS
	DecPostNorm  = C.MT_DL_POST_NORM
	DecGate      = C.MT_DL_GATE
	DecUp        = C.MT_DL_UP
	DecGateBias  = C.MT_DL_GATE_BIAS
	DecUpBias    = C.MT_DL_UP_BIAS
	DecDown      = C.MT_DL_DOWN
	DecDownBias  = C.MT_DL_DOWN_BIAS
	DecLayerSize = C.MT_DL_COUNT
)

// DecoderShape is what a Decoder is built for.
type DecoderShape struct {
	Layers, Heads, KVHeads, HeadDim int
	Eps                             float64 // the RMSNorms' epsilon
	// MaxRows is the most rows a step may have (the cache's slots).
	MaxRows int
	// Buckets (rising, within [1, MaxRows]) are the row counts steps are padded to when graphs are
	// on: the graphs of all of them are captured together, largest first.
	Buckets []int
	Device  Device
}

// DecoderWeights are what a step reads besides its static buffers. Layers holds DecLayerSize
// tensors per layer, in the Dec* order; Cache the K and V of each layer in turn, each [slots,
// kv_heads, len + 1, head_dim] and contiguous, the last position scratch; Cos and Sin the RoPE
// tables [positions, head_dim] (positions >= len) in the model dtype.
type DecoderWeights struct {
	Layers                      [][DecLayerSize]*Tensor
	Embed, Norm, Head, Cos, Sin *Tensor
	Cache                       []*Tensor
}

// DecoderStep is one step's inputs and outputs. Row b < len(Tokens) appends Tokens[b] at
// Positions[b] of slot b and samples with Params[b*SampleCols:] under Mode; Out receives
// len(Tokens) rows of SampleOutCols float64 (Sample's columns).
type DecoderStep struct {
	Tokens, Positions []int64
	Params            []float32
	Mode              SampleMode
	// Rows pads the step (0: len(Tokens)); Keys is how many key positions each row reads, at least
	// every row's position + 1 (0: that).
	Rows int
	Keys int64
	// Graphs replays the step from CUDA graphs (capturing them first when needed); CUDA only.
	Graphs bool
	Out    []float64
}

// DecoderInfo is what one Step did.
type DecoderInfo struct {
	Replayed bool // the step ran as a graph replay
	Captured int  // graphs captured in this step
	Dropped  bool // graphs dropped because what they read moved
	// FellBack: a capture failed in this step and graphs are off from now on (DecoderStats.GraphsOff
	// says why).
	FellBack bool
	Relaid   int // fused weight groups copied into new storage (their parts had been replaced)
}

// NewDecoder makes a decoder of shape s.
func NewDecoder(s DecoderShape) (*Decoder, error) {
	if s.Layers < 1 {
		return nil, fmt.Errorf("torch: decoder with %d layers", s.Layers)
	}
	b := make([]C.int, len(s.Buckets))
	for i, r := range s.Buckets {
		b[i] = C.int(r)
	}
	var bp *C.int
	if len(b) > 0 {
		bp = &b[0]
	}
	d := &Decoder{layers: s.Layers}
	err := Do(func() error {
		return checkErr("NewDecoder", C.mt_decoder_new(C.int(s.Layers), C.int(s.Heads), C.int(s.KVHeads), C.int(s.HeadDim),
			C.double(s.Eps), C.int(s.MaxRows), bp, C.int(len(b)), C.int(s.Device), &d.p))
	})
	if err != nil {
		return nil, err
	}
	d.weights = make([]C.mt_tensor, s.Layers*DecLayerSize+C.MT_DM_COUNT)
	d.cache = make([]C.mt_tensor, 2*s.Layers)
	return d, nil
}

// Step runs one decode step (see Decoder and DecoderStep). Errors name the bad input; the cache is
// unchanged by a step that fails its checks.
func (d *Decoder) Step(w *DecoderWeights, s *DecoderStep) (DecoderInfo, error) {
	n := len(s.Tokens)
	if d.p == nil {
		return DecoderInfo{}, fmt.Errorf("torch: Decoder.Step after Close")
	}
	if n == 0 || len(s.Positions) != n || len(s.Params) != n*SampleCols || len(s.Out) < n*SampleOutCols {
		return DecoderInfo{}, fmt.Errorf("torch: Decoder.Step: %d tokens, %d positions, %d settings, room for %d outputs",
			n, len(s.Positions), len(s.Params), len(s.Out)/SampleOutCols)
	}
	if len(w.Layers) != d.layers || len(w.Cache) != 2*d.layers {
		return DecoderInfo{}, fmt.Errorf("torch: Decoder.Step: %d layers of weights and %d cache tensors for %d layers",
			len(w.Layers), len(w.Cache), d.layers)
	}
	if err := d.fill(w); err != nil {
		return DecoderInfo{}, err
	}
	rows, keys := s.Rows, s.Keys
	if rows == 0 {
		rows = n
	}
	if keys == 0 {
		for _, p := range s.Positions {
			keys = max(keys, p+1)
		}
	}
	err := checkErr("Decoder.Step", C.mt_decoder_step(d.p, &d.weights[0], C.int(len(d.weights)), &d.cache[0],
		C.int(len(d.cache)), C.int(n), C.int(rows), C.int64_t(keys), C.int(s.Mode), cbool(s.Graphs),
		(*C.int64_t)(unsafe.Pointer(&s.Tokens[0])), (*C.int64_t)(unsafe.Pointer(&s.Positions[0])),
		(*C.float)(unsafe.Pointer(&s.Params[0])), (*C.double)(unsafe.Pointer(&s.Out[0])), &d.info[0]))
	if err != nil {
		return DecoderInfo{}, err
	}
	return DecoderInfo{Replayed: d.info[C.MT_STEP_REPLAYED] != 0, Captured: int(d.info[C.MT_STEP_CAPTURED]),
		Dropped: d.info[C.MT_STEP_DROPPED] != 0, FellBack: d.info[C.MT_STEP_FELL_BACK] != 0,
		Relaid: int(d.info[C.MT_STEP_RELAID])}, nil
}

// fill writes the handles of w into the reused arrays (nil stays NULL).
func (d *Decoder) fill(w *DecoderWeights) (err error) {
	defer Recover(&err)
	h := func(t *Tensor) C.mt_tensor {
		if t == nil {
			return nil
		}
		return t.handle("Decoder.Step")
	}
	for l, lw := range w.Layers {
		for i, t := range lw {
			d.weights[l*DecLayerSize+i] = h(t)
		}
	}
	g := d.weights[d.layers*DecLayerSize:]
	g[C.MT_DM_EMBED], g[C.MT_DM_NORM], g[C.MT_DM_HEAD] = h(w.Embed), h(w.Norm), h(w.Head)
	g[C.MT_DM_COS], g[C.MT_DM_SIN] = h(w.Cos), h(w.Sin)
	for i, t := range w.Cache {
		d.cache[i] = h(t)
	}
	return nil
}

// Logits returns a copy of the last step's float32 logits of rows [0, n), [n, vocab], in the
// current scope (for tests: a step keeps them in its static buffer).
func (d *Decoder) Logits(n int) *Tensor {
	var out C.mt_tensor
	check("Decoder.Logits", C.mt_decoder_logits(d.p, C.int(n), &out))
	return wrap("Decoder.Logits", out)
}

// DecoderStats are a decoder's graph counters.
type DecoderStats struct {
	Captures    int64         // graphs captured so far (recaptures included)
	CaptureTime time.Duration // time spent capturing them (their warm-up steps included)
	// PoolBytes is what the graphs' memory pool added to the CUDA caching allocator's reserve.
	PoolBytes int64
	Held      int64 // graphs held now
	// GraphsOff is why graphs are off for this decoder (a failed capture), "" while they are on.
	GraphsOff string
}

// Stats returns the decoder's graph counters.
func (d *Decoder) Stats() DecoderStats {
	var caps, pool, held C.int64_t
	var secs C.double
	var buf [512]C.char
	check("Decoder.Stats", C.mt_decoder_stats(d.p, &caps, &secs, &pool, &held, &buf[0], C.size_t(len(buf))))
	return DecoderStats{Captures: int64(caps), CaptureTime: time.Duration(float64(secs) * float64(time.Second)),
		PoolBytes: int64(pool), Held: int64(held), GraphsOff: C.GoString(&buf[0])}
}

// Close frees the decoder, its buffers and its graphs. Idempotent.
func (d *Decoder) Close() {
	if d.p == nil {
		return
	}
	check("Decoder.Close", C.mt_decoder_free(d.p))
	d.p = nil
}
