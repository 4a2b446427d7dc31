package model

import (
	"math/rand/v2"
	"strings"

	"github.com/mtgrpo/mtgrpo/torch"
)

// New builds a randomly initialised model of cfg the way transformers' _init_weights does: every
// Linear and Embedding weight drawn from normal(0, initializer_range), biases 0, RMSNorm weights 1,
// the pad_token_id row of the embedding zeroed. The random numbers come from Go's PCG seeded with
// seed, in weight-table order, so a seed gives the same model on every machine, device and libtorch
// (the tiny default model needs no files). gen may be nil. Run it on the torch thread.
func New(cfg *Config, gen *GenerationConfig, o Options, seed uint64) (m *Model, err error) {
	defer torch.Recover(&err)
	m, err = newModel(cfg, o)
	if err != nil {
		return nil, err
	}
	m.Generation = gen
	if gen == nil {
		m.Generation = generationFromConfig(cfg)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d746772706f)) // "mtgrpo"
	std := cfg.InitializerRange
	for _, w := range m.weights() {
		n := 1
		for _, d := range w.shape {
			n *= int(d)
		}
		vals := make([]float32, n)
		switch {
		case strings.HasSuffix(w.name, "norm.weight"):
			for i := range vals {
				vals[i] = 1
			}
		case strings.HasSuffix(w.name, ".bias"):
		default:
			for i := range vals {
				vals[i] = float32(rng.NormFloat64() * std)
			}
		}
		if pad := cfg.PaddingIdx(); w.name == "model.embed_tokens.weight" && pad >= 0 {
			clear(vals[pad*cfg.HiddenSize : (pad+1)*cfg.HiddenSize])
		}
		m.scope.With(func() {
			host := torch.FromSlice(vals, w.shape...)
			*w.t = host.To(m.Device, m.DType)
			host.Free()
		})
	}
	m.ready()
	return m, nil
}
