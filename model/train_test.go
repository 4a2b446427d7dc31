package model

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// The head's graph is kept exactly when the scored tokens' float32 logits fit the budget: sequences
// of 7, 4 and 9 tokens score 6 + 3 + 8 = 17 tokens, and 17 × 61 (vocabulary) × 4 bytes = 4,148.
// Both ways give the same log-probs (TestCheckpointedGradsMatchPlain compares the gradients).
func TestHeadMemoryBudget(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", true, 51)
		defer m.Close()
		m.SetTrainable(true)
		b, err := NewBatch(randomSeqs(52, m.Config.VocabSize, 7, 4, 9), false)
		if err != nil {
			return err
		}
		var ref []float32
		for _, c := range []struct {
			budget int64
			kept   bool
		}{{4148, true}, {4147, false}, {0, true}, {-1, false}} {
			s := torch.NewScope()
			p, err := m.Train(b, ForwardOptions{HeadMemoryBudget: c.budget})
			if err != nil {
				return err
			}
			if (p.kept != nil) != c.kept {
				t.Errorf("budget %d: head kept %v, want %v", c.budget, p.kept != nil, c.kept)
			}
			lp := p.LogProbs.Detach().Float32s()
			if ref == nil {
				ref = lp
			} else if d := maxAbsDiff(lp, ref); d > 1e-6 {
				t.Errorf("budget %d: log-probs differ by %g", c.budget, d)
			}
			if err := p.Backward(p.LogProbs.Sum(false).Neg()); err != nil {
				return err
			}
			torch.ZeroGrad(m.ParameterTensors())
			s.Close()
		}
		return nil
	})
}

// GradsReady is told each unit once per Backward, the last unit first and the embedding last, with
// and without checkpointing; when a unit is told, its gradients are complete (each equals the
// gradient the whole pass gives it; bfloat16 recomputes within 4 % of the tensor's largest).
func TestGradsReady(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", true, 53) // tied: the head's gradients go to the embedding
		defer m.Close()
		m.SetTrainable(true)
		b, err := NewBatch(randomSeqs(54, m.Config.VocabSize, 5, 6), false)
		if err != nil {
			return err
		}
		params, units := m.ParameterTensors(), m.Units()
		if len(units) != len(params) || units[0] != 0 || units[len(units)-1] != m.NumUnits()-1 {
			t.Fatalf("units %v for %d parameters, %d units", units, len(params), m.NumUnits())
		}
		want := []int{m.NumUnits() - 1}
		for u := len(m.Layers); u >= 0; u-- {
			want = append(want, u)
		}
		// The whole pass's gradients, to compare each unit's with when it is told.
		s := torch.NewScope()
		defer s.Close()
		p, err := m.Train(b, ForwardOptions{})
		if err != nil {
			return err
		}
		if err := p.Backward(p.LogProbs.Sum(false).Neg()); err != nil {
			return err
		}
		whole := make([][]float32, len(params))
		for i, w := range params {
			whole[i] = w.Grad().Float32s()
		}
		for _, ckpt := range []bool{false, true} {
			torch.ZeroGrad(params)
			var got []int
			ready := func(u int) {
				got = append(got, u)
				for i, w := range params {
					if units[i] != u {
						continue
					}
					scale := 0.0
					for _, v := range whole[i] {
						scale = math.Max(scale, math.Abs(float64(v)))
					}
					if d := maxAbsDiff(w.Grad().Float32s(), whole[i]); d > tol(1e-5, 0.04*scale) {
						t.Errorf("checkpoint %v: unit %d told with parameter %d's gradient %g from the whole pass's", ckpt, u, i, d)
					}
				}
			}
			p, err := m.Train(b, ForwardOptions{Checkpoint: ckpt, GradsReady: ready})
			if err != nil {
				return err
			}
			if err := p.Backward(p.LogProbs.Sum(false).Neg()); err != nil {
				return err
			}
			if len(got) != len(want) {
				t.Errorf("checkpoint %v: told %v, want %v", ckpt, got, want)
				continue
			}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("checkpoint %v: told %v, want %v", ckpt, got, want)
					break
				}
			}
		}
		return nil
	})
}

// unitLog records the calls a pass makes to its UnitWeights and GradsReady, and which units are
// gathered at each.
type unitLog struct {
	calls    []string
	gathered map[int]bool
}

func (l *unitLog) Gather(u int) {
	l.calls = append(l.calls, fmt.Sprintf("g%d", u))
	l.gathered[u] = true
}

func (l *unitLog) Release(u int) {
	l.calls = append(l.calls, fmt.Sprintf("r%d", u))
	delete(l.gathered, u)
}

// With Weights, a checkpointed pass gathers each unit before it is used and releases it after, in
// the documented order: a tied embedding for the whole pass, an untied one around its lookup and
// its backward; GradsReady(u) comes while u is gathered; nothing stays gathered after Backward.
// Without Checkpoint, Weights is refused.
func TestUnitWeightsOrder(t *testing.T) {
	onTorch(t, func() error {
		for _, tied := range []bool{true, false} {
			m := testModel(t, "qwen3", tied, 55)
			m.SetTrainable(true)
			b, err := NewBatch(randomSeqs(56, m.Config.VocabSize, 5), false)
			if err != nil {
				return err
			}
			l := &unitLog{gathered: map[int]bool{}}
			ready := func(u int) {
				if !l.gathered[u] {
					t.Errorf("tied %v: GradsReady(%d) while it is not gathered", tied, u)
				}
				l.calls = append(l.calls, fmt.Sprintf("d%d", u))
			}
			if _, err := m.Train(b, ForwardOptions{Weights: l}); err == nil {
				t.Errorf("tied %v: Weights without Checkpoint accepted", tied)
			}
			s := torch.NewScope()
			p, err := m.Train(b, ForwardOptions{Checkpoint: true, Weights: l, GradsReady: ready})
			if err != nil {
				return err
			}
			if err := p.Backward(p.LogProbs.Sum(false).Neg()); err != nil {
				return err
			}
			s.Close()
			m.Close()
			// The test model has 2 layers: units 0 (embedding), 1, 2 (layers), 3 (norm, untied head).
			want := "g0 g1 r1 g2 r2 g3 d3 r3 g2 d2 r2 g1 d1 r1 d0 r0"
			if !tied {
				want = "g0 r0 g1 r1 g2 r2 g3 d3 r3 g2 d2 r2 g1 d1 r1 g0 d0 r0"
			}
			if got := strings.Join(l.calls, " "); got != want {
				t.Errorf("tied %v: calls %q, want %q", tied, got, want)
			}
			if len(l.gathered) != 0 {
				t.Errorf("tied %v: still gathered after Backward: %v", tied, l.gathered)
			}
		}
		return nil
	})
}

// The head recomputed in chunks (HeadMemoryBudget −1, 5 rows at a time: the sequences' scored
// tokens split across chunks) gives the same log-probs, entropies and gradients as the head kept
// whole (the default budget at this vocabulary), over tied and untied heads and the three batch
// layouts: padded rows, packed rows, and a shared prefix (NewSharedBatch, scored after it), with
// the entropies in the loss (a bonus) and only measured (the backward then skips them). Only
// the head's scheduling differs (the layers run plainly both times), and in float32 every value
// agrees to 1e-6 of its tensor's largest: the chunks' matmuls group the rows differently, a few
// float32 roundings. In bf16 the logits of a chunk round differently from the whole's: values to 2%
// of the largest, gradients to 4% of the tensor's largest, as in TestCheckpointedGradsMatchPlain
// (2.1% was seen).
func TestChunkedHeadMatchesKept(t *testing.T) {
	for _, tied := range []bool{true, false} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			onTorch(t, func() error {
				m := testModel(t, "qwen2", tied, 61)
				defer m.Close()
				m.SetTrainable(true)
				const prefix = 4
				head := randomSeqs(62, m.Config.VocabSize, prefix)[0]
				tails := randomSeqs(63, m.Config.VocabSize, 5, 2, 7)
				seqs := make([][]int32, len(tails))
				for i, tl := range tails {
					seqs[i] = append(append([]int32(nil), head...), tl...)
				}
				layouts := map[string]func() (*Batch, error){
					"padded": func() (*Batch, error) { return NewBatch(seqs, false) },
					"packed": func() (*Batch, error) { return NewBatch(seqs, true) },
					"shared": func() (*Batch, error) {
						b, err := NewSharedBatch(seqs, prefix)
						if b != nil {
							b.ScoreFrom = []int{prefix + 1, prefix + 1, prefix + 1}
						}
						return b, err
					},
				}
				for name, mk := range layouts {
					b, err := mk()
					if err != nil {
						return err
					}
					for _, bonus := range []float64{0.05, 0} { // 0: the entropies are measured, not trained
						fo := ForwardOptions{Entropy: true, Temperature: 0.9}
						kept, lk, ek := headRun(t, m, b, fo, bonus, true)
						fo.HeadMemoryBudget, fo.ChunkTokens = -1, 5
						chunked, lc, ec := headRun(t, m, b, fo, bonus, false)
						for what, pair := range map[string][2][]float32{"log-probs": {lk, lc}, "entropies": {ek, ec}} {
							if d := maxAbsDiff(pair[0], pair[1]); d > tol(1e-6, 0.02)*math.Max(1, maxAbs(pair[0])) {
								t.Errorf("%s, bonus %v: %s differ by %g", name, bonus, what, d)
							}
						}
						for prm, g := range kept {
							scale := maxAbs(g)
							if scale == 0 {
								t.Errorf("%s, bonus %v: %s has an all-zero gradient", name, bonus, prm)
							}
							if d := maxAbsDiff(g, chunked[prm]); d > tol(1e-6, 0.04)*scale {
								t.Errorf("%s, bonus %v: %s's gradient differs by %g (scale %g)", name, bonus, prm, d, scale)
							}
						}
					}
				}
				return nil
			})
		})
	}
}

// headRun trains b once with o (the head kept or not, as keep says it must be) on the weighted
// negative log-likelihood plus bonus × the weighted entropies, and returns the gradients by
// parameter, the log-probs and the entropies.
func headRun(t *testing.T, m *Model, b *Batch, o ForwardOptions, bonus float64, keep bool) (map[string][]float32, []float32, []float32) {
	t.Helper()
	s := torch.NewScope()
	defer s.Close()
	torch.ZeroGrad(m.ParameterTensors())
	p, err := m.Train(b, o)
	if err != nil {
		t.Fatal(err)
	}
	if (p.kept != nil) != keep {
		t.Fatalf("head kept %v, want %v", p.kept != nil, keep)
	}
	wt := tokenWeights(b, m.Device)
	loss := p.LogProbs.Mul(wt).Sum(false).Neg()
	if bonus != 0 {
		loss = loss.Add(p.Entropy.Mul(wt).Sum(false).MulScalar(bonus))
	}
	if err := p.Backward(loss); err != nil {
		t.Fatal(err)
	}
	g := map[string][]float32{}
	for _, prm := range m.Parameters() {
		g[prm.Name] = prm.Tensor.Grad().Float32s()
	}
	return g, p.LogProbs.Detach().Float32s(), p.Entropy.Detach().Float32s()
}
