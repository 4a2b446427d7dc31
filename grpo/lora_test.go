package grpo

import (
	"context"
	"slices"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// A LoRA policy with a KL term and no reference model: the reference is the base (adapters off),
// one step moves the adapters only (the base's logits are bit for bit what they were), the KL
// reference passes agree with the policy's log-probs at step 0 (fresh B is zero: the adapted model
// is the base), and sampler and trainer log-probs agree as for full training.
func TestLoRAStep(t *testing.T) {
	dir := tinyDir(t, 3, nil)
	err := torch.Run(func() error {
		cfg := smallConfig()
		cfg.Loss.KLCoef = 0.1
		r := newRun(t, dir, newByteEnv(2, byteSum), cfg, func(ms *Models) {
			if err := ms.Policy.AddAdapters(model.LoRAConfig{Rank: 4, Alpha: 16}, 1); err != nil {
				t.Fatal(err)
			}
		})
		defer r.close()
		b, err := model.NewBatch([][]int32{{1, 5, 9, 14, 3}}, false)
		if err != nil {
			return err
		}
		baseLogits := func() []float32 {
			var l []float32
			r.m.WithoutAdapters(func() {
				out, err := r.m.Logits(b)
				if err != nil {
					t.Fatal(err)
				}
				l = out.Float32s()
			})
			return l
		}
		base0, ad0 := baseLogits(), weights(r.m)
		m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
		if err != nil {
			return err
		}
		if !slices.Equal(base0, baseLogits()) {
			t.Errorf("the base model changed")
		}
		for name, w := range weights(r.m) {
			if slices.Equal(w, ad0[name]) && name[len(name)-len("lora_B.weight"):] == "lora_B.weight" {
				t.Errorf("%s did not change", name)
			}
		}
		if k, ok := m["actor/kl_loss"]; !ok || k != 0 {
			t.Errorf("actor/kl_loss %v (present %v), want 0 at the first step (the adapted model is the base)", k, ok)
		}
		if mx := m["rollout_corr/logprob_abs_diff_max"]; !(mx <= 2e-5) && testDType != "bfloat16" {
			t.Errorf("sampler vs trainer log-prob difference %g", mx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
