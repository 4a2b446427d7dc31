// Package modelinit writes randomly initialised model directories: an architecture at a preset's
// size, any width overridden, with the preset's tokenizer. `mtgrpo init` and the training job
// (a run's init: section, the demo) both use it.
package modelinit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Architectures are the ones Write knows.
var Architectures = []string{"llama", "qwen2", "qwen3"}

// Spec is the model to write; a run's init: section (its keys the yaml names below).
type Spec struct {
	Arch   string `yaml:"arch"`   // llama, qwen2, qwen3
	Preset string `yaml:"preset"` // model.PresetNames(): tiny, qwen2.5-0.5b, llama3.2-1b
	Seed   uint64 `yaml:"seed"`
	// DType is the saved dtype ("": the preset's, float32 for tiny, bfloat16 otherwise).
	DType string `yaml:"-"`
	// Widths that replace the preset's; 0 keeps it. HeadDim 0 with a new HiddenSize or
	// NumAttentionHeads is hidden/heads.
	HiddenSize        int `yaml:"hidden_size"`
	IntermediateSize  int `yaml:"intermediate_size"`
	NumHiddenLayers   int `yaml:"num_hidden_layers"`
	NumAttentionHeads int `yaml:"num_attention_heads"`
	NumKeyValueHeads  int `yaml:"num_key_value_heads"`
	HeadDim           int `yaml:"head_dim"`
	// RopeTheta replaces the architecture's RoPE base (0 keeps it). Small models with short head
	// dimensions learn position-dependent attention (copying) faster with a smaller base such as
	// 10000: the architectures' 500000 or 1000000 leave few rotation frequencies that vary over a
	// few hundred tokens.
	RopeTheta float64 `yaml:"rope_theta"`
}

// Check names the first bad field of s: an unknown architecture or preset, a width below 0 or
// above what the model loader supports (a setting.KeyError naming it init.FIELD, the init:
// section's key, or init.dtype), or widths that do not make a model
// together (heads that do not divide, an odd head_dim), before anything is written or loaded.
func (s Spec) Check() error {
	switch {
	case !slices.Contains(Architectures, s.Arch):
		return setting.Errorf("init.arch", "unknown architecture %q (%s)", s.Arch, strings.Join(Architectures, ", "))
	case !slices.Contains(model.PresetNames(), s.Preset):
		return setting.Errorf("init.preset", "unknown preset %q (%s)", s.Preset, strings.Join(model.PresetNames(), ", "))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", s.HiddenSize}, {"intermediate_size", s.IntermediateSize}, {"num_hidden_layers", s.NumHiddenLayers},
		{"num_attention_heads", s.NumAttentionHeads}, {"num_key_value_heads", s.NumKeyValueHeads}, {"head_dim", s.HeadDim}} {
		limit, _ := model.SizeLimit(f.name)
		switch {
		case f.v < 0:
			return setting.Errorf("init."+f.name, "%d: must be at least 0 (0 keeps the preset's)", f.v)
		case f.v > limit:
			return setting.Errorf("init."+f.name, "%d: larger than this program supports (at most %d)", f.v, limit)
		}
	}
	if s.RopeTheta < 0 {
		return setting.Errorf("init.rope_theta", "%g: must be at least 0 (0 keeps the architecture's)", s.RopeTheta)
	}
	if s.DType != "" {
		if _, err := model.ParseDType(s.DType); err != nil {
			return &setting.KeyError{Key: "init.dtype", Err: err}
		}
	}
	// The widths together: the vocabulary does not matter to them, and the tiny preset takes its
	// tokenizer's, so a placeholder stands in for it here.
	_, _, err := s.Config(&model.Vocab{Size: checkVocab, BOS: 0, EOS: []int{0}})
	return err
}

// checkVocab is the placeholder vocabulary Check builds the config with.
const checkVocab = 1 << 16

// Config returns the model's config.json and generation_config.json for a vocabulary, with the
// widths of s applied and checked.
func (s Spec) Config(v *model.Vocab) (*model.Config, *model.GenerationConfig, error) {
	cfg, gen, err := model.PresetConfig(s.Arch, s.Preset, v)
	if err != nil {
		return nil, nil, err
	}
	set := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	set(&cfg.HiddenSize, s.HiddenSize)
	set(&cfg.IntermediateSize, s.IntermediateSize)
	set(&cfg.NumHiddenLayers, s.NumHiddenLayers)
	set(&cfg.NumAttentionHeads, s.NumAttentionHeads)
	set(&cfg.NumKeyValueHeads, s.NumKeyValueHeads)
	if cfg.MaxWindowLayers > 0 {
		cfg.MaxWindowLayers = cfg.NumHiddenLayers
	}
	if cfg.HeadDim > 0 || s.HeadDim > 0 {
		cfg.HeadDim = cfg.HiddenSize / cfg.NumAttentionHeads
		set(&cfg.HeadDim, s.HeadDim)
	}
	if s.RopeTheta > 0 {
		cfg.RopeTheta = s.RopeTheta
	}
	if s.DType != "" {
		cfg.TorchDtype = s.DType
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s/%s with the given widths: %w", s.Arch, s.Preset, err)
	}
	return cfg, gen, nil
}

// ModelConfig is the config.json Write would write, without writing the model: the tiny
// preset's vocabulary is counted from its tokenizer, written into a temporary directory.
func (s Spec) ModelConfig() (*model.Config, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	var v *model.Vocab
	if s.Preset == "tiny" {
		dir, err := os.MkdirTemp("", "mtgrpo-tiny-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if v, _, err = writeTokenizer(s.Preset, dir); err != nil {
			return nil, err
		}
	}
	c, _, err := s.Config(v)
	return c, err
}

// Write writes the model into dir (which must exist): tokenizer files, config.json,
// generation_config.json and the weights. It returns the parameter count. Run it on the torch
// thread.
func Write(dir string, s Spec) (int64, error) {
	if err := s.Check(); err != nil {
		return 0, err
	}
	vocab, tokDir, err := writeTokenizer(s.Preset, dir)
	if err != nil {
		return 0, err
	}
	cfg, gen, err := s.Config(vocab)
	if err != nil {
		return 0, err
	}
	m, err := model.New(cfg, gen, model.Options{DType: cfg.TorchDtype}, s.Seed)
	if err != nil {
		return 0, err
	}
	defer m.Close()
	m.TokenizerDir = tokDir
	return m.NumParameters(), m.Export(dir, model.ExportOptions{})
}

// writeTokenizer puts the preset's tokenizer where the export copies it from: the tiny tokenizer
// is written into dir (its vocabulary sizes the model); real presets use their installed assets.
func writeTokenizer(preset, dir string) (*model.Vocab, string, error) {
	if preset != "tiny" {
		src, err := TokenizerAssets(preset)
		return nil, src, err
	}
	if err := tokenizer.WriteTiny(dir); err != nil {
		return nil, "", err
	}
	tk, err := tokenizer.Load(dir)
	if err != nil {
		return nil, "", err
	}
	v := &model.Vocab{Size: tk.VocabSize(), EOS: tk.EOSIDs()}
	// Qwen-style tokenizers name no bos_token; their configs use <|endoftext|> as bos_token_id.
	_, bos, ok := tk.SpecialToken("bos")
	if !ok {
		if _, bos, ok = tk.SpecialToken("<|endoftext|>"); !ok && len(v.EOS) > 0 {
			bos = v.EOS[0]
		}
	}
	v.BOS = bos
	return v, dir, nil
}
