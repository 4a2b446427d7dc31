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

// compareReference scores the reference ids and compares with transformers. Both sides round
// differently in bf16, so equality is not expected; the tolerance is transformers' own bf16 error:
// when the reference holds the log-probs of a float32 copy of the model, our mean |Δ log-prob|
// against them may be at most twice transformers' bf16 one (+0.001), and our greedy tokens may
// agree with float32's at most 2 points less often than transformers' bf16 ones do. An older
// reference without them falls back to fixed bounds (0.05 mean |Δ|, 95 % greedy agreement).
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
	f32 := func(name string) []float32 {
		b, _ := get(name)
		v, _ := safetensors.DecodeF32(b)
		return v
	}
	i64 := func(name string) []int64 {
		b, _ := get(name)
		return torch.FromBytes(b, torch.Int64, int64(B), int64(T-1)).Int64s()
	}
	batch, _ := NewBatch(seqs, false)
	out, err := m.LogProbs(batch, ForwardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotRows, _ := batch.Values(out.LogProbs)
	got := make([]float32, 0, B*(T-1)) // [B, T-1] like the reference: log p(ids[:, 1:])
	for _, r := range gotRows {
		got = append(got, r[1:]...)
	}
	logits, err := m.Logits(batch)
	if err != nil {
		t.Fatal(err)
	}
	all := logits.Argmax(-1, false).Int64s() // [B, T]
	gotArg := make([]int64, 0, B*(T-1))
	for i := 0; i < B; i++ {
		gotArg = append(gotArg, all[i*T:i*T+T-1]...)
	}
	hf, hfArg := f32("logprobs"), i64("argmax")
	if len(hf) != len(got) {
		t.Fatalf("reference logprobs hold %d values for %d positions", len(hf), len(got))
	}
	r := map[string]float64{}
	r["logprob_max_abs_diff"], r["logprob_mean_abs_diff"] = absDiffs(got, hf)
	r["greedy_agreement"] = agreement(gotArg, hfArg)
	if _, err := ref.Info("logprobs_fp32"); err != nil {
		if r["logprob_mean_abs_diff"] > 0.05 || r["greedy_agreement"] < 0.95 {
			t.Errorf("bf16 forward disagrees with transformers: %v", r)
		}
		return r
	}
	ref32, arg32 := f32("logprobs_fp32"), i64("argmax_fp32")
	_, r["ours_vs_fp32_mean_abs_diff"] = absDiffs(got, ref32)
	_, r["hf_bf16_vs_fp32_mean_abs_diff"] = absDiffs(hf, ref32)
	r["ours_vs_fp32_greedy_agreement"] = agreement(gotArg, arg32)
	r["hf_bf16_vs_fp32_greedy_agreement"] = agreement(hfArg, arg32)
	if r["ours_vs_fp32_mean_abs_diff"] > 2*r["hf_bf16_vs_fp32_mean_abs_diff"]+1e-3 ||
		r["ours_vs_fp32_greedy_agreement"] < r["hf_bf16_vs_fp32_greedy_agreement"]-0.02 {
		t.Errorf("bf16 forward is further from float32 than transformers' bf16: %v", r)
	}
	return r
}

// absDiffs is the largest and the mean |a − b|.
func absDiffs(a, b []float32) (maxd, mean float64) {
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		maxd, mean = math.Max(maxd, d), mean+d
	}
	return maxd, mean / float64(len(a))
}

// agreement is the share of positions where a and b hold the same token.
func agreement(a, b []int64) float64 {
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return float64(n) / float64(len(a))
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
