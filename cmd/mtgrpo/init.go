package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

var initCommand = command{
	name:    "init",
	summary: "Write a randomly initialised model directory (config.json, generation_config.json, safetensors,\ntokenizer files) that this program and transformers load. --out must be new or empty unless --force.",
	examples: []string{
		"mtgrpo init --out models/tiny",
		"mtgrpo init --arch llama --preset llama3.2-1b --seed 7 --out models/llama-1b-random",
	},
}

var architectures = []string{"llama", "qwen2", "qwen3"}

// initModel is `mtgrpo init`. The model is written into a staging directory beside --out and moved
// into place only when complete, so an interrupted init leaves --out as it was; see staging.go.
func initModel(args []string) error {
	fs := initCommand.flags()
	arch := fs.String("arch", "qwen3", "architecture: "+strings.Join(architectures, ", "))
	preset := fs.String("preset", "tiny", "size and tokenizer: "+strings.Join(model.PresetNames(), ", "))
	seed := fs.Uint64("seed", 0, "random seed (the same seed gives the same weights everywhere)")
	out := fs.String("out", "", "output directory (required)")
	dtype := fs.String("dtype", "", "saved dtype (default: the preset's, float32 for tiny, bfloat16 otherwise)")
	force := fs.Bool("force", false, "write into a non-empty --out, replacing the files init writes (other files are kept)")
	threadSpec := threadsFlag(fs)
	if err := initCommand.parse(fs, args); err != nil {
		return err
	}
	switch {
	case *out == "":
		return usagef("init: --out is required")
	case !slices.Contains(architectures, *arch):
		return usagef("init: --arch %q: unknown architecture (%s)", *arch, strings.Join(architectures, ", "))
	case !slices.Contains(model.PresetNames(), *preset):
		return usagef("init: --preset %q: unknown preset (%s)", *preset, strings.Join(model.PresetNames(), ", "))
	}
	st, err := newStaging(*out, *force)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	defer st.discard()
	vocab, tokDir, err := initTokenizer(*preset, st.dir)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	cfg, gen, err := model.PresetConfig(*arch, *preset, vocab)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if *dtype != "" {
		cfg.TorchDtype = *dtype
	}
	var params int64
	err = withTorch(*threadSpec, func() error {
		m, err := model.New(cfg, gen, model.Options{DType: cfg.TorchDtype}, *seed)
		if err != nil {
			return err
		}
		defer m.Close()
		m.TokenizerDir = tokDir
		params = m.NumParameters()
		return m.Export(st.dir, model.ExportOptions{})
	})
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := st.commit(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	fmt.Printf("mtgrpo init: %s %s, %d parameters, seed %d -> %s\n", *arch, *preset, params, *seed, *out)
	return nil
}

// initTokenizer puts the preset's tokenizer where the export copies it from: the tiny tokenizer is
// written into dir (its vocabulary sizes the model); real presets use their installed assets.
func initTokenizer(preset, dir string) (*model.Vocab, string, error) {
	if preset != "tiny" {
		src, err := tokenizerAssets(preset)
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
