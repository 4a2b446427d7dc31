package rollout

import (
	"math"
	"os"
	"sync"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// testDType is what the tiny models of these tests compute in: float32 by default;
// MTGRPO_TEST_DTYPE=bfloat16 runs the engine and driver tests on bfloat16 models on the CPU, so that
// dtype bugs (sampling, log-probs, the KV cache in a 16-bit dtype) show up without a GPU.
var testDType = func() string {
	if d := os.Getenv("MTGRPO_TEST_DTYPE"); d != "" {
		return d
	}
	return "float32"
}()

// onTorch runs fn on the torch thread; fn reports with t.Error (never t.Fatal) or returns an
// error, which fails the test.
func onTorch(t *testing.T, fn func() error) {
	t.Helper()
	if err := torch.Run(fn); err != nil {
		t.Fatal(err)
	}
}

var tinyTok = sync.OnceValues(func() (*tokenizer.Tokenizer, error) {
	dir, err := mkdirTemp()
	if err != nil {
		return nil, err
	}
	if err := tokenizer.WriteTiny(dir); err != nil {
		return nil, err
	}
	return tokenizer.Load(dir)
})

// tiny returns the tiny byte-level tokenizer: ids 0..255 are the bytes themselves.
func tiny(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tinyTok()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// oneHot is logits with big at id and 0 elsewhere.
func oneHot(v, id int, big float32) []float32 {
	row := make([]float32, v)
	row[id] = big
	return row
}

// nextPlusOne is a mock whose greedy continuation of a history is its last token + 1 (mod v).
func nextPlusOne(v int) func([]int32) []float32 {
	return func(h []int32) []float32 { return oneHot(v, (int(h[len(h)-1])+1)%v, 10) }
}

// bytesOf is the tiny tokenizer's ids of s, one per byte.
func bytesOf(s string) []int32 {
	ids := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		ids[i] = int32(s[i])
	}
	return ids
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// tinyModel is the tiny preset (qwen3, d = 64, 4 layers, the tiny tokenizer's vocabulary) with a
// larger init range than HF's 0.02, so that greedy choices are not near-ties. Torch thread only.
func tinyModel(t testing.TB, seed uint64) *model.Model { return tinyArch(t, "qwen3", seed) }

// tinyArch is tinyModel of another architecture (llama, qwen2, qwen3).
func tinyArch(t testing.TB, arch string, seed uint64) *model.Model {
	t.Helper()
	tok := tiny(t)
	cfg, gen, err := model.PresetConfig(arch, "tiny", &model.Vocab{Size: tok.VocabSize(), EOS: tok.EOSIDs()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.InitializerRange = 0.2
	m, err := model.New(cfg, gen, model.Options{DType: testDType}, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// lowPrecision reports whether the tests run in a 16-bit dtype.
func lowPrecision() bool { return testDType != "float32" }

// tol is the tolerance of a comparison: f32 in float32 runs, b16 in bfloat16 (or float16) runs.
func tol(f32, b16 float64) float64 {
	if lowPrecision() {
		return b16
	}
	return f32
}

// greedyTieTol is how far below the full forward's best logit a token the engine chose greedily
// may score, as a fraction of the largest |logit| of that step. float32: 1e-6 (both compute the
// same function; only summation order differs). bfloat16: 5%: the engine's logits (KV cache,
// batched rows) and the full forward's are two bf16 computations that differ by up to 2.3% of the
// largest |logit| (the model package's tests), so near-ties within twice that may flip; gaps up to
// 1.3% were seen.
var greedyTieTol = tol(1e-6, 0.05)

// checkGreedyPath checks that tokens is a greedy continuation of prompt under the model's full
// forward pass (no KV cache): teacher-forced on tokens, each one is the argmax of the full forward's
// logits at its position, up to greedyTieTol. It reports the first step that is not.
func checkGreedyPath(t *testing.T, m *model.Model, prompt, tokens []int32, what string) {
	t.Helper()
	V := int64(m.Config.VocabSize)
	seq := append([]int32(nil), prompt...)
	for k, tok := range tokens {
		b, err := model.NewBatch([][]int32{seq}, false)
		if err != nil {
			t.Fatal(err)
		}
		s := torch.NewScope()
		logits, err := m.Logits(b)
		if err != nil {
			t.Fatal(err)
		}
		last := logits.View(-1, V).Narrow(0, int64(len(seq)-1), 1).Float32s()
		s.Close()
		best, scale := 0, 0.0
		for i, v := range last {
			if v > last[best] {
				best = i
			}
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		if gap := float64(last[best] - last[tok]); gap > greedyTieTol*scale {
			t.Errorf("%s, token %d: chose %d (full-forward logit %g), the full forward's best is %d (%g)",
				what, k, tok, last[tok], best, last[best])
			return
		}
		seq = append(seq, tok)
	}
}
