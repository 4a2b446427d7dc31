package model

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// StaticDecoder runs decode steps over a KVCache as one call across the binding each: every layer
// with its cache writes, the head and the sampling of the next token on the device, from
// preallocated input buffers to preallocated output buffers (torch.Decoder). On CUDA the step is
// captured as CUDA graphs and replayed (Graphs). It computes what Decode followed by the rollout
// sampler computes; the rollout engine uses it for its steps in which every running sequence
// decodes one token.
//
// Row i of a step is slot i: a step decodes slots 0..n-1 (the engine keeps its running sequences
// there). With graphs a step is padded to a bucket of rows (Buckets) and its attention reads a
// bucket of key positions (KeyBucket); the padding rows write their keys and values only into the
// scratch position of slots n..bucket-1 (KVCache), whatever those slots hold. LoRA adapters are
// not applied: a model with adapters decodes through Extend.
// Every method runs on the torch thread.
type StaticDecoder struct {
	// Graphs replays the step from CUDA graphs (the default on CUDA); false, or on the CPU, runs it
	// eagerly, still in one call.
	Graphs bool

	m       *Model
	c       *KVCache
	d       *torch.Decoder
	w       torch.DecoderWeights
	buckets []int
	pad     bool // pad rows and key positions to their buckets without graphs (tests)
	tokens  []int64
	pos     []int64
}

// NewStaticDecoder makes the static decoder of c (one per cache). Close it before the cache.
func (m *Model) NewStaticDecoder(c *KVCache) (s *StaticDecoder, err error) {
	defer torch.Recover(&err)
	if c.m != m {
		return nil, fmt.Errorf("model: NewStaticDecoder: the cache belongs to another model")
	}
	// The RoPE table must cover every position of the cache: growing it later would move it, and
	// graphs would be captured again.
	m.rope.ensure(m, c.MaxLen)
	cfg := m.Config
	s = &StaticDecoder{Graphs: m.Device.IsCUDA(), m: m, c: c, buckets: Buckets(c.Slots())}
	s.d, err = torch.NewDecoder(torch.DecoderShape{Layers: cfg.NumHiddenLayers, Heads: cfg.NumAttentionHeads,
		KVHeads: cfg.KVHeads(), HeadDim: cfg.HeadDimension(), Eps: cfg.RMSNormEps, MaxRows: c.Slots(),
		Buckets: s.buckets, Device: m.Device})
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	s.w.Layers = make([][torch.DecLayerSize]*torch.Tensor, len(m.Layers))
	s.w.Cache = make([]*torch.Tensor, 0, 2*len(m.Layers))
	s.tokens, s.pos = make([]int64, c.Slots()), make([]int64, c.Slots())
	return s, nil
}

// Buckets are the row counts a step of slots slots is padded to under graphs: 1, 2, 4, 8, then
// steps of 8 up to 64 and of 16 beyond, and slots itself.
func Buckets(slots int) []int {
	var b []int
	for r := 1; r <= slots; {
		b = append(b, r)
		switch {
		case r < 8:
			r *= 2
		case r < 64:
			r += 8
		default:
			r += 16
		}
	}
	if b[len(b)-1] != slots {
		b = append(b, slots)
	}
	return b
}

// bucket is the smallest bucket of at least n rows.
func (s *StaticDecoder) bucket(n int) int {
	for _, b := range s.buckets {
		if b >= n {
			return b
		}
	}
	return n
}

// KeyBucket is the number of key positions a step whose rows need need positions reads under
// graphs: 128, 192, 256, 384, 512, 768, ... (powers of two and one and a half times them), at most
// the cache length. A graph per bucket; a row reads at most half as many positions again as it needs.
func KeyBucket(need, cacheLen int) int {
	b := 128
	for b < need {
		if b&(b-1) == 0 { // a power of two: next is 1.5 times it
			b += b / 2
		} else {
			b = b / 3 * 4
		}
	}
	return min(b, cacheLen)
}

// Step appends tokens[i] to slot i for every i < len(tokens), samples each slot's next token with
// the settings params[i*torch.SampleCols:] under mode (torch.Sample's columns and modes) and
// writes len(tokens) rows of torch.SampleOutCols values into out. The cache's lengths advance
// by one. Nothing changes when it fails its checks.
func (s *StaticDecoder) Step(tokens []int32, params []float32, mode torch.SampleMode, out []float64) (info torch.DecoderInfo, err error) {
	n := len(tokens)
	if n == 0 || n > s.c.Slots() {
		return info, fmt.Errorf("model: a static step of %d rows over %d slots", n, s.c.Slots())
	}
	if s.m.lora != nil {
		return info, fmt.Errorf("model: the static decode step multiplies the base weights only: with LoRA adapters, decode through Extend")
	}
	need := 0
	for i, t := range tokens {
		if l := s.c.lens[i]; l >= s.c.MaxLen {
			return info, fmt.Errorf("model: slot %d would hold %d tokens, the cache holds at most %d", i, l+1, s.c.MaxLen)
		}
		s.tokens[i], s.pos[i] = int64(t), int64(s.c.lens[i])
		need = max(need, s.c.lens[i]+1)
	}
	step := torch.DecoderStep{Tokens: s.tokens[:n], Positions: s.pos[:n], Params: params, Mode: mode, Out: out,
		Graphs: s.Graphs && s.m.Device.IsCUDA()}
	if step.Graphs || s.pad {
		step.Rows, step.Keys = s.bucket(n), int64(KeyBucket(need, s.c.MaxLen))
	}
	s.weights()
	if info, err = s.d.Step(&s.w, &step); err != nil {
		return info, fmt.Errorf("model: %w", err)
	}
	for i := range tokens {
		s.c.lens[i]++
	}
	return info, nil
}

// weights points the step's weight list at the model's current tensors (a parameter may have been
// replaced since the last step).
func (s *StaticDecoder) weights() {
	m := s.m
	for l, layer := range m.Layers {
		p := layer.parts()
		w := &s.w.Layers[l]
		w[torch.DecInNorm], w[torch.DecPostNorm] = p.inNorm.Weight, p.postNorm.Weight
		w[torch.DecQ], w[torch.DecK], w[torch.DecV] = p.q.Weight, p.k.Weight, p.v.Weight
		w[torch.DecQBias], w[torch.DecKBias], w[torch.DecVBias] = p.q.Bias, p.k.Bias, p.v.Bias
		w[torch.DecQNorm], w[torch.DecKNorm] = nil, nil
		if p.qNorm != nil {
			w[torch.DecQNorm], w[torch.DecKNorm] = p.qNorm.Weight, p.kNorm.Weight
		}
		w[torch.DecO], w[torch.DecOBias] = p.o.Weight, p.o.Bias
		g, u, d := &p.mlp.GateProj, &p.mlp.UpProj, &p.mlp.DownProj
		w[torch.DecGate], w[torch.DecUp], w[torch.DecGateBias], w[torch.DecUpBias] = g.Weight, u.Weight, g.Bias, u.Bias
		w[torch.DecDown], w[torch.DecDownBias] = d.Weight, d.Bias
	}
	s.w.Embed, s.w.Norm, s.w.Head = m.EmbedTokens, m.Norm.Weight, m.LMHead.Weight
	s.w.Cos, s.w.Sin = m.rope.cos, m.rope.sin
	s.w.Cache = s.w.Cache[:0]
	for l := range m.Layers {
		s.w.Cache = append(s.w.Cache, s.c.K[l], s.c.V[l])
	}
}

// Logits returns a copy of the last step's float32 logits of its first n rows, [n, vocab] (tests).
func (s *StaticDecoder) Logits(n int) *torch.Tensor { return s.d.Logits(n) }

// Stats returns the decoder's graph counters.
func (s *StaticDecoder) Stats() torch.DecoderStats { return s.d.Stats() }

// Close frees the decoder's buffers and graphs (not the cache or the model).
func (s *StaticDecoder) Close() { s.d.Close() }
