package rollout

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// benchWorkload is what scripts/bench_rollout.py writes: nano-vllm's throughput protocol (random
// prompt ids, input and output lengths uniform in 100..1024, ignore_eos).
type benchWorkload struct {
	Prompts     [][]int32 `json:"prompts"`
	MaxNew      []int     `json:"max_new"`
	Temperature float64   `json:"temperature"`
}

// TestCUDANanoVLLMThroughput is the engine's side of scripts/bench_rollout.sh: it loads the bf16
// model of $MTGRPO_ROLLOUT_BENCH_DIR/model (written by `mtgrpo init`, real Qwen tokenizer), runs
// the workload in workload.json through the engine with all sequences in the cache at once, and
// writes the throughput to go.json. It runs only when that variable is set.
func TestCUDANanoVLLMThroughput(t *testing.T) {
	dir := os.Getenv("MTGRPO_ROLLOUT_BENCH_DIR")
	if dir == "" {
		t.Skip("MTGRPO_ROLLOUT_BENCH_DIR is not set (see scripts/bench_rollout.sh)")
	}
	var w benchWorkload
	raw, err := os.ReadFile(filepath.Join(dir, "workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	device := os.Getenv("MTGRPO_TEST_DEVICE")
	if device == "" {
		device = "cuda"
	}
	res := map[string]any{}
	onTorch(t, func() error {
		m, err := model.Load(filepath.Join(dir, "model"), model.Options{Device: device, DType: "bfloat16"})
		if err != nil {
			return err
		}
		defer m.Close()
		maxLen := 0
		for i, p := range w.Prompts {
			maxLen = max(maxLen, len(p)+w.MaxNew[i])
		}
		b, err := NewModelBackend(m, len(w.Prompts), maxLen+1, tok.EOSIDs()...)
		if err != nil {
			return err
		}
		defer b.Close()
		e, _ := NewEngine(b, tok, EngineConfig{Seed: 1})
		requests := func(n, capNew int) []*Request {
			reqs := make([]*Request, n)
			for i := range reqs {
				reqs[i] = &Request{Prompt: w.Prompts[i], Sampling: Sampling{Temperature: w.Temperature,
					MaxNewTokens: min(w.MaxNew[i], capNew), IgnoreEOS: true}}
			}
			return reqs
		}
		if _, err := e.Generate(requests(min(8, len(w.Prompts)), 16)); err != nil { // warm-up
			return err
		}
		before := e.Stats()
		torch.Synchronize(m.Device)
		t0 := time.Now()
		out, err := e.Generate(requests(len(w.Prompts), 1<<30))
		if err != nil {
			return err
		}
		torch.Synchronize(m.Device)
		wall := time.Since(t0)
		tokens := 0
		for _, r := range out {
			tokens += len(r[0].Tokens)
		}
		st := e.Stats()
		res["sequences"], res["output_tokens"], res["seconds"] = len(w.Prompts), tokens, wall.Seconds()
		res["tokens_per_s"] = float64(tokens) / wall.Seconds()
		res["steps"], res["split_steps"] = st.Steps-before.Steps, st.SplitSteps-before.SplitSteps
		res["forward_s"], res["sample_s"] = (st.Forward - before.Forward).Seconds(), (st.Sample - before.Sample).Seconds()
		res["prefill_tokens"] = st.PrefillTokens - before.PrefillTokens
		if m.Device.IsCUDA() {
			res["peak_allocated_bytes"] = torch.CUDAMemoryStats(m.Device).Peak
		}
		return nil
	})
	data, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", data)
	if err := os.WriteFile(filepath.Join(dir, "go.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
