package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// TestCUDACompareTransformers is the Go side of scripts/fixtures/cuda_model_bench.sh: it loads the
// bf16 Qwen2.5-0.5B-shaped model that cuda_model_bench.py saved with transformers, checks our
// log-probs and greedy tokens against transformers' on the same ids, and measures forward and
// forward + backward tokens/s and peak CUDA memory with and without gradient checkpointing, writing
// them to $MTGRPO_CUDA_BENCH_DIR/go.json. It runs only when that variable is set.
func TestCUDACompareTransformers(t *testing.T) {
	dir := os.Getenv("MTGRPO_CUDA_BENCH_DIR")
	if dir == "" {
		t.Skip("MTGRPO_CUDA_BENCH_DIR is not set (see scripts/fixtures/cuda_model_bench.sh)")
	}
	var py struct{ Batch, Seq int }
	b, err := os.ReadFile(filepath.Join(dir, "python.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &py); err != nil {
		t.Fatal(err)
	}
	ref, err := safetensors.Open(filepath.Join(dir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	res := map[string]any{}
	onTorch(t, func() error {
		m, err := Load(filepath.Join(dir, "qwen2.5-0.5b"), Options{Device: testDevice, DType: "bfloat16"})
		if err != nil {
			return err
		}
		defer m.Close()
		res["accuracy"] = compareReference(t, m, ref)
		ids := randomSeqs(1, 151643, repeat(py.Seq, py.Batch)...)
		batch, err := NewBatch(ids, false)
		if err != nil {
			return err
		}
		res["forward"] = measureCUDA(t, m, func() { _, _ = m.LogProbs(batch, ForwardOptions{}) }, batch.Tokens())
		m.SetTrainable(true)
		for _, ck := range []bool{false, true} {
			name := map[bool]string{false: "train_plain", true: "train_checkpoint"}[ck]
			res[name] = measureCUDA(t, m, func() { trainStep(t, m, batch, ck) }, batch.Tokens())
		}
		return nil
	})
	out, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", out)
	if err := os.WriteFile(filepath.Join(dir, "go.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func repeat(n, times int) []int {
	r := make([]int, times)
	for i := range r {
		r[i] = n
	}
	return r
}

// compareReference scores the reference ids and reports the log-prob differences and the share of
// positions where the greedy token agrees (bf16: both sides round differently, so exact equality
// is not expected; the summary shows the numbers).
func compareReference(t *testing.T, m *Model, ref *safetensors.File) map[string]float64 {
	get := func(name string) ([]byte, []int64) {
		info, err := ref.Info(name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ref.Data(name)
		return b, info.Shape
	}
	idb, shape := get("ids")
	ids64 := torch.FromBytes(idb, torch.Int64, shape...).Int64s()
	B, T := int(shape[0]), int(shape[1])
	seqs := make([][]int32, B)
	for i := range seqs {
		for _, v := range ids64[i*T : (i+1)*T] {
			seqs[i] = append(seqs[i], int32(v))
		}
	}
	lpb, _ := get("logprobs")
	want, _ := safetensors.DecodeF32(lpb)
	amb, _ := get("argmax")
	wantArg := torch.FromBytes(amb, torch.Int64, int64(B), int64(T-1)).Int64s()
	batch, _ := NewBatch(seqs, false)
	out, err := m.LogProbs(batch, ForwardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := batch.Values(out.LogProbs)
	logits, err := m.Logits(batch)
	if err != nil {
		t.Fatal(err)
	}
	gotArg := logits.Argmax(-1, false).Int64s()
	var maxd, sumd float64
	agree := 0
	for i := 0; i < B; i++ {
		for p := 1; p < T; p++ {
			d := math.Abs(float64(got[i][p]) - float64(want[i*(T-1)+p-1]))
			maxd, sumd = math.Max(maxd, d), sumd+d
			if gotArg[i*T+p-1] == wantArg[i*(T-1)+p-1] {
				agree++
			}
		}
	}
	n := float64(B * (T - 1))
	r := map[string]float64{"logprob_max_abs_diff": maxd, "logprob_mean_abs_diff": sumd / n, "greedy_agreement": float64(agree) / n}
	if r["logprob_mean_abs_diff"] > 0.05 || r["greedy_agreement"] < 0.95 {
		t.Errorf("bf16 forward disagrees with transformers: %v", r)
	}
	return r
}

// measureCUDA times 5 runs of fn after a warm-up and reports tokens/s and the peak CUDA memory above
// what was allocated before.
func measureCUDA(t *testing.T, m *Model, fn func(), tokens int) map[string]float64 {
	run := func() {
		s := torch.NewScope()
		defer s.Close()
		fn()
	}
	run()
	torch.Synchronize(m.Device)
	torch.CUDAResetPeak(m.Device)
	base := torch.CUDAMemoryStats(m.Device).Allocated
	start := time.Now()
	const steps = 5
	for range steps {
		run()
	}
	torch.Synchronize(m.Device)
	dt := time.Since(start).Seconds()
	return map[string]float64{"tokens_per_s": float64(tokens*steps) / dt,
		"peak_mb": float64(torch.CUDAMemoryStats(m.Device).Peak-base) / (1 << 20)}
}
