package model

import (
	"testing"
)

// Prefill a prefix, then decode the rest one token at a time: the logits after every token equal
// those of one full forward pass over the whole sequence.
func TestKVCacheDecodeMatchesFullForward(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			onTorch(t, func() error {
				m := testModel(t, arch, arch != "qwen3", 1)
				defer m.Close()
				V := m.Config.VocabSize
				seq := randomSeqs(2, V, 11)[0]
				full := seqLogits(t, m, seq)
				c, err := m.NewKVCache(3, 16)
				if err != nil {
					return err
				}
				defer c.Close()
				// Slot 2 (not 0) so that a read from the wrong slot would show.
				logits, err := m.Prefill(c, []int{2}, [][]int32{seq[:4]})
				if err != nil {
					return err
				}
				if d := maxAbsDiff(logits.Float32s(), full[3*V:4*V]); d > logitTol(full[3*V:4*V]) {
					t.Errorf("prefill logits differ from the full forward by %g", d)
				}
				for i := 4; i < len(seq); i++ {
					logits, err = m.Decode(c, []int{2}, seq[i:i+1])
					if err != nil {
						return err
					}
					if d := maxAbsDiff(logits.Float32s(), full[i*V:(i+1)*V]); d > logitTol(full[i*V:(i+1)*V]) {
						t.Errorf("decode of token %d differs from the full forward by %g", i, d)
					}
				}
				if c.Len(2) != len(seq) || c.Len(0) != 0 {
					t.Errorf("lengths %d %d, want %d 0", c.Len(2), c.Len(0), len(seq))
				}
				return nil
			})
		})
	}
}

// A continuous-batching step: slots of different lengths extend together, one with a whole new
// prompt while the others decode one token, in non-contiguous slots; then a forked group of three
// continuations of one prompt decodes different tokens. Every row equals its sequence alone.
func TestExtendMixedSlotsAndFork(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", true, 3)
		defer m.Close()
		V := m.Config.VocabSize
		seqs := randomSeqs(4, V, 9, 6, 7)
		c, err := m.NewKVCache(6, 12)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := m.Prefill(c, []int{4, 1}, [][]int32{seqs[0][:5], seqs[1][:2]}); err != nil {
			return err
		}
		// slot 4: +1 token, slot 0: a new 7-token prompt, slot 1: +3 tokens.
		logits, err := m.Extend(c, []int{4, 0, 1}, [][]int32{seqs[0][5:6], seqs[2], seqs[1][2:5]})
		if err != nil {
			return err
		}
		got := logits.Float32s()
		checks := []struct {
			row, seq, upto int
		}{{0, 0, 6}, {1, 2, 7}, {2, 1, 5}}
		for _, ck := range checks {
			full := seqLogits(t, m, seqs[ck.seq][:ck.upto])
			want := full[(ck.upto-1)*V : ck.upto*V]
			if d := maxAbsDiff(got[ck.row*V:(ck.row+1)*V], want); d > logitTol(want) {
				t.Errorf("row %d (sequence %d after %d tokens) differs by %g", ck.row, ck.seq, ck.upto, d)
			}
		}

		// GRPO group: fork slot 0's prompt into 2, 3 and 5, then decode a different token in each.
		if err := c.Fork(0, 2, 3, 5); err != nil {
			return err
		}
		next := []int32{5, 17, 33}
		logits, err = m.Decode(c, []int{2, 3, 5}, next)
		if err != nil {
			return err
		}
		got = logits.Float32s()
		for i, tok := range next {
			seq := append(append([]int32(nil), seqs[2]...), tok)
			full := seqLogits(t, m, seq)
			if d := maxAbsDiff(got[i*V:(i+1)*V], full[len(seqs[2])*V:]); d > logitTol(full[len(seqs[2])*V:]) {
				t.Errorf("forked continuation %d differs by %g", i, d)
			}
		}
		// Reuse: reset slot 1 and start another sequence there.
		c.Reset(1)
		logits, err = m.Prefill(c, []int{1}, [][]int32{seqs[1][:3]})
		if err != nil {
			return err
		}
		full := seqLogits(t, m, seqs[1][:3])
		if d := maxAbsDiff(logits.Float32s(), full[2*V:]); d > logitTol(full[2*V:]) {
			t.Errorf("reused slot differs by %g", d)
		}
		return nil
	})
}

func TestExtendRefusals(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "llama", true, 5)
		defer m.Close()
		c, err := m.NewKVCache(2, 4)
		if err != nil {
			return err
		}
		defer c.Close()
		cases := []struct {
			slots  []int
			tokens [][]int32
			want   string
		}{
			{[]int{0}, [][]int32{{1, 2, 3, 4, 5}}, "at most 4"},
			{[]int{2}, [][]int32{{1}}, "slot 2 out of range"},
			{[]int{0, 0}, [][]int32{{1}, {2}}, "appears twice"},
			{[]int{0}, [][]int32{{}}, "no tokens"},
			{[]int{1}, [][]int32{{99}}, "outside the vocabulary"},
			{[]int{0, 1}, [][]int32{{1}}, "one token list per slot"},
		}
		for _, tc := range cases {
			_, err := m.Extend(c, tc.slots, tc.tokens)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Errorf("Extend(%v, %v): %v, want an error containing %q", tc.slots, tc.tokens, err, tc.want)
			}
		}
		if c.Len(0) != 0 || c.Len(1) != 0 {
			t.Errorf("a refused Extend changed lengths: %d %d", c.Len(0), c.Len(1))
		}
		return nil
	})
}

// Truncate rolls a slot back: extending it again with other tokens gives the logits of the new
// sequence, as if the dropped tokens had never been there. Fork refuses bad slots.
func TestTruncateAndForkRefusals(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", false, 41)
		defer m.Close()
		V := m.Config.VocabSize
		seq := randomSeqs(42, V, 8)[0]
		c, err := m.NewKVCache(2, 10)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := m.Prefill(c, []int{1}, [][]int32{seq}); err != nil {
			return err
		}
		if err := c.Truncate(1, 5); err != nil {
			return err
		}
		alt := append(append([]int32(nil), seq[:5]...), 9, 10)
		logits, err := m.Extend(c, []int{1}, [][]int32{alt[5:]})
		if err != nil {
			return err
		}
		want := seqLogits(t, m, alt)[6*V:]
		if d := maxAbsDiff(logits.Float32s(), want); d > logitTol(want) {
			t.Errorf("after Truncate the logits differ by %g", d)
		}
		if err := c.Truncate(1, 99); err == nil {
			t.Errorf("Truncate past the length accepted")
		}
		for _, tc := range []struct {
			src  int
			dsts []int
			want string
		}{{1, []int{1}, "into itself"}, {1, []int{2}, "slot 2 out of range"}, {-1, []int{0}, "slot -1 out of range"}} {
			if err := c.Fork(tc.src, tc.dsts...); err == nil || !contains(err.Error(), tc.want) {
				t.Errorf("Fork(%d, %v): %v, want %q", tc.src, tc.dsts, err, tc.want)
			}
		}
		return nil
	})
}

// Qwen2.5-0.5B in bf16: 2 (K, V) · 24 layers · 2 KV heads · 64 head_dim · 2 bytes = 12,288 bytes per
// position, so 64 slots of 4,096 tokens and one scratch position each take 12288 · 64 · 4097 =
// 3,222,011,904 bytes (3 GiB).
func TestKVCacheBytes(t *testing.T) {
	onTorch(t, func() error {
		c, _, err := PresetConfig("qwen2", "qwen2.5-0.5b", nil)
		if err != nil {
			return err
		}
		m, err := newModel(c, Options{DType: "bfloat16"})
		if err != nil {
			return err
		}
		defer m.Close()
		if got := m.KVCacheBytes(64, 4096); got != 3222011904 {
			t.Errorf("KVCacheBytes = %d, want 3222011904", got)
		}
		return nil
	})
}
