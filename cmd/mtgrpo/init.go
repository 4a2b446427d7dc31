package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// initModel is `mtgrpo init`: write a randomly initialised model directory (config.json,
// generation_config.json, safetensors, tokenizer files) that this program and transformers load.
func initModel(args []string) error {
	fs := pflag.NewFlagSet("init", pflag.ContinueOnError)
	arch := fs.String("arch", "qwen3", "architecture: qwen2, qwen3 or llama")
	preset := fs.String("preset", "tiny", "size and tokenizer: tiny, qwen2.5-0.5b or llama3.2-1b")
	seed := fs.Uint64("seed", 0, "random seed (the same seed gives the same weights everywhere)")
	out := fs.String("out", "", "output directory (required)")
	dtype := fs.String("dtype", "", "saved dtype (default: the preset's, float32 for tiny, bfloat16 otherwise)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("init: --out is required")
	}
	vocab, tokDir, err := initTokenizer(*preset, *out)
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
	return torch.Run(func() error {
		m, err := model.New(cfg, gen, model.Options{DType: cfg.TorchDtype}, *seed)
		if err != nil {
			return err
		}
		defer m.Close()
		m.TokenizerDir = tokDir
		if err := m.Export(*out, model.ExportOptions{}); err != nil {
			return err
		}
		fmt.Printf("mtgrpo init: %s %s, %d parameters, seed %d -> %s\n", *arch, *preset, m.NumParameters(), *seed, *out)
		return nil
	})
}

// initTokenizer puts the preset's tokenizer files in out: the tiny tokenizer is written there (its
// vocabulary sizes the model); real presets copy theirs from third_party (see scripts/setup.sh).
func initTokenizer(preset, out string) (*model.Vocab, string, error) {
	if preset != "tiny" {
		dir := model.PresetTokenizerDir(preset)
		if dir == "" {
			return nil, "", fmt.Errorf("unknown preset %q (%v)", preset, model.PresetNames())
		}
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
			return nil, "", fmt.Errorf("tokenizer files for %s not found in %s (run from the repository root after scripts/setup.sh): %w", preset, dir, err)
		}
		return nil, dir, nil
	}
	if err := tokenizer.WriteTiny(out); err != nil {
		return nil, "", err
	}
	tk, err := tokenizer.Load(out)
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
	return v, out, nil
}
