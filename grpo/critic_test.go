package grpo

import (
	"math"
	"slices"
	"testing"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// The value of a trained token is read from the hidden state of the token before it, in a packed
// batch with a shared prefix too, and GAE gets those values with the returns at the same tokens.
//
// Sequences [5 6 7 8] and [5 6 7 9 10], scored from token 3, share the prefix [5 6]: the layout
// is [5 6 | 7 8 | 7 9 10], columns 0–6. A one-wide hidden state h = column+1 and the head
// V = 2·h + 1 give the raw values 3 5 7 9 11 13 15 by column. Token 3 of sequence 0 (8, column 3)
// is predicted at column 2: V = 7. Tokens 3 and 4 of sequence 1 (9 at column 5, 10 at column 6)
// are predicted at columns 4 and 5: V = 11 and 13. GAE (γ = λ = 1) with reward 1 on the last
// token: returns 1 at every trained token, raw advantages 1 − V.
func TestCriticValueAlignment(t *testing.T) {
	seqs := [][]int32{{5, 6, 7, 8}, {5, 6, 7, 9, 10}}
	b, err := model.NewSharedBatch(seqs, 2)
	if err != nil {
		t.Fatal(err)
	}
	b.ScoreFrom = []int{3, 3}
	var vals [][]float32
	onTorch(t, func() {
		c := &Critic{Head: tf([]float64{2}, 1, 1), Bias: tf([]float64{1}, 1)}
		h := tf([]float64{1, 2, 3, 4, 5, 6, 7}, 1, 7, 1)
		if vals, err = b.Values(c.valuesOf(h)); err != nil {
			t.Error(err)
		}
	})
	if vals == nil {
		return
	}
	masks := [][]bool{{false, false, false, true}, {false, false, false, true, true}}
	want := [][]float64{{7}, {11, 13}}
	var in [][]algo.GAETurn
	for i, s := range seqs {
		smp := &sample{Sample: rollout.Sample{IDs: s, Mask: masks[i]}, values: vals[i]}
		got := smp.trainedValues(smp.values)
		expectSlice(t, "trained values", got, want[i], 1e-6)
		in = append(in, []algo.GAETurn{{Values: got, Reward: 1}})
	}
	// Unwhitened advantages are the returns less the values; the returns are 1 everywhere.
	_, ret, err := algo.GAE(in, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	expectSlice(t, "returns of sequence 0", ret[0][0], []float64{1}, 1e-9)
	expectSlice(t, "returns of sequence 1", ret[1][0], []float64{1, 1}, 1e-9)
}

func TestExplainedVarianceHandWorked(t *testing.T) {
	// R = 0 2 4 (variance 4). V = 0 1 2: R − V = 0 1 2 (variance 1), 1 − 1/(4 + 1e-5).
	// A constant V explains nothing; V = R explains all; one token is too few.
	r := []float64{0, 2, 4}
	for _, c := range []struct {
		v    []float64
		want float64
	}{{[]float64{0, 1, 2}, 1 - 1/(4+1e-5)}, {[]float64{5, 5, 5}, 1 - 4/(4+1e-5)}, {r, 1}} {
		if got := ExplainedVariance(c.v, r); !near(got, c.want, 1e-12) {
			t.Errorf("ExplainedVariance(%v, %v) = %v, want %v", c.v, r, got, c.want)
		}
	}
	if got := ExplainedVariance([]float64{1}, []float64{2}); !math.IsNaN(got) {
		t.Errorf("one token: %v, want NaN", got)
	}
}

// fixedReturnSamples are n one-turn samples whose return is set by their context: context
// [1 2 3 20+k], output [5 6 7 8 9 10] (all trained), return k mod 4 on every output token:
// returns of 0 to 3 like a multi-turn task's summed turn rewards, each predictable from the state.
func fixedReturnSamples(n int) []*sample {
	out := make([]*sample, n)
	for k := range out {
		ids := []int32{1, 2, 3, int32(20 + k), 5, 6, 7, 8, 9, 10}
		mask := make([]bool, len(ids))
		ret := make([]float32, len(ids))
		for i := 4; i < len(ids); i++ {
			mask[i], ret[i] = true, float32(k%4)
		}
		out[k] = &sample{Sample: rollout.Sample{IDs: ids, ScoreFrom: 4, Mask: mask, LogProbs: make([]float32, len(ids))},
			traj: k, trained: len(ids) - 4, returns: ret}
	}
	return out
}

// fitCritic trains a fresh critic (a zero value head on the tiny model) for updates steps on
// fixedReturnSamples(8) and returns critic/vf_explained_var and critic/values/mean before each
// update and after the last.
func fitCritic(t *testing.T, cfg Config, updates int) (ev, vmean []float64) {
	t.Helper()
	dir := tinyDir(t, 3, nil)
	cfg.Advantage.Estimator = algo.EstGAE
	err := torch.Run(func() error {
		cm := loadModel(t, dir)
		defer cm.Close()
		critic, err := NewCritic(cm)
		if err != nil {
			return err
		}
		defer critic.Close()
		r := newRun(t, dir, newByteEnv(1, byteSum), cfg, func(ms *Models) { ms.Critic = critic })
		defer r.close()
		samples := fixedReturnSamples(8)
		for i := 0; i <= updates; i++ {
			if err := critic.values(samples, cfg.Update.MicroTokens); err != nil {
				return err
			}
			m := Metrics{}
			if i == updates {
				criticStats(samples, m)
			} else if err := r.tr.updateCritic(samples, m); err != nil {
				return err
			}
			ev, vmean = append(ev, m["critic/vf_explained_var"]), append(vmean, m["critic/values/mean"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ev, vmean
}

// The critic learns returns it can predict. With the default critic learning rate beside a small
// model's actor rate (1e-4, so 1e-3) the values start at the returns' mean (1.5) after the first
// update and explain most of their variance within 30 updates. At verl's fixed 1e-5 they explain
// none: AdamW moves the value head's 64 weights by about 1e-5 each per update.
func TestCriticFitsReturns(t *testing.T) {
	cfg := smallConfig()
	cfg.Optim.LR = 1e-4
	ev, vm := fitCritic(t, cfg, 30)
	if !near(vm[1], 1.5, 0.05) {
		t.Errorf("values mean after the first update %.3f, want the mean return 1.5", vm[1])
	}
	if best := slices.Max(ev[len(ev)-5:]); !(best > 0.8) {
		t.Errorf("explained variance over 30 updates %.3f: want > 0.8 at the end", ev)
	}
	cfg.Critic.LR = 1e-5
	if ev, _ = fitCritic(t, cfg, 30); !(ev[len(ev)-1] < 0.05) {
		t.Errorf("at lr 1e-5 the explained variance reached %.3f in 30 updates: want < 0.05", ev[len(ev)-1])
	}
}

// criticStats reports verl's critic health metrics over the trained tokens of the samples that
// have values and returns, the others left out.
//
//	sample 0: mask 0 1 1 0, values 9 1 2 9, returns 9 1 3 9 → trained values 1 2, returns 1 3
//	sample 1: mask 1 1,     values 0 3,     returns 2 2     → trained values 0 3, returns 2 2
//	sample 2: no values (not scored by the critic)          → left out
//
// Values 1 2 0 3: mean 1.5, max 3, min 0. Returns 1 3 2 2: mean 2, max 3, min 1, unbiased variance
// (1 + 1 + 0 + 0)/3 = 2/3. R − V = 0 1 2 −1: mean 0.5, variance (0.25 + 0.25 + 2.25 + 2.25)/3 = 5/3.
// Explained variance 1 − (5/3)/(2/3 + 1e-5): about −1.5, the errors vary more than the returns.
func TestCriticStatsHandWorked(t *testing.T) {
	mk := func(mask []bool, values, returns []float32) *sample {
		return &sample{Sample: rollout.Sample{IDs: make([]int32, len(mask)), Mask: mask}, values: values, returns: returns}
	}
	samples := []*sample{
		mk([]bool{false, true, true, false}, []float32{9, 1, 2, 9}, []float32{9, 1, 3, 9}),
		mk([]bool{true, true}, []float32{0, 3}, []float32{2, 2}),
		mk([]bool{true}, nil, []float32{5}),
	}
	m := Metrics{}
	criticStats(samples, m)
	expectMetrics(t, "critic stats", m, map[string]float64{
		"critic/values/mean": 1.5, "critic/values/max": 3, "critic/values/min": 0,
		"critic/returns/mean": 2, "critic/returns/max": 3, "critic/returns/min": 1,
		"critic/vf_explained_var": 1 - (5./3)/(2./3+1e-5),
	}, 1e-9)
	if len(m) != 7 {
		t.Errorf("metrics %v: want the 7 above only", m.Names())
	}
}
