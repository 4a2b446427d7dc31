package model

import (
	"math"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// copyWeights copies every parameter of src into dst (same config apart from pad_token_id).
func copyWeights(dst, src *Model) {
	torch.NoGrad(func() {
		ps := src.Parameters()
		for i, p := range dst.Parameters() {
			p.Tensor.Copy_(ps[i].Tensor)
		}
	})
}

// padModels builds two models with the same weights, one whose config sets pad_token_id = pad and
// one without it; tiedPadded ties the head of the first, whose twin then gets an untied head
// holding a copy of the embedding (the same function, with the head's gradient kept apart).
func padModels(t *testing.T, pad int, tiedPadded bool) (padded, plain *Model) {
	cfg := testConfig(t, "qwen2", false)
	plain, err := New(cfg, nil, Options{Device: testDevice}, 21)
	if err != nil {
		t.Fatal(err)
	}
	perturbBiases(t, plain)
	pc := testConfig(t, "qwen2", tiedPadded)
	pc.PadTokenID = &pad
	if padded, err = New(pc, nil, Options{Device: testDevice}, 21); err != nil {
		t.Fatal(err)
	}
	copyWeights(padded, plain) // a tied model's table is a prefix of the untied one's
	if tiedPadded {
		torch.NoGrad(func() { plain.LMHead.Weight.Copy_(plain.EmbedTokens) })
	}
	padded.SetTrainable(true)
	plain.SetTrainable(true)
	return padded, plain
}

// rowOf returns row r of a [V, H] gradient held flat.
func rowOf(g []float32, r, h int) []float32 { return g[r*h : (r+1)*h] }

// As transformers' nn.Embedding(vocab, hidden, padding_idx=pad_token_id): the lookup gives the
// pad row no gradient even where the pad token is in the input, and changes nothing else. Untied,
// the pad row's gradient is exactly 0 and every other gradient is the same as without
// pad_token_id. Tied, the shared weight's gradient is the head's full gradient plus the lookup's
// gradient with the pad row left out: the head still trains the pad row, as in transformers, where
// lm_head and embed_tokens are one Parameter and only the embedding's backward skips the row.
func TestEmbeddingPadRowGetsNoLookupGradient(t *testing.T) {
	const pad = 5
	seqs := randomSeqs(22, 61, 7, 4, 9)
	seqs[0][2], seqs[1][3], seqs[2][0] = pad, pad, pad // the pad token is looked up three times
	t.Run("untied", func(t *testing.T) {
		onTorch(t, func() error {
			padded, plain := padModels(t, pad, false)
			defer padded.Close()
			defer plain.Close()
			b, err := NewBatch(seqs, false)
			if err != nil {
				return err
			}
			gp, _ := gradsOf(t, padded, b, ForwardOptions{})
			g0, _ := gradsOf(t, plain, b, ForwardOptions{})
			h := padded.Config.HiddenSize
			const emb = "model.embed_tokens.weight"
			if maxAbs(rowOf(g0[emb], pad, h)) == 0 {
				t.Errorf("without pad_token_id the pad row has no gradient: the test cannot tell")
			}
			if d := maxAbs(rowOf(gp[emb], pad, h)); d != 0 {
				t.Errorf("pad row gradient %g, want exactly 0", d)
			}
			for name, g := range g0 {
				want := g
				if name == emb {
					want = append([]float32(nil), g...)
					clear(rowOf(want, pad, h))
				}
				if d := maxAbsDiff(gp[name], want); d != 0 {
					t.Errorf("%s gradient differs by %g from the model without pad_token_id", name, d)
				}
			}
			return nil
		})
	})
	t.Run("tied", func(t *testing.T) {
		onTorch(t, func() error {
			padded, plain := padModels(t, pad, true)
			defer padded.Close()
			defer plain.Close()
			b, err := NewBatch(seqs, true)
			if err != nil {
				return err
			}
			gp, _ := gradsOf(t, padded, b, ForwardOptions{Checkpoint: true})
			g0, _ := gradsOf(t, plain, b, ForwardOptions{Checkpoint: true})
			h := padded.Config.HiddenSize
			head, emb := g0["lm_head.weight"], append([]float32(nil), g0["model.embed_tokens.weight"]...)
			clear(rowOf(emb, pad, h))
			want := make([]float32, len(head))
			scale := 0.0
			for i := range want {
				want[i] = head[i] + emb[i]
				scale = math.Max(scale, math.Abs(float64(want[i])))
			}
			got := gp["model.embed_tokens.weight"]
			if d := maxAbsDiff(got, want); d > 1e-6*scale {
				t.Errorf("tied weight gradient differs from head + lookup-without-pad-row by %g (scale %g)", d, scale)
			}
			if maxAbs(rowOf(got, pad, h)) == 0 {
				t.Errorf("the tied pad row got no gradient from the head")
			}
			return nil
		})
	})
}

func maxAbs(xs []float32) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, math.Abs(float64(x)))
	}
	return m
}

// pad_token_id outside the vocabulary is refused, as nn.Embedding refuses such a padding_idx; a
// negative one counts from the end.
func TestPaddingIdx(t *testing.T) {
	c := testConfig(t, "llama", true)
	for _, tc := range []struct {
		pad     *int
		want    int
		invalid bool
	}{{nil, -1, false}, {ptr(0), 0, false}, {ptr(60), 60, false}, {ptr(-1), 60, false}, {ptr(61), 0, true}, {ptr(-62), 0, true}} {
		c.PadTokenID = tc.pad
		err := c.Validate()
		if tc.invalid {
			if err == nil || !contains(err.Error(), "pad_token_id") {
				t.Errorf("pad_token_id %d: %v, want an error naming pad_token_id", *tc.pad, err)
			}
			continue
		}
		if err != nil || c.PaddingIdx() != tc.want {
			t.Errorf("pad_token_id %v: PaddingIdx %d (err %v), want %d", tc.pad, c.PaddingIdx(), err, tc.want)
		}
	}
}

func ptr(i int) *int { return &i }
