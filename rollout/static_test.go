package rollout

import (
	"slices"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// The engine draws the same tokens, with the same log-probs, whether its decode steps run as one
// static step or op by op through Extend and the sampler: requests with a seed each, sampled
// (temperature), truncated (top-k, top-p, min-p) and greedy, several samples a request (shared
// prefills, forked caches), on fewer slots than samples (admissions between decode steps,
// sequences moved down into freed slots). Most steps of the static run are static steps.
func TestEngineStaticStepMatchesEager(t *testing.T) {
	onTorch(t, func() error {
		m := tinyModel(t, 11)
		defer m.Close()
		prompts := randomPrompts(12, m.Config.VocabSize, 5, 9, 3, 7)
		settings := []Sampling{{Temperature: 0.9}, {Temperature: 0.7, TopK: 20, TopP: 0.9}, {Greedy: true},
			{Temperature: 1.1, MinP: 0.05}}
		run := func(static bool) ([][]*Result, Stats, error) {
			b, err := NewModelBackend(m, 5, 64)
			if err != nil {
				return nil, Stats{}, err
			}
			defer b.Close()
			b.SetStaticStep(static)
			e, err := NewEngine(b, nil, EngineConfig{Seed: 3})
			if err != nil {
				return nil, Stats{}, err
			}
			var reqs []*Request
			for i, p := range prompts {
				s := settings[i]
				s.MaxNewTokens, s.IgnoreEOS, s.Seed = 6+3*i, true, Seed(uint64(20+i))
				reqs = append(reqs, &Request{Prompt: p, N: 2, Sampling: s})
			}
			out, err := e.Generate(reqs)
			return out, e.Stats(), err
		}
		eager, es, err := run(false)
		if err != nil {
			return err
		}
		static, ss, err := run(true)
		if err != nil {
			return err
		}
		if es.StaticSteps != 0 || ss.StaticSteps < ss.Steps/2 || ss.Moves == 0 {
			t.Errorf("static steps: %d of %d eager, %d of %d static (%d moves); want 0 and most",
				es.StaticSteps, es.Steps, ss.StaticSteps, ss.Steps, ss.Moves)
		}
		for i := range eager {
			for k, e := range eager[i] {
				s := static[i][k]
				if !slices.Equal(e.Tokens, s.Tokens) {
					t.Errorf("request %d sample %d: static %v, eager %v", i, k, s.Tokens, e.Tokens)
					continue
				}
				for j := range e.Tokens {
					if !near(float64(e.LogProbs[j]), float64(s.LogProbs[j]), tol(1e-5, 0.05)) ||
						!near(float64(e.TemperedLogProbs[j]), float64(s.TemperedLogProbs[j]), tol(1e-5, 0.05)) {
						t.Errorf("request %d sample %d token %d: log-probs %g %g static, %g %g eager", i, k, j,
							s.LogProbs[j], s.TemperedLogProbs[j], e.LogProbs[j], e.TemperedLogProbs[j])
					}
				}
			}
		}
		return nil
	})
}

// With LoRA adapters the engine decodes through Extend, whose fused q/k/v and gate/up products add
// each projection's adapter to its part: a Qwen2 (biases in the fused q/k/v product) with adapters
// on every linear layer (B drawn at random: a fresh B is zero and would hide the adapters) draws
// the same tokens with the same log-probs as the same model with the adapters merged into its
// weights, whose decode steps are static steps: greedy, sampled and truncated requests with a
// seed each. Merging rounds each weight once more (float32: logits within about 1e-6 of their
// scale), so log-probs agree to 1e-5; in bfloat16 the merged weights round differently and
// sampled draws may part, so only the step counts are compared there.
func TestEngineLoRAMatchesMergedWeights(t *testing.T) {
	onTorch(t, func() error {
		m := tinyArch(t, "qwen2", 17)
		defer m.Close()
		if err := m.AddAdapters(model.LoRAConfig{Rank: 4, Alpha: 8, TargetModules: []string{model.AllLinear}}, 5); err != nil {
			return err
		}
		g := torch.NewGenerator(19, m.Device)
		defer g.Close()
		torch.NoGrad(func() {
			for _, a := range m.Adapters() {
				a.B.Copy_(torch.Randn(a.B.Shape(), torch.Float32, m.Device, g).MulScalar(0.1))
			}
		})
		prompts := randomPrompts(21, m.Config.VocabSize, 6, 8, 5)
		settings := []Sampling{{Greedy: true}, {Temperature: 0.9}, {Temperature: 0.8, TopK: 12, TopP: 0.9}}
		run := func() ([][]*Result, Stats, error) {
			b, err := NewModelBackend(m, 4, 48)
			if err != nil {
				return nil, Stats{}, err
			}
			defer b.Close()
			e, err := NewEngine(b, nil, EngineConfig{Seed: 7})
			if err != nil {
				return nil, Stats{}, err
			}
			var reqs []*Request
			for i, p := range prompts {
				s := settings[i]
				s.MaxNewTokens, s.IgnoreEOS, s.Seed = 10, true, Seed(uint64(40+i))
				reqs = append(reqs, &Request{Prompt: p, N: 2, Sampling: s})
			}
			out, err := e.Generate(reqs)
			return out, e.Stats(), err
		}
		adapted, as, err := run()
		if err != nil {
			return err
		}
		if err := m.MergeAdapters(); err != nil {
			return err
		}
		merged, ms, err := run()
		if err != nil {
			return err
		}
		if as.StaticSteps != 0 || ms.StaticSteps < ms.Steps/2 {
			t.Errorf("static steps: %d of %d with adapters, %d of %d merged; want 0 and most",
				as.StaticSteps, as.Steps, ms.StaticSteps, ms.Steps)
		}
		if lowPrecision() {
			return nil
		}
		for i := range adapted {
			for k, a := range adapted[i] {
				w := merged[i][k]
				if !slices.Equal(a.Tokens, w.Tokens) {
					t.Errorf("request %d sample %d: adapters %v, merged %v", i, k, a.Tokens, w.Tokens)
					continue
				}
				for j := range a.Tokens {
					if !near(float64(a.LogProbs[j]), float64(w.LogProbs[j]), 1e-5) {
						t.Errorf("request %d sample %d token %d: log-prob %g with adapters, %g merged", i, k, j,
							a.LogProbs[j], w.LogProbs[j])
					}
				}
			}
		}
		return nil
	})
}
