package model

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// testDevice: MTGRPO_TEST_DEVICE=cuda runs the model tests on a GPU; the default is the CPU.
var testDevice = func() string {
	if d := os.Getenv("MTGRPO_TEST_DEVICE"); d != "" {
		return d
	}
	return "cpu"
}()

// onTorch runs fn on the torch thread; fn reports failures with t.Error/t.Errorf (never t.Fatal)
// or returns an error, which fails the test.
func onTorch(t *testing.T, fn func() error) {
	t.Helper()
	if err := torch.Run(fn); err != nil {
		t.Fatal(err)
	}
}

// testConfig is a small config of arch: hidden 32, 2 layers, 4 heads over 2 KV heads, vocab 61.
// Qwen3 gets head_dim 16 ≠ hidden/heads = 8 to exercise the explicit head_dim; Llama gets llama3
// RoPE scaling with a short original context so that every branch of the scaling is used: at head_dim
// 8 and θ 5e5 the wavelengths are 6.3, 167, 4443 and 118000, and with an original context of 256 the
// first is kept (< 64), the second interpolated (64..256), the others divided by the factor.
func testConfig(t *testing.T, arch string, tied bool) *Config {
	t.Helper()
	c, _, err := PresetConfig(arch, "tiny", &Vocab{Size: 61, BOS: 0, EOS: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers, c.NumAttentionHeads, c.NumKeyValueHeads = 32, 48, 2, 4, 2
	c.TieWordEmbeddings = tied
	c.MaxPositionEmbeddings = 16 // the RoPE table starts this small: longer test sequences grow it
	c.InitializerRange = 0.2     // larger than HF's 0.02 so that logits differ clearly between tokens
	switch arch {
	case "qwen3":
		c.HeadDim = 16
	case "llama":
		c.HeadDim = 8
		c.RopeScaling.OriginalMaxPositionEmbeddings = 256
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// testModel is a random model of testConfig whose norm weights and biases are also random (HF init
// leaves them at 1 and 0, which would hide a bug in them). Call on the torch thread.
func testModel(t *testing.T, arch string, tied bool, seed uint64) *Model {
	t.Helper()
	m, err := New(testConfig(t, arch, tied), nil, Options{Device: testDevice}, seed)
	if err != nil {
		t.Fatal(err)
	}
	perturbBiases(t, m)
	return m
}

// perturbBiases adds noise to every 1-d weight (norms and biases), which HF init leaves at 1 and 0.
func perturbBiases(t *testing.T, m *Model) {
	g := torch.NewGenerator(uint64(m.NumParameters()), m.Device)
	defer g.Close()
	torch.NoGrad(func() {
		for _, p := range m.Parameters() {
			if len(p.Tensor.Shape()) == 1 {
				p.Tensor.Add_(torch.Randn(p.Tensor.Shape(), m.DType, m.Device, g).MulScalar(0.1))
			}
		}
	})
}

// randomSeqs draws sequences of the given lengths over [0, vocab).
func randomSeqs(seed uint64, vocab int, lens ...int) [][]int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]int32, len(lens))
	for i, n := range lens {
		for range n {
			out[i] = append(out[i], int32(r.IntN(vocab)))
		}
	}
	return out
}

// maxAbsDiff is max |a − b| over two float32 slices (inf when their lengths differ).
func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// seqLogits returns the full-forward logits of one sequence alone, [len, vocab] flattened.
func seqLogits(t *testing.T, m *Model, seq []int32) []float32 {
	t.Helper()
	b, err := NewBatch([][]int32{seq}, false)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Logits(b)
	if err != nil {
		t.Fatal(err)
	}
	return l.Float32s()
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
