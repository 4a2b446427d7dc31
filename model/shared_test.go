package model

import (
	"math"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// A shared prefix is computed once, yet every sequence must get exactly the log-probs, entropies
// and weight gradients it gets when laid out on its own: causal attention makes the prefix's
// states independent of what follows it, and its gradient is the sum of what each sequence sends
// back through it.
func TestSharedPrefixMatchesPacked(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			onTorch(t, func() error {
				m := testModel(t, arch, arch == "qwen3", 21)
				defer m.Close()
				m.SetTrainable(true)
				const prefix = 6
				tails := randomSeqs(22, m.Config.VocabSize, 5, 1, 8)
				head := randomSeqs(23, m.Config.VocabSize, prefix)[0]
				seqs := make([][]int32, len(tails))
				for i, tl := range tails {
					seqs[i] = append(append([]int32(nil), head...), tl...)
				}
				from := []int{prefix + 1, prefix + 1, prefix + 3}
				// Per-sequence token weights, the same in both layouts: sequence i, token k weighs 1+(i+k)%3.
				weights := make([][]float32, len(seqs))
				for i, s := range seqs {
					weights[i] = make([]float32, len(s))
					for k := range s {
						weights[i][k] = float32(1 + (i+k)%3)
					}
				}
				run := func(b *Batch, ckpt bool) (map[string][]float32, [][]float32, [][]float32) {
					b.ScoreFrom = from
					torch.ZeroGrad(m.ParameterTensors())
					p, err := m.Train(b, ForwardOptions{Entropy: true, Temperature: 0.8, Checkpoint: ckpt, ChunkTokens: 4})
					if err != nil {
						t.Fatal(err)
					}
					w, err := b.Tensor(weights, m.Device)
					if err != nil {
						t.Fatal(err)
					}
					loss := p.LogProbs.Mul(w).Sum(false).Neg().Add(p.Entropy.Mul(w).Sum(false).MulScalar(0.1))
					if err := p.Backward(loss); err != nil {
						t.Fatal(err)
					}
					lp, _ := b.Values(p.LogProbs)
					ent, _ := b.Values(p.Entropy)
					g := map[string][]float32{}
					for _, prm := range m.Parameters() {
						g[prm.Name] = prm.Tensor.Grad().Float32s()
					}
					return g, lp, ent
				}
				packed, err := NewBatch(seqs, true)
				if err != nil {
					return err
				}
				shared, err := NewSharedBatch(seqs, prefix)
				if err != nil {
					return err
				}
				if got, want := shared.Tokens(), prefix+5+1+8; got != want {
					t.Errorf("shared layout holds %d tokens, want %d", got, want)
				}
				// bf16: the shared layout rounds at other points than the packed one. Log-probs and
				// entropies: the tolerances of TestLogProbsMatchFullLogits. Gradients: against a float32
				// twin, the bf16 gradients of either layout are off by up to 6.6% (packed) and 9.9%
				// (shared) of a tensor's largest gradient, the worst on small ones (the k_proj biases);
				// from each other by up to 8.5%: 15% of the larger of that and 1% of the model's largest.
				lpTol, entTol := tol(1e-5, 0.1), tol(1e-5, 0.015)
				g0, lp0, ent0 := run(packed, false)
				for _, ckpt := range []bool{false, true} {
					g1, lp1, ent1 := run(shared, ckpt)
					for i := range seqs {
						for k := from[i]; k < len(seqs[i]); k++ {
							if d := math.Abs(float64(lp0[i][k] - lp1[i][k])); d > lpTol {
								t.Errorf("ckpt=%v seq %d token %d: log-prob %g shared vs %g packed", ckpt, i, k, lp1[i][k], lp0[i][k])
							}
							if d := math.Abs(float64(ent0[i][k] - ent1[i][k])); d > entTol {
								t.Errorf("ckpt=%v seq %d token %d: entropy %g shared vs %g packed", ckpt, i, k, ent1[i][k], ent0[i][k])
							}
						}
					}
					global := 0.0
					for _, g := range g0 {
						global = math.Max(global, maxAbs(g))
					}
					for name, g := range g0 {
						scale := maxAbs(g)
						if d := maxAbsDiff(g, g1[name]); d > tol(1e-5*math.Max(scale, 1e-3), 0.15*math.Max(scale, 0.01*global)) {
							t.Errorf("ckpt=%v: %s gradient differs by %g (scale %g)", ckpt, name, d, scale)
						}
					}
				}
				return nil
			})
		})
	}
}

func TestSharedBatchRefusals(t *testing.T) {
	seqs := [][]int32{{1, 2, 3, 4}, {1, 2, 5}}
	if n := SharedPrefix(seqs); n != 2 {
		t.Errorf("SharedPrefix = %d, want 2", n)
	}
	if n := SharedPrefix([][]int32{{1, 2}, {1, 2}}); n != 1 {
		t.Errorf("SharedPrefix of equal sequences = %d, want 1 (each keeps a token)", n)
	}
	if _, err := NewSharedBatch(seqs, 3); err == nil {
		t.Error("a prefix longer than a sequence's shared part was accepted")
	}
	b, err := NewSharedBatch(seqs, 2)
	if err != nil {
		t.Fatal(err)
	}
	b.ScoreFrom = []int{1, 3}
	if err := b.checkIDs(10); err == nil {
		t.Error("scoring inside the shared prefix was accepted")
	}
}
