package grpo

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// loadModel loads dir's model as a second network (reference, critic).
func loadModel(t *testing.T, dir string) *model.Model {
	t.Helper()
	m, err := model.Load(dir, model.Options{DType: testDType})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// PPO with bi-level GAE: the critic learns from the first step; during its warmup the actor is
// left alone, after it both move.
func TestPPOWithCritic(t *testing.T) {
	dir := tinyDir(t, 8, nil)
	err := torch.Run(func() error {
		cm := loadModel(t, dir)
		defer cm.Close()
		critic, err := NewCritic(cm)
		if err != nil {
			return err
		}
		defer critic.Close()
		cfg := smallConfig()
		cfg.Advantage.Estimator = algo.EstGAE
		cfg.Advantage.GAE.BiLevel = true
		cfg.Critic.Warmup = 1
		cfg.Critic.LR = 1e-3
		r := newRun(t, dir, newByteEnv(2, byteSum), cfg, func(ms *Models) { ms.Critic = critic })
		defer r.close()
		actor0, head0 := weights(r.m), critic.Head.Float32s()
		m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
		if err != nil {
			return err
		}
		if d, _ := maxDiff(actor0, weights(r.m)); d != 0 {
			t.Errorf("the actor moved by %g during the critic's warmup", d)
		}
		if slices.Equal(head0, critic.Head.Float32s()) {
			t.Error("the value head did not change")
		}
		for _, k := range []string{"critic/vf_loss", "critic/vf_clipfrac", "critic/vpred_mean", "timing_s/values", "timing_s/update_critic"} {
			if _, ok := m[k]; !ok {
				t.Errorf("metric %s missing", k)
			}
		}
		if _, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)}); err != nil {
			return err
		}
		if d, _ := maxDiff(actor0, weights(r.m)); d == 0 {
			t.Error("the actor did not move after the critic's warmup")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// KL to the reference: zero on the first step (the policy is the reference), positive once the
// policy has moved; the reference itself never changes.
func TestKLToReference(t *testing.T) {
	dir := tinyDir(t, 9, nil)
	err := torch.Run(func() error {
		ref := loadModel(t, dir)
		defer ref.Close()
		cfg := smallConfig()
		cfg.Loss.KLCoef = 0.1
		cfg.Reward.KLCoef = 0.05
		r := newRun(t, dir, newByteEnv(1, byteSum), cfg, func(ms *Models) { ms.Reference = ref })
		defer r.close()
		ref0 := weights(ref)
		var kls []float64
		for range 3 {
			m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
			if err != nil {
				return err
			}
			kls = append(kls, m["actor/kl_loss"])
		}
		if math.Abs(kls[0]) > 1e-6 || !(kls[2] > 1e-6) {
			t.Errorf("actor/kl_loss over steps %v: want ~0 first, > 0 later", kls)
		}
		if d, _ := maxDiff(ref0, weights(ref)); d != 0 {
			t.Errorf("the reference moved by %g", d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Several epochs and mini-batches: one optimizer step per mini-batch and epoch, ℓ_old computed
// before the first, so the later ones see a ratio ≠ 1 (ppo_kl ≠ 0).
func TestEpochsAndMiniBatches(t *testing.T) {
	dir := tinyDir(t, 10, nil)
	err := torch.Run(func() error {
		cfg := smallConfig()
		cfg.Update.Epochs, cfg.Update.MiniBatches = 2, 2
		r := newRun(t, dir, newByteEnv(2, byteSum), cfg, nil)
		defer r.close()
		m, _, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(4)})
		if err != nil {
			return err
		}
		if r.tr.Updates() != 4 {
			t.Errorf("%d optimizer steps, want 4", r.tr.Updates())
		}
		if _, ok := m["timing_s/old_log_prob"]; !ok {
			t.Error("no old log-prob pass")
		}
		if m["actor/ppo_kl"] == 0 {
			t.Error("actor/ppo_kl is 0: later mini-batches did not see the updated policy")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// MT-GRPO gives the turns up to the first tool result Â^out + c·Â^turn and later turns Â^out, so
// the two turns of a trajectory get different advantages; trajectory-level GRPO gives them one.
func TestMTGRPOTurnCredit(t *testing.T) {
	dir := tinyDir(t, 11, nil)
	err := torch.Run(func() error {
		for _, est := range []algo.Estimator{algo.EstMTGRPO, algo.EstGRPO} {
			cfg := smallConfig()
			cfg.Advantage.Estimator = est
			r := newRun(t, dir, newByteEnv(2, byteSum), cfg, nil)
			m := Metrics{}
			trajs, err := r.tr.rollout(context.Background(), &sliceSource{tasks: sayTasks(4)}, m)
			if err != nil {
				return err
			}
			samples := samplesOf(trajs)
			if err := r.tr.credit(trajs, samples, m); err != nil {
				return err
			}
			differ := 0
			first := map[int]float32{}
			for _, s := range samples {
				a := s.adv[len(s.adv)-1]
				if s.turn == 0 {
					first[s.traj] = a
				} else if a != first[s.traj] {
					differ++
				}
			}
			if est == algo.EstMTGRPO && differ == 0 {
				t.Error("mt_grpo: every trajectory's turns got the same advantage")
			}
			if est == algo.EstGRPO && differ != 0 {
				t.Errorf("grpo: %d trajectories' turns got different advantages", differ)
			}
			r.close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Dynamic sampling drops the groups whose rewards are all equal and draws more tasks until the
// step has its groups with signal.
func TestDynamicSampling(t *testing.T) {
	dir := tinyDir(t, 12, nil)
	err := torch.Run(func() error {
		// Tasks with an odd ID always score 0.5: no signal.
		e := newByteEnv(1, byteSum)
		inner := e.New
		e.New = func() env.Env { return &oddFlat{Env: inner()} }
		cfg := smallConfig()
		cfg.DAPO.DynamicSampling, cfg.DAPO.MaxGenBatches = true, 4
		r := newRun(t, dir, e, cfg, nil)
		defer r.close()
		m, trajs, err := r.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(8)})
		if err != nil {
			return err
		}
		groups := map[int]bool{}
		for _, tr := range trajs {
			if strings.HasSuffix(tr.Task.ID, "1") || strings.HasSuffix(tr.Task.ID, "3") {
				t.Errorf("a group of flat task %s was kept", tr.Task.ID)
			}
			groups[tr.Group] = true
		}
		if len(groups) != cfg.Rollout.Tasks || m["dapo/gen_rounds"] != 1.5 || m["frac_reward_zero_std"] != 0.5 {
			t.Errorf("%d groups, gen rounds %v, frac_reward_zero_std %v: want 2, 1.5, 0.5",
				len(groups), m["dapo/gen_rounds"], m["frac_reward_zero_std"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// oddFlat gives tasks with an odd ID a constant reward.
type oddFlat struct {
	env.Env
	task env.Task
}

func (o *oddFlat) Reset(ctx context.Context, t env.Task) (env.Start, error) {
	o.task = t
	return o.Env.Reset(ctx, t)
}

func (o *oddFlat) Rubric() *env.Rubric {
	r := *o.Env.Rubric()
	if id := o.task.ID; strings.ContainsAny(id[len(id)-1:], "13579") {
		r.Funcs = []env.RewardFunc{{Name: "bytes", Weight: 1, Fn: func(*env.Trajectory) float64 { return 0.5 }}}
	}
	return &r
}

// SFT on demonstrations lowers their cross-entropy.
func TestSFTLowersLoss(t *testing.T) {
	dir := tinyDir(t, 13, nil)
	err := torch.Run(func() error {
		cfg := smallConfig()
		cfg.Optim.LR = 3e-3
		r := newRun(t, dir, newByteEnv(2, byteSum), cfg, nil)
		defer r.close()
		g := &rollout.Scripted{Tok: r.tok, EOS: int32(r.tok.EOSIDs()[0]),
			Policy: func(string, int) (string, rollout.FinishReason) { return "hello there", "" }}
		d, err := rollout.NewDriver(g, r.tok, rollout.DriverConfig{})
		if err != nil {
			return err
		}
		e := newByteEnv(2, byteSum)
		var eps []rollout.Episode
		for i, task := range sayTasks(4) {
			eps = append(eps, rollout.Episode{Env: e.New(), Task: task, Group: i})
		}
		demos, _, err := d.Run(context.Background(), eps)
		if err != nil {
			return err
		}
		var losses []float64
		for range 15 {
			m, err := r.tr.SFT(demos)
			if err != nil {
				return err
			}
			losses = append(losses, m["sft/loss"])
		}
		if !(losses[14] < 0.5*losses[0]) {
			t.Errorf("sft loss %v: want the last below half the first", losses)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Rollout.GroupSize = 0 }, "rollout.group"},
		{func(c *Config) { c.Update.MiniBatches = 1000 }, "update.mini_batches"},
		{func(c *Config) { c.Update.HeadMemoryBudget = -2 }, "update.head_memory_budget"},
		{func(c *Config) { c.Optim.Schedule = "linear-ish" }, "linear-ish"},
		{func(c *Config) { c.Advantage.Estimator = "ppo-ish" }, "ppo-ish"},
		{func(c *Config) { c.Loss.Agg.Mode = "mean-ish" }, "mean-ish"},
		{func(c *Config) { c.Loss.ClipLow = 2 }, "loss.clip_low"},
		{func(c *Config) { c.Optim.LR = math.NaN() }, "optim.lr"},
		{func(c *Config) { c.Reward.KLCoef = -1 }, "reward.kl_coef"},
		{func(c *Config) { c.DAPO.OverlongLen = 10000 }, "overlong"},
		{func(c *Config) { c.Rollout.Sampling.TopP = 0 }, "rollout.top_p: 0: must be in (0, 1]"},
		{func(c *Config) { c.Rollout.MaxLen = 512 }, "rollout.max_len: 512 tokens per sequence leave no room for a context before 512 new tokens"},
		{func(c *Config) { c.Rollout.Tasks, c.Rollout.GroupSize = 1<<19, 4 }, "rollout.group: rollout.tasks 524288 × rollout.group 4"},
		{func(c *Config) { c.Advantage.GAE.BiLevel = true }, "advantage.bi_level"},
	} {
		cfg := Defaults()
		c.mutate(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error mentioning %q, got %v", c.want, err)
		}
	}
	d := Defaults()
	if err := d.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
