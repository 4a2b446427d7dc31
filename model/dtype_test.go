package model

import (
	"testing"
)

// The same weights in bfloat16 compute the same function as in float32, to bf16 precision, and the
// KV cache agrees with the full forward in bf16 too (device and dtype are configuration only).
func TestBF16MatchesF32(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", true, 31)
		defer m.Close()
		dir := t.TempDir()
		if err := m.Export(dir, ExportOptions{DType: "bfloat16"}); err != nil {
			return err
		}
		mb, err := Load(dir, Options{Device: testDevice, DType: "bfloat16"})
		if err != nil {
			return err
		}
		defer mb.Close()
		m32, err := Load(dir, Options{Device: testDevice}) // the bf16-rounded weights, computing in f32
		if err != nil {
			return err
		}
		defer m32.Close()
		V := m.Config.VocabSize
		seq := randomSeqs(32, V, 9)[0]
		ref, got := seqLogits(t, m32, seq), seqLogits(t, mb, seq)
		scale := 0.0
		for _, v := range ref {
			scale = max(scale, float64(v))
		}
		if d := maxAbsDiff(ref, got); d > 0.05*scale {
			t.Errorf("bf16 logits differ from f32 by %g (max logit %g)", d, scale)
		}
		c, err := mb.NewKVCache(1, 16)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := mb.Prefill(c, []int{0}, [][]int32{seq[:5]}); err != nil {
			return err
		}
		var last []float32
		for i := 5; i < len(seq); i++ {
			l, err := mb.Decode(c, []int{0}, seq[i:i+1])
			if err != nil {
				return err
			}
			last = l.Float32s()
		}
		if d := maxAbsDiff(last, got[(len(seq)-1)*V:]); d > 0.05*scale {
			t.Errorf("bf16 decode differs from the bf16 full forward by %g", d)
		}
		return nil
	})
}
