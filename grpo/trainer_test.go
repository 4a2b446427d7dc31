package grpo

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// One step on the tiny model changes every trainable parameter (the embedding through the tokens
// seen, the head through every output, every layer through backprop).
func TestStepChangesEveryParameter(t *testing.T) {
	dir := tinyDir(t, 1, nil)
	err := torch.Run(func() error {
		r := newRun(t, dir, newByteEnv(2, byteSum), smallConfig(), nil)
		defer r.close()
		before := masters(r)
		m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
		if err != nil {
			return err
		}
		after := masters(r)
		for name, w := range before {
			if slices.Equal(w, after[name]) {
				t.Errorf("%s did not change", name)
			}
		}
		for _, k := range []string{"actor/pg_loss", "actor/entropy", "actor/grad_norm", "critic/score/mean",
			"critic/advantages/max", "response_length/mean", "num_turns/mean", "timing_s/gen", "timing_s/update_actor",
			"rollout_corr/logprob_abs_diff_max", "frac_reward_zero_std", "perf/throughput"} {
			if _, ok := m[k]; !ok {
				t.Errorf("metric %s missing (have %v)", k, m.Names())
			}
		}
		if r.tr.Updates() != 1 || r.tr.Skipped() != 0 {
			t.Errorf("updates %d skipped %d, want 1 and 0", r.tr.Updates(), r.tr.Skipped())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// With all rewards equal every advantage is 0; without weight decay, KL or entropy the loss has
// no gradient and AdamW's update is exactly 0: nothing may change.
func TestZeroAdvantageStepChangesNothing(t *testing.T) {
	dir := tinyDir(t, 2, nil)
	err := torch.Run(func() error {
		cfg := smallConfig()
		cfg.Optim.WeightDecay = 0
		r := newRun(t, dir, newByteEnv(2, func([]string) float64 { return 0.5 }), cfg, nil)
		defer r.close()
		before := weights(r.m)
		m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
		if err != nil {
			return err
		}
		if d, where := maxDiff(before, weights(r.m)); d != 0 {
			t.Errorf("weights changed by %g at %s", d, where)
		}
		if m["frac_reward_zero_std"] != 1 || m["critic/advantages/max"] != 0 {
			t.Errorf("frac_reward_zero_std %v, max advantage %v: want 1 and 0", m["frac_reward_zero_std"], m["critic/advantages/max"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The trainer's log-probs of the sampled tokens agree with the sampler's: same weights, same
// process, same temperature. In float32 on the CPU they differ only by rounding (different kernels:
// one-token decode steps against the KV cache vs one packed pass).
func TestSamplerTrainerAgreement(t *testing.T) {
	dir := tinyDir(t, 3, nil)
	err := torch.Run(func() error {
		cfg := smallConfig()
		cfg.Rollout.Sampling.Temperature = 0.7
		r := newRun(t, dir, newByteEnv(2, byteSum), cfg, nil)
		defer r.close()
		m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
		if err != nil {
			return err
		}
		mean, mx := m["rollout_corr/logprob_abs_diff_mean"], m["rollout_corr/logprob_abs_diff_max"]
		tol := 2e-5 // float32 rounding of log-softmax over ~300 logits through 4 layers
		if testDType == "bfloat16" {
			tol = 0.2 // bf16 weights: decode and packed passes round differently (see docs)
		}
		t.Logf("sampler vs trainer |Δℓ|: mean %.3g max %.3g (%v)", mean, mx, m.Names())
		if !(mx <= tol) || mean > mx {
			t.Errorf("sampler vs trainer log-prob difference: mean %g max %g, want max <= %g", mean, mx, tol)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A non-finite advantage (or anything else that makes the loss NaN) makes the gradient norm NaN:
// the optimizer step is skipped, counted and logged, and neither weights nor optimizer state
// change — the next good step is exactly what it would have been.
func TestNonFiniteStepIsSkipped(t *testing.T) {
	dir := tinyDir(t, 4, nil)
	err := torch.Run(func() error {
		r := newRun(t, dir, newByteEnv(1, byteSum), smallConfig(), nil)
		defer r.close()
		before, state := weights(r.m), stateValues(r.tr.opt.State())
		m := Metrics{}
		trajs, err := r.tr.rollout(context.Background(), &sliceSource{tasks: sayTasks(4)}, m)
		if err != nil {
			return err
		}
		samples := samplesOf(trajs)
		if err := r.tr.credit(trajs, samples, m); err != nil {
			return err
		}
		for i, on := range samples[0].Mask {
			if on {
				samples[0].adv[i] = float32(math.NaN())
				break
			}
		}
		if err := r.tr.update(samples, m); err != nil {
			return err
		}
		if d, where := maxDiff(before, weights(r.m)); d != 0 {
			t.Errorf("weights changed by %g at %s", d, where)
		}
		if r.tr.Skipped() != 1 || r.tr.Updates() != 0 || m["actor/skipped_steps"] != 1 || !math.IsNaN(m["actor/grad_norm"]) {
			t.Errorf("skipped %d updates %d metrics %v %v, want 1, 0, 1, NaN", r.tr.Skipped(), r.tr.Updates(),
				m["actor/skipped_steps"], m["actor/grad_norm"])
		}
		for k, v := range stateValues(r.tr.opt.State()) {
			if (strings.HasSuffix(k, ".exp_avg") || strings.HasSuffix(k, ".exp_avg_sq")) && slices.ContainsFunc(v, func(x float64) bool { return x != 0 }) {
				t.Errorf("optimizer state %s is not zero after a skipped step", k)
			}
			if k != "skipped" && !slices.Equal(v, state[k]) {
				t.Errorf("optimizer state %s changed in a skipped step", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A reward function that returns NaN spoils only its trajectory: it is left out of training and
// counted, and the step goes on with the others.
func TestNaNRewardIsContained(t *testing.T) {
	dir := tinyDir(t, 5, nil)
	err := torch.Run(func() error {
		calls := 0
		reward := func(texts []string) float64 {
			calls++
			if calls%4 == 1 {
				return math.NaN()
			}
			return byteSum(texts)
		}
		r := newRun(t, dir, newByteEnv(1, reward), smallConfig(), nil)
		defer r.close()
		m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
		if err != nil {
			return err
		}
		if m["episode/failed"] != 2 || r.tr.Updates() != 1 {
			t.Errorf("failed episodes %v, updates %d: want 2 and 1", m["episode/failed"], r.tr.Updates())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// gradsOf accumulates the gradient of one mini-batch of samples with the given micro-batch budget
// and checkpointing, and returns it by parameter (then drops it).
func gradsOf(t *testing.T, r *run, samples []*sample, budget int, ckpt bool) map[string][]float32 {
	t.Helper()
	r.tr.cfg.Update.MicroTokens, r.tr.cfg.Update.Checkpoint = budget, ckpt
	if err := r.tr.setWeights(samples); err != nil {
		t.Fatal(err)
	}
	acc := newStatAcc()
	defer acc.close()
	passes := 0
	for _, micro := range pack(samples, budget) {
		if err := r.tr.microStep(micro, true, model.ForwardOptions{}, acc); err != nil {
			t.Fatal(err)
		}
		passes++
	}
	g := map[string][]float32{}
	for _, p := range r.m.Parameters() {
		g[p.Name] = p.Tensor.Grad().ToDType(torch.Float32).Float32s()
	}
	torch.ZeroGrad(r.tr.params)
	t.Logf("budget %d checkpoint %v: %d passes", budget, ckpt, passes)
	return g
}

// The gradient of a mini-batch is the same computed three ways: all turns in one micro-batch (their
// shared chat-template prefix computed once), one micro-batch per turn (accumulated over eight
// passes, no shared prefix), and with layer-wise gradient checkpointing.
func TestGradientInvariants(t *testing.T) {
	dir := tinyDir(t, 6, nil)
	err := torch.Run(func() error {
		r := newRun(t, dir, newByteEnv(2, byteSum), smallConfig(), nil)
		defer r.close()
		m := Metrics{}
		trajs, err := r.tr.rollout(context.Background(), &sliceSource{tasks: sayTasks(4)}, m)
		if err != nil {
			return err
		}
		samples := samplesOf(trajs)
		if err := r.tr.credit(trajs, samples, m); err != nil {
			return err
		}
		one := gradsOf(t, r, samples, 1<<20, false)
		split := gradsOf(t, r, samples, 1, false)
		ckpt := gradsOf(t, r, samples, 1<<20, true)
		scale := 0.0
		for _, g := range one {
			for _, v := range g {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
		}
		tol := 1e-5 * scale
		if testDType == "bfloat16" {
			// .grad has the parameter's dtype: every one of the 16 accumulations rounds to bf16's
			// 8-bit mantissa (an ulp is 2^-8 of the value), so a few ulps of the largest gradient.
			tol = 5e-2 * scale
		}
		t.Logf("largest gradient %.3g; tolerance %.3g", scale, tol)
		if d, where := maxDiff(one, split); d > tol {
			t.Errorf("one micro-batch vs one per turn: gradients differ by %g at %s", d, where)
		}
		if d, where := maxDiff(one, ckpt); d > tol {
			t.Errorf("plain vs checkpointed: gradients differ by %g at %s", d, where)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// masters copies the weights the optimizer updates: the float32 master of a bf16 parameter (one
// small step may not move its rounded bf16 copy), the parameter itself otherwise.
func masters(r *run) map[string][]float32 {
	out := weights(r.m)
	st := r.tr.opt.State()
	for name := range out {
		if m, ok := st[name+".master"]; ok {
			out[name] = m.Float32s()
		}
	}
	return out
}

// stateValues copies an optimizer state's tensors as float64s.
func stateValues(st map[string]*torch.Tensor) map[string][]float64 {
	out := map[string][]float64{}
	for k, v := range st {
		out[k] = v.ToDType(torch.Float64).Float64s()
	}
	return out
}
