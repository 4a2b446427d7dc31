package rollout

import (
	"math"
	"sync"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

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
	m, err := model.New(cfg, gen, model.Options{}, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fullForwardGreedy generates n tokens by running the whole sequence through the model at every
// step (no KV cache) and taking the argmax of the last position: the reference for the engine.
func fullForwardGreedy(t *testing.T, m *model.Model, prompt []int32, n int) []int32 {
	t.Helper()
	seq := append([]int32(nil), prompt...)
	V := int64(m.Config.VocabSize)
	for range n {
		b, err := model.NewBatch([][]int32{seq}, false)
		if err != nil {
			t.Fatal(err)
		}
		s := torch.NewScope()
		logits, err := m.Logits(b)
		if err != nil {
			t.Fatal(err)
		}
		last := logits.View(-1, V).Narrow(0, int64(len(seq)-1), 1)
		seq = append(seq, int32(last.Argmax(1, false).Int()))
		s.Close()
	}
	return seq[len(prompt):]
}
