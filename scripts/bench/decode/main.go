// Command decode is the engine's side of the decode-throughput benchmark of scripts/gpu/run.sh:
// it loads a model, and for each batch size generates -new tokens after a -prompt-token prompt for
// every sequence (greedy, ignoring end-of-sequence, every sequence in the KV cache from the start),
// and writes one JSON object with the wall time and tokens/s of each batch size. The prompts are
// the ones scripts/bench/decode.py builds for plain PyTorch and transformers (decodePrompt), so
// the three sides do the same work.
//
//	decode -model DIR -device cuda -dtype bfloat16 -batches 1,16,64 -prompt 128 -new 128 -out go.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

type options struct {
	modelDir, device, dtype, out string
	batches                      []int
	prompt, newTokens, warmup    int
}

// result is one batch size's measurement.
type result struct {
	Batch      int     `json:"batch"`
	Prompt     int     `json:"prompt"`
	New        int     `json:"new"`
	Seconds    float64 `json:"seconds"`
	TokensPerS float64 `json:"tokens_per_s"`
	Steps      int     `json:"steps"`
	// ForwardS and SampleS split the time: the model's forward passes (Backend.Extend), and
	// sampling with the device-to-host copy of the chosen tokens.
	ForwardS      float64 `json:"forward_s"`
	SampleS       float64 `json:"sample_s"`
	PeakCUDABytes int64   `json:"peak_cuda_bytes,omitempty"`
}

func main() {
	var o options
	var batches string
	flag.StringVar(&o.modelDir, "model", "", "model directory (Hugging Face layout, with tokenizer files)")
	flag.StringVar(&o.device, "device", "cuda", "cpu, cuda or cuda:N")
	flag.StringVar(&o.dtype, "dtype", "bfloat16", "compute dtype")
	flag.StringVar(&batches, "batches", "1,16,64", "comma-separated batch sizes")
	flag.IntVar(&o.prompt, "prompt", 128, "prompt tokens per sequence")
	flag.IntVar(&o.newTokens, "new", 128, "generated tokens per sequence")
	flag.IntVar(&o.warmup, "warmup", 8, "generated tokens of the untimed warm-up run at each batch size")
	flag.StringVar(&o.out, "out", "", "JSON output file (default: stdout)")
	flag.Parse()
	for _, f := range strings.Split(batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "decode: -batches: %q is not a batch size\n", f)
			os.Exit(2)
		}
		o.batches = append(o.batches, n)
	}
	if o.modelDir == "" || o.prompt < 1 || o.newTokens < 1 {
		fmt.Fprintln(os.Stderr, "decode: -model is required; -prompt and -new must be >= 1")
		os.Exit(2)
	}
	var res map[string]any
	err := torch.Run(func() error {
		var err error
		res, err = bench(o)
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		os.Exit(1)
	}
	data, _ := json.MarshalIndent(res, "", "  ")
	if o.out == "" {
		fmt.Println(string(data))
		return
	}
	if err := os.WriteFile(o.out, append(data, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		os.Exit(1)
	}
}

// decodePrompt is sequence i's prompt: token ids spread over [0, min(vocab, 10000)), the same
// formula as decode.py's.
func decodePrompt(i, n, vocab int) []int32 {
	span := min(vocab, 10000)
	p := make([]int32, n)
	for j := range p {
		p[j] = int32((1 + 31*i + 17*j*j) % span)
	}
	return p
}

func bench(o options) (map[string]any, error) {
	tok, err := tokenizer.Load(o.modelDir)
	if err != nil {
		return nil, err
	}
	m, err := model.Load(o.modelDir, model.Options{Device: o.device, DType: o.dtype})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	var out []result
	for _, b := range o.batches {
		r, err := run(m, tok, o, b)
		if err != nil {
			return nil, fmt.Errorf("batch %d: %w", b, err)
		}
		out = append(out, r)
	}
	return map[string]any{"side": "mtgrpo", "device": m.Device.String(), "dtype": o.dtype, "results": out}, nil
}

// run times one batch size: a short untimed warm-up, then every sequence's -new tokens.
func run(m *model.Model, tok *tokenizer.Tokenizer, o options, batch int) (result, error) {
	be, err := rollout.NewModelBackend(m, batch, o.prompt+o.newTokens+1, tok.EOSIDs()...)
	if err != nil {
		return result{}, err
	}
	defer be.Close()
	e, err := rollout.NewEngine(be, tok, rollout.EngineConfig{Seed: 1})
	if err != nil {
		return result{}, err
	}
	requests := func(n int) []*rollout.Request {
		reqs := make([]*rollout.Request, batch)
		for i := range reqs {
			reqs[i] = &rollout.Request{Prompt: decodePrompt(i, o.prompt, m.Config.VocabSize),
				Sampling: rollout.Sampling{Greedy: true, MaxNewTokens: n, IgnoreEOS: true}}
		}
		return reqs
	}
	if _, err := e.Generate(requests(o.warmup)); err != nil {
		return result{}, err
	}
	before := e.Stats()
	if m.Device.IsCUDA() {
		torch.CUDAResetPeak(m.Device)
	}
	torch.Synchronize(m.Device)
	t0 := time.Now()
	gen, err := e.Generate(requests(o.newTokens))
	if err != nil {
		return result{}, err
	}
	torch.Synchronize(m.Device)
	wall := time.Since(t0).Seconds()
	tokens := 0
	for _, g := range gen {
		tokens += len(g[0].Tokens)
	}
	if tokens != batch*o.newTokens {
		return result{}, fmt.Errorf("generated %d tokens, want %d x %d", tokens, batch, o.newTokens)
	}
	st := e.Stats()
	r := result{Batch: batch, Prompt: o.prompt, New: o.newTokens, Seconds: wall,
		TokensPerS: float64(tokens) / wall, Steps: st.Steps - before.Steps,
		ForwardS: (st.Forward - before.Forward).Seconds(), SampleS: (st.Sample - before.Sample).Seconds()}
	if m.Device.IsCUDA() {
		r.PeakCUDABytes = torch.CUDAMemoryStats(m.Device).Peak
	}
	return r, nil
}
