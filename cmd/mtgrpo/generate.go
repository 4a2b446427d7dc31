package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	"github.com/mtgrpo/mtgrpo/cmd/internal/setup"
	"github.com/mtgrpo/mtgrpo/cmd/internal/threads"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/grpo/shard"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

var generateCommand = command{
	name:    "generate",
	summary: "Sample continuations of prompts with the rollout engine.",
	examples: []string{
		`mtgrpo generate --model models/tiny --prompt "What is 6 times 7?"`,
		`mtgrpo generate --model Qwen/Qwen2.5-0.5B-Instruct --prompt hi --n 4 --temperature 0.7 --top-p 0.9 --device cuda`,
		`mtgrpo generate --adapter runs/lora/adapter --prompt "What is 6 times 7?"   # the adapter's base model`,
	},
}

// generate is `mtgrpo generate`.
func generate(args []string) error {
	fs := generateCommand.flags()
	dir := fs.String("model", "", "model directory (config.json, safetensors, tokenizer files) or Hugging Face Hub id ORG/NAME[@REVISION] (required without --adapter)")
	adapter := fs.String("adapter", "", adapterUsage)
	prompts := fs.StringArray("prompt", nil, "a prompt (repeatable); rendered as a user message unless --raw")
	raw := fs.Bool("raw", false, "encode prompts as they are, without the chat template")
	n := fs.Int("n", 1, "samples per prompt")
	var s rollout.Sampling
	fs.IntVar(&s.MaxNewTokens, "max-new-tokens", 128, "tokens to generate at most")
	fs.Float64Var(&s.Temperature, "temperature", 1, "sampling temperature (0: greedy)")
	fs.BoolVar(&s.Greedy, "greedy", false, "take the most likely token")
	fs.IntVar(&s.TopK, "top-k", 0, "keep the k most likely tokens (0: all)")
	fs.Float64Var(&s.TopP, "top-p", 1, "nucleus sampling mass, in (0, 1]")
	fs.Float64Var(&s.MinP, "min-p", 0, "keep tokens with at least min-p times the top probability, in [0, 1)")
	fs.StringArrayVar(&s.StopStrings, "stop", nil, "stop string (repeatable)")
	seed := fs.Uint64("seed", 0, "sampling seed")
	device := fs.String("device", "cpu", "cpu, cuda or cuda:N")
	dtype := fs.String("dtype", "", "compute dtype (default: float32 on cpu, the checkpoint's otherwise)")
	maxLen := fs.Int("max-len", 4096, "KV cache length per sequence")
	threadSpec := threadsFlag(fs)
	if err := generateCommand.parse(fs, args); err != nil {
		return err
	}
	var err error
	if *dir, err = withAdapter("generate", *dir, *adapter); err != nil {
		return err
	}
	if *dir == "" || len(*prompts) == 0 {
		return usagef("generate: --model and at least one --prompt are required (--adapter alone names its base model)")
	}
	if err := checkSampling(*n, *maxLen, s); err != nil {
		return err
	}
	if *dtype != "" && *dtype != "auto" {
		if _, err := model.ParseDType(*dtype); err != nil {
			return usagef("generate: --dtype: %v", err)
		}
	}
	if s.Temperature == 0 { // as in transformers and vLLM: temperature 0 means greedy
		s.Greedy = true
	}
	if err := checkDevice("generate", *device, 1); err != nil {
		return err
	}
	if *dir, err = resolveModel("generate", "--model", *dir); err != nil {
		return err
	}
	slots := len(*prompts) * *n
	// A model that does not read is left to the loader, which names what is wrong with it.
	reserves, _ := addressSpaceOf(*dir, *device, *dtype, slots, *maxLen)
	bars := progress.New(os.Stderr)
	defer bars.Wait()
	// Everything large (the tokenizer's tables, the weights, the KV cache) is taken after the
	// address-space check of withTorch, which knows of it.
	return withTorch(*threadSpec, func() error {
		p, err := setup.Open(setup.Options{Dir: *dir, Adapter: *adapter, Device: *device, DType: *dtype, Slots: slots,
			MaxLen: *maxLen, Seed: *seed, Progress: &progress.Load{Bars: bars}})
		if err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		defer p.Close()
		var reqs []*rollout.Request
		for i, pr := range *prompts {
			ids, err := promptIDs(p.Tok, pr, *raw)
			if err != nil {
				return fmt.Errorf("generate: prompt %d: %w", i, err)
			}
			reqs = append(reqs, &rollout.Request{Prompt: ids, N: *n, Sampling: s})
		}
		t0 := time.Now()
		out, err := p.Engine.Generate(reqs)
		if err != nil {
			return fmt.Errorf("generate: %w", err)
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
	}, reserves...)
}

// addressSpaceOf is what generating with the model in dir takes after the address-space check,
// from its config.json and file sizes alone: on the CPU its weights in the compute dtype and the
// KV cache of slots sequences of maxLen tokens (memplan's figures), anywhere the read of its
// largest weight (stored and converted) and the tokenizer's tables in the Go heap (some eight
// times tokenizer.json, as measured on Qwen3's and Llama 3's).
func addressSpaceOf(dir, device, dtype string, slots, maxLen int) ([]threads.Reserve, error) {
	c, err := model.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	dev, err := torch.ParseDevice(device)
	if err != nil {
		return nil, err
	}
	stored, err := c.StoredDType()
	if err != nil {
		return nil, err
	}
	compute := "float32"
	switch {
	case dtype == "auto" || dtype == "" && dev.IsCUDA():
		compute = stored
	case dtype != "":
		compute = dtype
	}
	dt, err := model.ParseDType(compute)
	if err != nil {
		return nil, err
	}
	sdt, err := model.ParseDType(stored)
	if err != nil {
		return nil, err
	}
	shape, err := shard.PlanModel(c)
	if err != nil {
		return nil, err
	}
	plan, err := memplan.Predict(memplan.Run{Model: shape, DTypeBytes: int64(dt.Size()), World: 1, Slots: slots, MaxLen: maxLen}, 0)
	if err != nil {
		return nil, err
	}
	largest := int64(c.VocabSize) * int64(c.HiddenSize) * int64(sdt.Size()+dt.Size())
	var out []threads.Reserve
	if !dev.IsCUDA() {
		out = append(out, threads.Reserve{What: "the model's weights", Bytes: plan.Weights},
			threads.Reserve{What: fmt.Sprintf("the KV cache (%d sequences of --max-len %d)", slots, maxLen), Bytes: plan.KVCache})
	}
	out = append(out, threads.Reserve{What: "reading the largest weight", Bytes: largest})
	if fi, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		out = append(out, threads.Reserve{What: "the tokenizer", Bytes: 8 * fi.Size(), Go: true})
	}
	return out, nil
}

// checkSampling validates generate's numeric flags; each error names its flag.
func checkSampling(n, maxLen int, s rollout.Sampling) error {
	if err := atLeast("generate", intFlag{"n", n, 1}, intFlag{"max-new-tokens", s.MaxNewTokens, 1},
		intFlag{"top-k", s.TopK, 0}, intFlag{"max-len", maxLen, 2}); err != nil {
		return err
	}
	if err := inRange("generate", "temperature", s.Temperature, 0, 100); err != nil {
		return err
	}
	if s.TopP <= 0 || s.TopP > 1 || s.TopP != s.TopP {
		return usagef("generate: --top-p %g: must be in (0, 1]", s.TopP)
	}
	if s.MinP < 0 || s.MinP >= 1 || s.MinP != s.MinP {
		return usagef("generate: --min-p %g: must be in [0, 1)", s.MinP)
	}
	return nil
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
