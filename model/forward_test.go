package model

import (
	"math"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// A right-padded batch and a packed batch of sequences of different lengths give, at every real
// token, the logits of that sequence run alone.
func TestBatchLayoutsMatchOneByOne(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			onTorch(t, func() error {
				m := testModel(t, arch, arch == "qwen2", 7)
				defer m.Close()
				V := m.Config.VocabSize
				seqs := randomSeqs(8, V, 5, 9, 1, 7)
				for _, packed := range []bool{false, true} {
					b, err := NewBatch(seqs, packed)
					if err != nil {
						return err
					}
					l, err := m.Logits(b)
					if err != nil {
						return err
					}
					all := l.Float32s()
					_, cols := b.Shape()
					for i, s := range seqs {
						o := (b.row[i]*cols + b.start[i]) * V
						alone := seqLogits(t, m, s)
						if d := maxAbsDiff(all[o:o+len(s)*V], alone); d > logitTol(alone) {
							t.Errorf("packed=%v: sequence %d differs from its own forward by %g", packed, i, d)
						}
					}
				}
				return nil
			})
		})
	}
}

// logSoftmax is the reference: log-softmax of one row of logits divided by temp, in float64.
func logSoftmax(row []float32, temp float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = math.Max(mx, float64(v)/temp)
	}
	sum := 0.0
	for _, v := range row {
		sum += math.Exp(float64(v)/temp - mx)
	}
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = float64(v)/temp - mx - math.Log(sum)
	}
	return out
}

// LogProbs (chunked, tempered, with entropy) against log-softmax of the full logits computed in Go:
// position t of a sequence holds log p(token_t | tokens_<t), its entropy −Σ p log p, and 0 at the
// first token and at padding.
func TestLogProbsMatchFullLogits(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", true, 9)
		defer m.Close()
		V := m.Config.VocabSize
		seqs := randomSeqs(10, V, 6, 3, 8)
		b, err := NewBatch(seqs, false)
		if err != nil {
			return err
		}
		const temp = 0.7
		out, err := m.LogProbs(b, ForwardOptions{Temperature: temp, Entropy: true, ChunkTokens: 4})
		if err != nil {
			return err
		}
		lps, err := b.Values(out.LogProbs)
		if err != nil {
			return err
		}
		ents, _ := b.Values(out.Entropy)
		// In bf16 the chunked head rounds its logits differently from the full forward (other rows
		// in each matmul); a log-prob moves by the difference of two rounded logits over the
		// temperature: up to 0.047 (entropy: 0.0065) was seen, tolerances are about twice that.
		lpTol, entTol := tol(1e-5, 0.1), tol(1e-5, 0.015)
		rows, cols := b.Shape()
		if s := out.LogProbs.Shape(); s[0] != int64(rows) || s[1] != int64(cols) {
			t.Errorf("log-prob shape %v, want [%d %d]", s, rows, cols)
		}
		for i, s := range seqs {
			full := seqLogits(t, m, s)
			if lps[i][0] != 0 || ents[i][0] != 0 {
				t.Errorf("sequence %d: first token has log-prob %v entropy %v, want 0 0", i, lps[i][0], ents[i][0])
			}
			for p := 1; p < len(s); p++ {
				ref := logSoftmax(full[(p-1)*V:p*V], temp)
				ent := 0.0
				for _, l := range ref {
					ent -= math.Exp(l) * l
				}
				if d := math.Abs(float64(lps[i][p]) - ref[s[p]]); d > lpTol {
					t.Errorf("sequence %d token %d: log-prob %v, want %v", i, p, lps[i][p], ref[s[p]])
				}
				if d := math.Abs(float64(ents[i][p]) - ent); d > entTol {
					t.Errorf("sequence %d token %d: entropy %v, want %v", i, p, ents[i][p], ent)
				}
			}
		}
		// Padding of the 3-token row stays 0.
		all := out.LogProbs.Float32s()
		for c := len(seqs[1]); c < cols; c++ {
			if all[1*cols+c] != 0 {
				t.Errorf("padding column %d of row 1 holds %v", c, all[cols+c])
			}
		}
		return nil
	})
}

// tokenWeights is a per-token weight in b's layout on dev, so that every position matters
// differently to a loss: w[r, c] = 1 + (r·cols + c) mod 3.
func tokenWeights(b *Batch, dev torch.Device) *torch.Tensor {
	rows, cols := b.Shape()
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(1 + i%3)
	}
	return torch.FromSlice(w, int64(rows), int64(cols)).ToDevice(dev)
}

// gradsOf runs Train on b with o, backpropagates a loss that uses log-probs and entropies, and
// returns every parameter's gradient (name → values) and the loss.
func gradsOf(t *testing.T, m *Model, b *Batch, o ForwardOptions) (map[string][]float32, float64) {
	t.Helper()
	torch.ZeroGrad(m.ParameterTensors())
	p, err := m.Train(b, o)
	if err != nil {
		t.Fatal(err)
	}
	wt := tokenWeights(b, m.Device)
	loss := p.LogProbs.Mul(wt).Sum(false).Neg()
	if p.Entropy != nil {
		loss = loss.Add(p.Entropy.Sum(false).MulScalar(0.05))
	}
	if err := p.Backward(loss); err != nil {
		t.Fatal(err)
	}
	g := map[string][]float32{}
	for _, prm := range m.Parameters() {
		gr := prm.Tensor.Grad()
		if gr == nil {
			t.Fatalf("%s has no gradient", prm.Name)
		}
		g[prm.Name] = gr.Float32s()
	}
	return g, loss.Float()
}

// Layer-wise gradient checkpointing and head recomputation in chunks change how the backward pass
// is scheduled, not what it computes: every parameter's gradient equals plain backprop's (the head
// kept, as the default budget does for this small vocabulary), to 1e-5 of the tensor's largest
// gradient in f32. In bf16 the two schedules round at different points: 4% of the larger of that
// and 1% of the model's largest gradient, because the k_proj biases' gradients are small (softmax
// ignores the part of q·b that all keys share; only RoPE's rotation makes it vary) and mostly
// rounding noise; up to 1.8% was seen on other tensors, 2.6% on those biases.
func TestCheckpointedGradsMatchPlain(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			onTorch(t, func() error {
				m := testModel(t, arch, arch != "llama", 11)
				defer m.Close()
				m.SetTrainable(true)
				for _, packed := range []bool{false, true} {
					b, err := NewBatch(randomSeqs(12, m.Config.VocabSize, 7, 4, 9), packed)
					if err != nil {
						return err
					}
					plain, l1 := gradsOf(t, m, b, ForwardOptions{Entropy: true, Temperature: 0.9})
					ckpt, l2 := gradsOf(t, m, b, ForwardOptions{Entropy: true, Temperature: 0.9, Checkpoint: true, ChunkTokens: 5,
						HeadMemoryBudget: -1})
					if math.Abs(l1-l2) > 1e-5*math.Abs(l1) {
						t.Errorf("losses differ: %v vs %v", l1, l2)
					}
					if len(plain) != len(m.Parameters()) {
						t.Errorf("%d gradients for %d parameters", len(plain), len(m.Parameters()))
					}
					global := 0.0
					for _, g := range plain {
						global = math.Max(global, maxAbs(g))
					}
					for name, g := range plain {
						scale := maxAbs(g)
						if scale == 0 {
							t.Errorf("packed=%v: %s has an all-zero gradient", packed, name)
						}
						if d := maxAbsDiff(g, ckpt[name]); d > tol(1e-5*scale, 0.04*math.Max(scale, 0.01*global)) {
							t.Errorf("packed=%v: %s gradient differs by %g (scale %g)", packed, name, d, scale)
						}
					}
				}
				return nil
			})
		})
	}
}

// The gradient of log p(token) is checked against a finite difference on one weight, so the whole
// head-chunk backward is known to compute the right thing, not only the same thing twice.
func TestTrainGradientMatchesFiniteDifference(t *testing.T) {
	onTorch(t, func() error {
		cfg := testConfig(t, "llama", true)
		m, err := New(cfg, nil, Options{Device: testDevice, DType: "float64"}, 13)
		if err == nil {
			m.Close()
			t.Errorf("float64 should be refused as a model dtype")
		}
		m = testModel(t, "llama", true, 13)
		defer m.Close()
		m.SetTrainable(true)
		b, err := NewBatch(randomSeqs(14, cfg.VocabSize, 6), false)
		if err != nil {
			return err
		}
		g, _ := gradsOf(t, m, b, ForwardOptions{Checkpoint: true})
		for _, name := range []string{"model.layers.1.mlp.down_proj.weight", "model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight", "model.layers.0.self_attn.k_proj.weight"} {
			// In bf16 the finite difference is taken on a float32 twin of the same weights (f32Twin),
			// and the bf16 gradient must be within 2% of the tensor's largest gradient of it (seen:
			// 0.31% on down_proj; 1.02% on layer 0's k_proj, whose gradient passes through both
			// layers' attention softmax in bf16).
			ref := m
			if lowPrecision() {
				ref = f32Twin(t, m)
				defer ref.Close()
			}
			w := param(t, ref, name)
			gscale := maxAbs(g[name])
			lossAt := func() float64 {
				out, err := ref.LogProbs(b, ForwardOptions{})
				if err != nil {
					t.Fatal(err)
				}
				wts := make([]float32, 6)
				for i := range wts {
					wts[i] = float32(1 + i%3)
				}
				lp := out.LogProbs.Float32s()
				s := 0.0
				for i := range lp {
					s -= float64(wts[i]) * float64(lp[i])
				}
				return s
			}
			const eps = 1e-2
			for _, idx := range []int64{0, 37, 100} {
				flat := w.Detach().View(-1)
				orig := flat.Narrow(0, idx, 1).Float()
				torch.NoGrad(func() { flat.Narrow(0, idx, 1).Fill_(orig + eps) })
				up := lossAt()
				torch.NoGrad(func() { flat.Narrow(0, idx, 1).Fill_(orig - eps) })
				down := lossAt()
				torch.NoGrad(func() { flat.Narrow(0, idx, 1).Fill_(orig) })
				fd := (up - down) / (2 * eps)
				if got := float64(g[name][idx]); math.Abs(got-fd) > tol(2e-3*math.Max(1, math.Abs(fd)), 0.02*gscale) {
					t.Errorf("%s[%d]: gradient %v, finite difference %v (largest gradient %v)", name, idx, got, fd, gscale)
				}
			}
		}
		return nil
	})
}

func TestTrainRefusesFrozenWeights(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", true, 15)
		defer m.Close()
		b, _ := NewBatch([][]int32{{1, 2, 3}}, false)
		if _, err := m.Train(b, ForwardOptions{}); err == nil || !contains(err.Error(), "SetTrainable") {
			t.Errorf("Train on frozen weights: %v", err)
		}
		if _, err := NewBatch([][]int32{{1}, {}}, false); err == nil || !contains(err.Error(), "sequence 1 is empty") {
			t.Errorf("empty sequence: %v", err)
		}
		b, _ = NewBatch([][]int32{{1, 2}, {3, 61}}, false)
		if _, err := m.LogProbs(b, ForwardOptions{}); err == nil || !contains(err.Error(), "sequence 1, token 1: id 61") {
			t.Errorf("out-of-vocabulary id: %v", err)
		}
		return nil
	})
}

// ScoreFrom skips the head for prompt tokens: their log-probs are 0, the rest are unchanged.
func TestScoreFrom(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", false, 17)
		defer m.Close()
		seqs := randomSeqs(18, m.Config.VocabSize, 6, 4, 7)
		for _, packed := range []bool{false, true} {
			all, _ := NewBatch(seqs, packed)
			part, _ := NewBatch(seqs, packed)
			part.ScoreFrom = []int{3, 0, 6}
			a, err := m.LogProbs(all, ForwardOptions{})
			if err != nil {
				return err
			}
			p, err := m.LogProbs(part, ForwardOptions{})
			if err != nil {
				return err
			}
			va, _ := all.Values(a.LogProbs)
			vp, _ := part.Values(p.LogProbs)
			for i := range seqs {
				for tk := range seqs[i] {
					want := va[i][tk]
					if tk < part.ScoreFrom[i] {
						want = 0
					}
					// Other rows in the head's matmul change BLAS blocking: equal to rounding.
					if math.Abs(float64(vp[i][tk]-want)) > 1e-5 || (want == 0) != (vp[i][tk] == 0) {
						t.Errorf("packed=%v seq %d token %d: %v, want %v", packed, i, tk, vp[i][tk], want)
					}
				}
			}
			part.ScoreFrom = []int{1}
			if _, err := m.LogProbs(part, ForwardOptions{}); err == nil || !contains(err.Error(), "ScoreFrom has 1 entries for 3") {
				t.Errorf("short ScoreFrom: %v", err)
			}
		}
		return nil
	})
}

// A value head on Hidden (a PPO critic) trains through the model: the gradient of a loss over the
// hidden states matches a finite difference, with and without checkpointing and with the head
// skipped (HiddenOnly: the same computation, bit for bit), and Hidden equals the no-grad hidden
// states.
func TestHiddenGradient(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", true, 19)
		defer m.Close()
		m.SetTrainable(true)
		b, _ := NewBatch(randomSeqs(20, m.Config.VocabSize, 5, 3), false)
		rows, cols := b.Shape()
		wv := make([]float32, rows*cols*m.Config.HiddenSize)
		for i := range wv {
			wv[i] = float32(i%7) - 3
		}
		head := torch.FromSlice(wv, int64(rows), int64(cols), int64(m.Config.HiddenSize)).ToDevice(m.Device)
		name := "model.layers.0.self_attn.v_proj.weight"
		w := param(t, m, name)
		grads := map[bool][]float32{}
		for _, ck := range []bool{false, true} {
			torch.ZeroGrad(m.ParameterTensors())
			p, err := m.Train(b, ForwardOptions{Hidden: true, Checkpoint: ck})
			if err != nil {
				return err
			}
			if err := p.Backward(p.Hidden.Mul(head).Sum(false)); err != nil {
				return err
			}
			grads[ck] = w.Grad().Float32s()
		}
		if d := maxAbsDiff(grads[false], grads[true]); d > 1e-5 {
			t.Errorf("checkpointed hidden-state gradient differs by %g", d)
		}
		// HiddenOnly skips the head: no log-probs, the same gradient (the head never reached it).
		torch.ZeroGrad(m.ParameterTensors())
		if _, err := m.Train(b, ForwardOptions{HiddenOnly: true}); err == nil {
			t.Errorf("HiddenOnly without Hidden: no error")
		}
		p, err := m.Train(b, ForwardOptions{Hidden: true, HiddenOnly: true})
		if err != nil {
			return err
		}
		if p.LogProbs != nil || p.Entropy != nil {
			t.Errorf("HiddenOnly computed the head's outputs")
		}
		if err := p.Backward(p.Hidden.Mul(head).Sum(false)); err != nil {
			return err
		}
		if d := maxAbsDiff(grads[false], w.Grad().Float32s()); d > 0 {
			t.Errorf("HiddenOnly's hidden-state gradient differs by %g", d)
		}
		// As in TestTrainGradientMatchesFiniteDifference: in bf16 the finite difference is taken on
		// a float32 twin, within 1% of the largest gradient (0.013% was seen).
		ref := m
		if lowPrecision() {
			ref = f32Twin(t, m)
			defer ref.Close()
		}
		gscale := maxAbs(grads[false])
		value := func() float64 {
			h, err := ref.Hidden(b)
			if err != nil {
				t.Fatal(err)
			}
			return h.Mul(head).Sum(false).Float()
		}
		const eps = 1e-2
		flat := param(t, ref, name).Detach().View(-1)
		for _, idx := range []int64{3, 200} {
			orig := flat.Narrow(0, idx, 1).Float()
			torch.NoGrad(func() { flat.Narrow(0, idx, 1).Fill_(orig + eps) })
			up := value()
			torch.NoGrad(func() { flat.Narrow(0, idx, 1).Fill_(orig - eps) })
			down := value()
			torch.NoGrad(func() { flat.Narrow(0, idx, 1).Fill_(orig) })
			fd := (up - down) / (2 * eps)
			if got := float64(grads[false][idx]); math.Abs(got-fd) > tol(2e-3*math.Max(1, math.Abs(fd)), 0.01*gscale) {
				t.Errorf("%s[%d]: gradient %v, finite difference %v (largest gradient %v)", name, idx, got, fd, gscale)
			}
		}
		return nil
	})
}
