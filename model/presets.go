package model

import (
	"fmt"
	"strings"
)

// A preset is the size of a model (widths, depth, vocabulary and special token ids); the
// architecture (llama, qwen2, qwen3) adds its own traits: RoPE base and scaling, norm epsilon, head_dim
// written out (qwen3). So `--arch qwen3 --preset qwen2.5-0.5b` is a Qwen3 of Qwen2.5-0.5B's shape.
type preset struct {
	name                                    string
	hidden, intermediate, layers, heads, kv int
	vocab                                   int // 0: the tokenizer's size (tiny)
	maxPos                                  int
	tied                                    bool
	dtype                                   string
	bos                                     int
	eos                                     []int // config.json eos: the first; generation_config: all
}

var presets = map[string]preset{
	// The tiny model runs the demo and the tests on CPU: d = 64, 4 layers, 4 heads over 2 KV heads
	// (grouped-query attention exercised), byte-level vocabulary of the project's tiny tokenizer.
	"tiny": {name: "tiny", hidden: 64, intermediate: 192, layers: 4, heads: 4, kv: 2, maxPos: 4096,
		tied: true, dtype: "float32"},
	// Qwen2.5-0.5B-Instruct's shape and vocabulary (Qwen2.5 and Qwen3 share the tokenizer).
	"qwen2.5-0.5b": {name: "qwen2.5-0.5b", hidden: 896, intermediate: 4864, layers: 24, heads: 14, kv: 2,
		vocab: 151936, maxPos: 32768, tied: true, dtype: "bfloat16", bos: 151643, eos: []int{151645, 151643}},
	// Qwen2.5-{7,14,32,72}B-Instruct's shapes (head untied), for planning memory at scale (mtgrpo
	// plan) and for runs that start from random weights of that size.
	"qwen2.5-7b": {name: "qwen2.5-7b", hidden: 3584, intermediate: 18944, layers: 28, heads: 28, kv: 4,
		vocab: 152064, maxPos: 32768, dtype: "bfloat16", bos: 151643, eos: []int{151645, 151643}},
	"qwen2.5-14b": {name: "qwen2.5-14b", hidden: 5120, intermediate: 13824, layers: 48, heads: 40, kv: 8,
		vocab: 152064, maxPos: 32768, dtype: "bfloat16", bos: 151643, eos: []int{151645, 151643}},
	"qwen2.5-32b": {name: "qwen2.5-32b", hidden: 5120, intermediate: 27648, layers: 64, heads: 40, kv: 8,
		vocab: 152064, maxPos: 32768, dtype: "bfloat16", bos: 151643, eos: []int{151645, 151643}},
	"qwen2.5-72b": {name: "qwen2.5-72b", hidden: 8192, intermediate: 29568, layers: 80, heads: 64, kv: 8,
		vocab: 152064, maxPos: 32768, dtype: "bfloat16", bos: 151643, eos: []int{151645, 151643}},
	// Llama-3.2-1B-Instruct's shape and vocabulary.
	"llama3.2-1b": {name: "llama3.2-1b", hidden: 2048, intermediate: 8192, layers: 16, heads: 32, kv: 8,
		vocab: 128256, maxPos: 131072, tied: true, dtype: "bfloat16", bos: 128000,
		eos: []int{128001, 128008, 128009}},
}

// PresetNames lists the presets `mtgrpo init` accepts.
func PresetNames() []string { return sortedKeys(presets) }

// Vocab is what a model's config takes from its tokenizer: the vocabulary size and the bos and eos
// ids (config.json's eos_token_id is EOS[0]; generation_config.json stops on all of EOS).
type Vocab struct {
	Size int
	BOS  int
	EOS  []int
}

// PresetConfig returns the config.json and generation_config.json of an architecture ("llama", "qwen2",
// "qwen3") at a preset's size. v overrides the preset's vocabulary (the tiny preset has none of its
// own: pass its tokenizer's).
func PresetConfig(arch, presetName string, v *Vocab) (*Config, *GenerationConfig, error) {
	p, ok := presets[presetName]
	if !ok {
		return nil, nil, fmt.Errorf("model: unknown preset %q (%s)", presetName, strings.Join(PresetNames(), ", "))
	}
	if v != nil {
		p.vocab, p.bos, p.eos = v.Size, v.BOS, v.EOS
	}
	if p.vocab <= 0 {
		return nil, nil, fmt.Errorf("model: preset %s needs a vocabulary (its tokenizer's size)", presetName)
	}
	for _, id := range append([]int{p.bos}, p.eos...) {
		if id < 0 || id >= p.vocab {
			return nil, nil, fmt.Errorf("model: preset %s: token id %d is outside the vocabulary [0, %d)", presetName, id, p.vocab)
		}
	}
	if _, ok := architectures[arch]; !ok {
		return nil, nil, fmt.Errorf("model: unknown architecture %q (llama, qwen2, qwen3)", arch)
	}
	c := &Config{Architectures: []string{architectures[arch]}, ModelType: arch, VocabSize: p.vocab,
		HiddenSize: p.hidden, IntermediateSize: p.intermediate, NumHiddenLayers: p.layers,
		NumAttentionHeads: p.heads, NumKeyValueHeads: p.kv, HiddenAct: "silu",
		MaxPositionEmbeddings: p.maxPos, InitializerRange: 0.02, TieWordEmbeddings: p.tied,
		TorchDtype: p.dtype}
	bos := p.bos
	c.BOSTokenID = &bos
	if len(p.eos) > 0 {
		c.EOSTokenID = TokenIDs{IDs: p.eos[:1]}
	}
	switch arch {
	case "llama": // Llama 3.2: θ 5e5, llama3 frequency scaling, eps 1e-5, head_dim written out.
		c.RMSNormEps, c.RopeTheta = 1e-5, 500000
		c.HeadDim = p.hidden / p.heads
		c.RopeScaling = &RopeParameters{RopeType: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4,
			OriginalMaxPositionEmbeddings: 8192}
	case "qwen2": // Qwen2.5: θ 1e6, eps 1e-6, no sliding window.
		c.RMSNormEps, c.RopeTheta = 1e-6, 1000000
		c.MaxWindowLayers = p.layers
	case "qwen3": // Qwen3: θ 1e6, eps 1e-6, head_dim written out (it need not be hidden/heads).
		c.RMSNormEps, c.RopeTheta = 1e-6, 1000000
		c.HeadDim = p.hidden / p.heads
		c.MaxWindowLayers = p.layers
	}
	if err := c.Validate(); err != nil {
		return nil, nil, fmt.Errorf("model: preset %s/%s: %w", arch, presetName, err)
	}
	g := &GenerationConfig{BOSTokenID: c.BOSTokenID, EOSTokenID: TokenIDs{IDs: p.eos, List: len(p.eos) > 1}}
	return c, g, nil
}

// NewPreset builds a randomly initialised model of a preset in memory (see New): the demo's default
// model is NewPreset("qwen3", "tiny", <the tiny tokenizer's Vocab>, seed, cpu options), with no files.
func NewPreset(arch, presetName string, v *Vocab, seed uint64, o Options) (*Model, error) {
	c, g, err := PresetConfig(arch, presetName, v)
	if err != nil {
		return nil, err
	}
	return New(c, g, o, seed)
}
