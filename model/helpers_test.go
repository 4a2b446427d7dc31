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

// testDType is what the model tests compute in: float32 by default; MTGRPO_TEST_DTYPE=bfloat16
// runs the same tests in bfloat16 on the CPU, so that dtype bugs (a missing cast, a path that only
// works in float32) show up without a GPU. Comparisons take their tolerance from tol.
var testDType = func() string {
	if d := os.Getenv("MTGRPO_TEST_DTYPE"); d != "" {
		return d
	}
	return "float32"
}()

// lowPrecision reports whether the tests run in a 16-bit dtype.
func lowPrecision() bool { return testDType != "float32" }

// tol is the tolerance of a comparison: f32 when the tests run in float32, b16 in bfloat16 (or
// float16). Each call site states both; bf16 keeps 8 significant bits (relative rounding 2⁻⁹ ≈
// 0.002 per operation), so its tolerances are those of a few roundings through the layers.
func tol(f32, b16 float64) float64 {
	if lowPrecision() {
		return b16
	}
	return f32
}

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
	return testModelIn(t, testDType, arch, tied, seed)
}

// testModelIn is testModel in the given dtype, whatever MTGRPO_TEST_DTYPE says: for tests that
// compare dtypes with each other.
func testModelIn(t *testing.T, dtype, arch string, tied bool, seed uint64) *Model {
	t.Helper()
	m, err := New(testConfig(t, arch, tied), nil, Options{Device: testDevice, DType: dtype}, seed)
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

// logitTol is the tolerance between two computations of the same logits ref (a batch layout
// against a sequence alone, the KV cache against a full forward): 1e-5 in float32; in bfloat16 5%
// of the largest |logit|, as TestBF16MatchesF32 allows against float32. Each bf16 logit comes out
// of two layers and the head with every activation rounded to 8 significant bits, and the two
// computations round at different points (other BLAS blocking, other cache layout): up to 2.3% of
// the largest |logit| was seen on the test models (2.0% between bf16 and float32).
func logitTol(ref []float32) float64 { return tol(1e-5, 0.05*maxAbs(ref)) }

// f32Twin is a float32 copy of m (the same, possibly bf16-rounded, weights): the reference that
// finite differences are taken on when the tests run in bfloat16, where a perturbation of 1e-2 is
// not representable exactly and the loss itself carries rounding errors far above the difference.
func f32Twin(t *testing.T, m *Model) *Model {
	t.Helper()
	dir := t.TempDir()
	if err := m.Export(dir, ExportOptions{DType: "float32"}); err != nil {
		t.Fatal(err)
	}
	m32, err := Load(dir, Options{Device: testDevice, DType: "float32"})
	if err != nil {
		t.Fatal(err)
	}
	return m32
}

// param is m's parameter called name (HF name).
func param(t *testing.T, m *Model, name string) *torch.Tensor {
	t.Helper()
	for _, p := range m.Parameters() {
		if p.Name == name {
			return p.Tensor
		}
	}
	t.Fatalf("no parameter %s", name)
	return nil
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

// adamWStep moves every weight of m by one AdamW step (lr 0.05) on the summed negative log-probs
// of seqs: a large, dense change for the tests whose caches must follow the weights.
func adamWStep(m *Model, seqs [][]int32) error {
	opt, err := torch.NewAdamW(m.Parameters(), torch.AdamWConfig{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		return err
	}
	defer opt.Close()
	b, err := NewBatch(seqs, false)
	if err != nil {
		return err
	}
	p, err := m.Train(b, ForwardOptions{})
	if err != nil {
		return err
	}
	if err := p.Backward(p.LogProbs.Sum(false).Neg()); err != nil {
		return err
	}
	opt.Step()
	return nil
}
