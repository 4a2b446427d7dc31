package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// generate is `mtgrpo generate`: sample continuations of prompts with the rollout engine.
func generate(args []string) error {
	fs := pflag.NewFlagSet("generate", pflag.ContinueOnError)
	dir := fs.String("model", "", "model directory (config.json, safetensors, tokenizer files; required)")
	prompts := fs.StringArray("prompt", nil, "a prompt (repeatable); rendered as a user message unless --raw")
	raw := fs.Bool("raw", false, "encode prompts as they are, without the chat template")
	n := fs.Int("n", 1, "samples per prompt")
	var s rollout.Sampling
	fs.IntVar(&s.MaxNewTokens, "max-new-tokens", 128, "tokens to generate at most")
	fs.Float64Var(&s.Temperature, "temperature", 1, "sampling temperature (0: greedy)")
	fs.BoolVar(&s.Greedy, "greedy", false, "take the most likely token")
	fs.IntVar(&s.TopK, "top-k", 0, "keep the k most likely tokens (0: all)")
	fs.Float64Var(&s.TopP, "top-p", 1, "nucleus sampling mass")
	fs.Float64Var(&s.MinP, "min-p", 0, "keep tokens with at least min-p times the top probability")
	fs.StringArrayVar(&s.StopStrings, "stop", nil, "stop string (repeatable)")
	seed := fs.Uint64("seed", 0, "sampling seed")
	device := fs.String("device", "cpu", "cpu, cuda or cuda:N")
	dtype := fs.String("dtype", "", "compute dtype (default: float32 on cpu, the checkpoint's otherwise)")
	maxLen := fs.Int("max-len", 4096, "KV cache length per sequence")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.Temperature == 0 { // as in transformers and vLLM: temperature 0 means greedy
		s.Greedy = true
	}
	if *dtype == "" && *device != "cpu" {
		*dtype = "auto"
	}
	if *dir == "" || len(*prompts) == 0 {
		return fmt.Errorf("generate: --model and at least one --prompt are required")
	}
	tok, err := tokenizer.Load(*dir)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	var reqs []*rollout.Request
	for i, p := range *prompts {
		ids, err := promptIDs(tok, p, *raw)
		if err != nil {
			return fmt.Errorf("generate: prompt %d: %w", i, err)
		}
		reqs = append(reqs, &rollout.Request{Prompt: ids, N: *n, Sampling: s})
	}
	return torch.Run(func() error {
		m, err := model.Load(*dir, model.Options{Device: *device, DType: *dtype})
		if err != nil {
			return err
		}
		defer m.Close()
		b, err := rollout.NewModelBackend(m, len(reqs)**n, *maxLen, tok.EOSIDs()...)
		if err != nil {
			return err
		}
		defer b.Close()
		e, err := rollout.NewEngine(b, tok, rollout.Config{Seed: *seed})
		if err != nil {
			return err
		}
		t0 := time.Now()
		out, err := e.Generate(reqs)
		if err != nil {
			return err
		}
		tokens := 0
		for i, rs := range out {
			for _, r := range rs {
				tokens += len(r.Tokens)
				fmt.Printf("=== prompt %d sample %d (%d tokens, %s)\n%s\n", i, r.Sample, len(r.Tokens), r.Finish, r.Text)
			}
		}
		wall := time.Since(t0)
		fmt.Printf("=== %d tokens in %v (%.1f tokens/s)\n", tokens, wall.Round(time.Millisecond), float64(tokens)/wall.Seconds())
		return nil
	})
}

// promptIDs renders a prompt as one user message with the generation prompt, or encodes it raw.
func promptIDs(tok *tokenizer.Tokenizer, p string, raw bool) ([]int32, error) {
	var ids []int
	if raw {
		ids = tok.Encode(p, false)
	} else {
		var err error
		if ids, err = tok.EncodeChat([]tokenizer.Message{{Role: "user", Content: p}}, tokenizer.ChatOptions{AddGenerationPrompt: true}); err != nil {
			return nil, err
		}
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}
