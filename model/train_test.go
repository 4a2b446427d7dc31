package model

import (
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
