package model

import (
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Generation's fused q/k/v and gate/up products compute with the parameters as they are now: a
// loaded model's groups are already laid out (nothing to copy), an AdamW step in place reaches the
// fused weights without a copy, and a parameter replaced by another tensor (ZeRO-3's gather) is
// laid out again on the next pass. Each time, the KV-cache pass over a sequence gives the logits
// of the full forward pass, which multiplies the separate parameters.
func TestFusedProjectionsFollowTheParameters(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", false, 91) // q/k/v biases: a fused bias group too
		defer m.Close()
		m.SetTrainable(true)
		V := m.Config.VocabSize
		seq := randomSeqs(92, V, 6)[0]
		c, err := m.NewKVCache(1, 8)
		if err != nil {
			return err
		}
		defer c.Close()
		check := func(what string, wantMoved int) {
			s := torch.NewScope()
			defer s.Close()
			if _, moved := torch.FuseRows(m.fuseGroups()); moved != wantMoved {
				t.Errorf("%s: %d groups laid out again, want %d", what, moved, wantMoved)
			}
			logits, err := m.Prefill(c, []int{0}, [][]int32{seq})
			if err != nil {
				t.Fatal(err)
			}
			full := seqLogits(t, m, seq)
			want := full[(len(seq)-1)*V:]
			if d := maxAbsDiff(logits.Float32s(), want); d > logitTol(want) {
				t.Errorf("%s: the cached pass differs from the full forward by %g", what, d)
			}
		}
		check("loaded", 0)
		if err := adamWStep(m, randomSeqs(93, V, 5, 7)); err != nil {
			return err
		}
		check("after an AdamW step", 0)
		for _, name := range []string{"model.layers.0.self_attn.v_proj.bias", "model.layers.1.mlp.up_proj.weight"} {
			w := param(t, m, name)
			torch.NoGrad(func() {
				fresh := w.Detach().MulScalar(0.5).MoveTo(m.scope)
				w.Swap(fresh)
				fresh.Free()
			})
		}
		check("after two swaps", 2)
		return nil
	})
}
