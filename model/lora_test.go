package model

import (
	"math"
	"slices"
	"testing"

	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/torch"
)

// testLoRA targets every linear layer: rank 4, alpha 8 (scale 2).
var testLoRA = LoRAConfig{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}

// loraModel is testModel with testLoRA's adapters whose B is drawn at random (a fresh B is zero,
// which would hide every bug in the adapter's path).
func loraModel(t *testing.T, arch string, tied bool, c LoRAConfig) *Model {
	t.Helper()
	m := testModel(t, arch, tied, 5)
	if err := m.AddAdapters(c, 9); err != nil {
		t.Fatal(err)
	}
	g := torch.NewGenerator(17, m.Device)
	defer g.Close()
	torch.NoGrad(func() {
		for _, a := range m.Adapters() {
			a.B.Copy_(torch.Randn(a.B.Shape(), torch.Float32, m.Device, g).MulScalar(0.1))
		}
	})
	return m
}

// A fresh adapter is PEFT's: A uniform in ±1/√in (kaiming_uniform_ with a = √5), B zero, so the
// adapted model's logits are the base model's bit for bit.
func TestLoRAInitIsTheBase(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", true, 5)
		defer m.Close()
		seq := randomSeqs(3, m.Config.VocabSize, 9)[0]
		base := seqLogits(t, m, seq)
		if err := m.AddAdapters(LoRAConfig{Rank: 8, Alpha: 16, TargetModules: []string{ModuleQ, ModuleV}}, 1); err != nil {
			return err
		}
		if n := len(m.Adapters()); n != 2*len(m.Layers) {
			t.Errorf("%d adapters, want q and v of %d layers", n, len(m.Layers))
		}
		for _, a := range m.Adapters() {
			in := a.A.Shape()[1]
			bound := 1 / math.Sqrt(float64(in))
			if s := a.A.Shape(); s[0] != 8 || a.A.DType() != torch.Float32 {
				t.Errorf("%s: A %v %s, want [8, %d] float32", a.Name, s, a.A.DType(), in)
			}
			if mx := maxAbs(a.A.Float32s()); mx > bound || mx < 0.5*bound {
				t.Errorf("%s: max |A| %g, want just under %g", a.Name, mx, bound)
			}
			if maxAbs(a.B.Float32s()) != 0 {
				t.Errorf("%s: B is not zero", a.Name)
			}
		}
		if got := seqLogits(t, m, seq); maxAbsDiff(got, base) != 0 {
			t.Errorf("a fresh adapter changes the logits by %g", maxAbsDiff(got, base))
		}
		return nil
	})
}

// The adapted forward (W x + scale·B(A x), unmerged) equals the forward of the merged weights
// W + scale·B·A, for each architecture with tied and untied heads, to 2e-6 of the largest |logit|
// in float32: merging rounds every weight once more (2⁻²⁴ relative) and the two orders of summation
// differ; 1.1e-6 was the largest seen (llama, tied), under 1e-6 elsewhere. Switched off, the
// adapters leave the base model's logits bit for bit.
func TestLoRAMatchesMergedWeights(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		for _, tied := range []bool{true, false} {
			onTorch(t, func() error {
				b := testModel(t, arch, tied, 5)
				seq := randomSeqs(4, b.Config.VocabSize, 10)[0]
				base := seqLogits(t, b, seq)
				b.Close()
				m := loraModel(t, arch, tied, LoRAConfig{Rank: 4, Alpha: 8, RSLoRA: arch == "qwen3"})
				defer m.Close()
				adapted := seqLogits(t, m, seq)
				if d := maxAbsDiff(adapted, base); d < 1e-3 {
					t.Errorf("%s tied=%v: the adapters change the logits by only %g", arch, tied, d)
				}
				var off []float32
				m.WithoutAdapters(func() { off = seqLogits(t, m, seq) })
				if d := maxAbsDiff(off, base); d != 0 {
					t.Errorf("%s tied=%v: adapters switched off differ from the base by %g", arch, tied, d)
				}
				if err := m.MergeAdapters(); err != nil {
					return err
				}
				merged := seqLogits(t, m, seq)
				if d := maxAbsDiff(adapted, merged); d > tol(2e-6*maxAbs(merged), 0.05*maxAbs(merged)) {
					t.Errorf("%s tied=%v: adapted and merged logits differ by %g (largest %g)", arch, tied, d, maxAbs(merged))
				}
				return nil
			})
		}
	}
}

// The rollout engine's path (prefill, then one token at a time through the KV cache, q/k/v and
// gate/up as one fused product each with every projection's adapter added to its part) runs the
// same adapted forward as the trainer's full forward (separate products), for each architecture
// (Qwen2's q/k/v biases fused too).
func TestLoRADecodeMatchesFullForward(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		onTorch(t, func() error {
			m := loraModel(t, arch, false, testLoRA)
			defer m.Close()
			V := m.Config.VocabSize
			seq := randomSeqs(2, V, 9)[0]
			full := seqLogits(t, m, seq)
			c, err := m.NewKVCache(2, 16)
			if err != nil {
				return err
			}
			defer c.Close()
			logits, err := m.Prefill(c, []int{1}, [][]int32{seq[:3]})
			if err != nil {
				return err
			}
			for i := 3; i < len(seq); i++ {
				if logits, err = m.Decode(c, []int{1}, seq[i:i+1]); err != nil {
					return err
				}
				if d := maxAbsDiff(logits.Float32s(), full[i*V:(i+1)*V]); d > logitTol(full[i*V:(i+1)*V]) {
					t.Errorf("%s: decode of token %d differs from the full forward by %g", arch, i, d)
				}
			}
			return nil
		})
	}
}

// With adapters only they train: Parameters lists their A and B, the base weights get no
// gradients, and after AdamW steps every base weight is bit for bit what it was while the
// adapters moved. Layer-wise recomputation gives plain backprop's gradients, dropout included (the
// recomputed layer draws the forward's masks).
func TestLoRATrainsOnlyTheAdapters(t *testing.T) {
	onTorch(t, func() error {
		c := testLoRA
		c.Dropout = 0.3
		m := loraModel(t, "llama", true, c)
		defer m.Close()
		m.SetTrainable(true)
		ps := m.Parameters()
		if len(ps) != 2*7*len(m.Layers) || ps[0].Name != "model.layers.0.self_attn.q_proj.lora_A.weight" ||
			ps[1].Name != "model.layers.0.self_attn.q_proj.lora_B.weight" {
			t.Fatalf("parameters %d, first %s %s", len(ps), ps[0].Name, ps[1].Name)
		}
		if us := m.Units(); len(us) != len(ps) || us[0] != 1 || us[len(us)-1] != len(m.Layers) {
			t.Errorf("units %v", us)
		}
		before := map[string][]float32{}
		for _, w := range m.weights() {
			before[w.name] = (*w.t).Float32s()
		}
		b, err := NewBatch(randomSeqs(6, m.Config.VocabSize, 8, 5), false)
		if err != nil {
			return err
		}
		o := ForwardOptions{Entropy: true, Temperature: 1}
		m.lora.pass = 40
		plain, _ := gradsOf(t, m, b, o)
		m.lora.pass = 40 // the same dropout masks
		o.Checkpoint, o.HeadMemoryBudget, o.ChunkTokens = true, -1, 4
		ckpt, _ := gradsOf(t, m, b, o)
		for name, g := range plain {
			if scale := maxAbs(g); scale == 0 || maxAbsDiff(g, ckpt[name]) > tol(1e-5*scale, 0.05*scale) {
				t.Errorf("%s: gradient scale %g, checkpointed differs by %g", name, scale, maxAbsDiff(g, ckpt[name]))
			}
		}
		m.lora.pass = 41 // other masks: other gradients
		other, _ := gradsOf(t, m, b, ForwardOptions{Entropy: true, Temperature: 1})
		if n := ps[1].Name; maxAbsDiff(other[n], plain[n]) == 0 {
			t.Errorf("dropout masks do not change with the pass")
		}
		for _, w := range m.weights() {
			if (*w.t).Grad() != nil || (*w.t).RequiresGrad() {
				t.Errorf("base weight %s has a gradient or requires one", w.name)
			}
		}
		opt, err := torch.NewAdamW(ps, torch.AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		if err != nil {
			return err
		}
		b0 := ps[1].Tensor.Float32s()
		for range 2 {
			gradsOf(t, m, b, ForwardOptions{Checkpoint: true})
			opt.Step()
		}
		if maxAbsDiff(b0, ps[1].Tensor.Float32s()) == 0 {
			t.Errorf("the adapters did not move")
		}
		for _, w := range m.weights() {
			if !slices.Equal(before[w.name], (*w.t).Float32s()) {
				t.Errorf("base weight %s changed", w.name)
			}
		}
		return nil
	})
}

func TestLoRAConfigValidate(t *testing.T) {
	for _, c := range []struct {
		c   LoRAConfig
		key string
	}{
		{LoRAConfig{Rank: 0, Alpha: 8}, "critic_lora.rank"}, {LoRAConfig{Rank: MaxLoRARank + 1, Alpha: 8}, "critic_lora.rank"},
		{LoRAConfig{Rank: 4, Alpha: 0}, "critic_lora.alpha"}, {LoRAConfig{Rank: 4, Alpha: math.Inf(1)}, "critic_lora.alpha"},
		{LoRAConfig{Rank: 4, Alpha: 8, Dropout: 1}, "critic_lora.dropout"}, {LoRAConfig{Rank: 4, Alpha: 8, Dropout: math.NaN()}, "critic_lora.dropout"},
		{LoRAConfig{Rank: 4, Alpha: 8, TargetModules: []string{"lm_head"}}, "critic_lora.target_modules"},
		{LoRAConfig{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear, ModuleQ}}, "critic_lora.target_modules"},
	} {
		ke, ok := setting.As(c.c.Check("critic_lora"))
		if !ok || ke.Key != c.key {
			t.Errorf("%+v: error %v, want a setting.KeyError naming %s", c.c, c.c.Check("critic_lora"), c.key)
		}
	}
	if err := (LoRAConfig{Rank: 4, Alpha: 8, Dropout: 0.05, TargetModules: []string{ModuleQ, ModuleV}}).Validate(); err != nil {
		t.Errorf("a sound section refused: %v", err)
	}
	// scale: alpha/r = 16/4 = 4; rsLoRA alpha/√r = 16/2 = 8.
	if s := (LoRAConfig{Rank: 4, Alpha: 16}).Scale(); s != 4 {
		t.Errorf("scale %v, want 4", s)
	}
	if s := (LoRAConfig{Rank: 4, Alpha: 16, RSLoRA: true}).Scale(); s != 8 {
		t.Errorf("rsLoRA scale %v, want 8", s)
	}
	if ts := (LoRAConfig{TargetModules: []string{ModuleDown, ModuleQ}}).Targets(); !slices.Equal(ts, []string{ModuleQ, ModuleDown}) {
		t.Errorf("targets %v", ts)
	}
}
