// Command decode is the engine's side of the decode-throughput benchmark of scripts/gpu/run.sh
// (and of the CPU comparison in docs/bench/rollout.md): it loads a model, and for each batch size
// and each way of running the decode step generates -new tokens after a -prompt-token prompt for
// every sequence (greedy, ignoring end-of-sequence, every sequence in the KV cache from the start),
// and writes one JSON object with the wall time and tokens/s of each. The prompts are the ones
// scripts/bench/decode.py builds for plain PyTorch and transformers (decodePrompt), so every side
// does the same work.
//
// The ways (-modes, each a side of the output):
//
//	graphs  the static decode step replayed from CUDA graphs (side "mtgrpo"; on the CPU, where
//	        there are none, the static step eagerly: what the engine runs by default)
//	eager   the static decode step without graphs, one call a step (side "mtgrpo_eager")
//	ops     no static step: every step through the model's Extend and the sampler, op by op, as
//	        before the static step existed (side "mtgrpo_ops")
//
// The sides' greedy tokens are compared with the first side's (tokens_equal).
//
//	decode -model DIR -device cuda -dtype bfloat16 -batches 1,16,64 -prompt 128 -new 128 -out go.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

type options struct {
	modelDir, device, dtype, out string
	batches                      []int
	modes                        []string
	prompt, newTokens, warmup    int
	threads                      int
}

// sides names each mode's side in the output.
var sides = map[string]string{"graphs": "mtgrpo", "eager": "mtgrpo_eager", "ops": "mtgrpo_ops"}

// result is one batch size's measurement.
type result struct {
	Batch   int     `json:"batch"`
	Prompt  int     `json:"prompt"`
	New     int     `json:"new"`
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the process's user + system time over the same stretch: with one libtorch and
	// one BLAS thread, the steadier measure on a shared machine.
	CPUSeconds float64 `json:"cpu_s"`
	TokensPerS float64 `json:"tokens_per_s"`
	Steps      int     `json:"steps"`
	// StaticSteps of Steps ran as one static step.
	StaticSteps int `json:"static_steps"`
	// ForwardS and SampleS split the time: the model's forward passes (static steps whole, their
	// sampling included), and the sampling with the device-to-host copy of the other steps.
	ForwardS      float64 `json:"forward_s"`
	SampleS       float64 `json:"sample_s"`
	PeakCUDABytes int64   `json:"peak_cuda_bytes,omitempty"`
	// The CUDA graphs (side mtgrpo on CUDA): captured in the warm-up and the timed run, the time
	// their capture took, what their memory pool added.
	Captures       int     `json:"captures,omitempty"`
	CaptureS       float64 `json:"capture_s,omitempty"`
	GraphPoolBytes int64   `json:"graph_pool_bytes,omitempty"`
	// TokensEqual: every sequence's tokens equal the first side's at this batch size.
	TokensEqual *bool `json:"tokens_equal,omitempty"`

	tokens [][]int32
}

func main() {
	o, err := parse()
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		os.Exit(2)
	}
	var res map[string]any
	err = torch.Run(func() error {
		if o.threads > 0 {
			torch.SetNumThreads(o.threads)
		}
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

func parse() (options, error) {
	var o options
	var batches, modes string
	flag.StringVar(&o.modelDir, "model", "", "model directory (Hugging Face layout; tokenizer files optional)")
	flag.StringVar(&o.device, "device", "cuda", "cpu, cuda or cuda:N")
	flag.StringVar(&o.dtype, "dtype", "bfloat16", "compute dtype")
	flag.StringVar(&batches, "batches", "1,16,64", "comma-separated batch sizes")
	flag.StringVar(&modes, "modes", "graphs", "comma-separated ways to run the decode step: graphs, eager, ops")
	flag.IntVar(&o.prompt, "prompt", 128, "prompt tokens per sequence")
	flag.IntVar(&o.newTokens, "new", 128, "generated tokens per sequence")
	flag.IntVar(&o.warmup, "warmup", 8, "generated tokens of the untimed warm-up run at each batch size")
	flag.StringVar(&o.out, "out", "", "JSON output file (default: stdout)")
	flag.IntVar(&o.threads, "threads", 0, "libtorch intra-op threads (0: libtorch's default; OPENBLAS_NUM_THREADS is read from the environment)")
	flag.Parse()
	for _, f := range strings.Split(batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-batches: %q is not a batch size", f)
		}
		o.batches = append(o.batches, n)
	}
	for _, m := range strings.Split(modes, ",") {
		if _, ok := sides[m]; !ok {
			return o, fmt.Errorf("-modes: %q is not graphs, eager or ops", m)
		}
		o.modes = append(o.modes, m)
	}
	if o.modelDir == "" || o.prompt < 1 || o.newTokens < 1 {
		return o, fmt.Errorf("-model is required; -prompt and -new must be >= 1")
	}
	return o, nil
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
	// The tokenizer only adds stop ids (greedy decoding ignores them): a model directory without
	// tokenizer files (scripts/bench/trainstep -init writes none) decodes without one.
	var eos []int
	if _, err := os.Stat(filepath.Join(o.modelDir, "tokenizer.json")); err == nil {
		tok, err := tokenizer.Load(o.modelDir)
		if err != nil {
			return nil, err
		}
		eos = tok.EOSIDs()
	}
	m, err := model.Load(o.modelDir, model.Options{Device: o.device, DType: o.dtype})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	out := make([][]result, len(o.modes))
	for _, b := range o.batches {
		for i, mode := range o.modes {
			r, err := run(m, eos, o, b, mode)
			if err != nil {
				return nil, fmt.Errorf("batch %d, %s: %w", b, mode, err)
			}
			if i > 0 {
				eq := tokensEqual(r.tokens, out[0][len(out[0])-1].tokens)
				r.TokensEqual = &eq
			}
			out[i] = append(out[i], r)
		}
	}
	var ss []map[string]any
	for i, mode := range o.modes {
		ss = append(ss, map[string]any{"side": sides[mode], "mode": mode, "results": out[i]})
	}
	return map[string]any{"device": m.Device.String(), "dtype": o.dtype, "sides": ss}, nil
}

func tokensEqual(a, b [][]int32) bool {
	return slices.EqualFunc(a, b, func(x, y []int32) bool { return slices.Equal(x, y) })
}

// run times one batch size in one mode: an untimed warm-up, then every sequence's -new tokens. With
// graphs the warm-up generates -new tokens too, so that every graph the timed run replays (one per
// bucket of key positions it reaches) is captured before it.
func run(m *model.Model, eos []int, o options, batch int, mode string) (result, error) {
	be, err := rollout.NewModelBackend(m, batch, o.prompt+o.newTokens+1, eos...)
	if err != nil {
		return result{}, err
	}
	defer be.Close()
	be.SetStaticStep(mode != "ops")
	be.SetCUDAGraphs(mode == "graphs")
	e, err := rollout.NewEngine(be, nil, rollout.EngineConfig{Seed: 1})
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
	warm := o.warmup
	if mode == "graphs" {
		warm = o.newTokens
	}
	if _, err := e.Generate(requests(warm)); err != nil {
		return result{}, err
	}
	before := e.Stats()
	if m.Device.IsCUDA() {
		torch.CUDAResetPeak(m.Device)
	}
	torch.Synchronize(m.Device)
	t0, c0 := time.Now(), cpuSeconds()
	gen, err := e.Generate(requests(o.newTokens))
	if err != nil {
		return result{}, err
	}
	torch.Synchronize(m.Device)
	wall := time.Since(t0).Seconds()
	r := result{Batch: batch, Prompt: o.prompt, New: o.newTokens, Seconds: wall, CPUSeconds: cpuSeconds() - c0}
	for _, g := range gen {
		r.tokens = append(r.tokens, g[0].Tokens)
	}
	if n := len(r.tokens) * o.newTokens; tokenCount(r.tokens) != n {
		return result{}, fmt.Errorf("generated %d tokens, want %d x %d", tokenCount(r.tokens), batch, o.newTokens)
	}
	st := e.Stats()
	r.TokensPerS, r.Steps = float64(batch*o.newTokens)/wall, st.Steps-before.Steps
	r.StaticSteps = st.StaticSteps - before.StaticSteps
	r.ForwardS, r.SampleS = (st.Forward - before.Forward).Seconds(), (st.Sample - before.Sample).Seconds()
	r.Captures, r.CaptureS, r.GraphPoolBytes = st.GraphCaptures, st.GraphCaptureTime.Seconds(), st.GraphPoolBytes
	if m.Device.IsCUDA() {
		r.PeakCUDABytes = torch.CUDAMemoryStats(m.Device).Peak
	}
	return r, nil
}

// cpuSeconds is the process's user + system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func tokenCount(ts [][]int32) int {
	n := 0
	for _, t := range ts {
		n += len(t)
	}
	return n
}
