package grpo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/torch"
)

// batchData is a mini-batch of samples, one per row of a [rows, cols] layout, trained tokens
// first and padding (NaN in every input) after.
type batchData struct {
	rows, cols                 int
	lens                       []int
	lp, old, ref, roll, adv, h []float64
}

func newBatchData(lens []int, cols int, seed uint64) batchData {
	r := rand.New(rand.NewPCG(seed, 7))
	d := batchData{rows: len(lens), cols: cols, lens: lens}
	for _, n := range lens {
		a := 2*r.Float64() - 1
		for col := range cols {
			if col >= n {
				nan := math.NaN()
				d.lp, d.old, d.ref, d.roll = append(d.lp, nan), append(d.old, nan), append(d.ref, nan), append(d.roll, nan)
				d.adv, d.h = append(d.adv, nan), append(d.h, nan)
				continue
			}
			lp := -0.1 - 3*r.Float64()
			old := lp + 0.6*(r.Float64()-0.5)
			d.lp, d.old = append(d.lp, lp), append(d.old, old)
			d.ref = append(d.ref, lp+0.8*(r.Float64()-0.5))
			d.roll = append(d.roll, old+0.4*(r.Float64()-0.5))
			d.adv, d.h = append(d.adv, a), append(d.h, 0.5+2.5*r.Float64())
		}
	}
	return d
}

// inputs builds the loss inputs of rows [from, to) with per-sample weights w (one per row).
func (d batchData) inputs(from, to int, w []float64) LossInputs {
	n := int64(to - from)
	c := int64(d.cols)
	part := func(x []float64) []float64 { return x[from*d.cols : to*d.cols] }
	var mask, wt []float64
	var idx []int64
	for row := from; row < to; row++ {
		for col := range d.cols {
			m := 0.0
			if col < d.lens[row] {
				m = 1
			}
			mask = append(mask, m)
			wt = append(wt, m*w[row])
			idx = append(idx, int64(row-from))
		}
	}
	return LossInputs{
		LogProbs: leaf(part(d.lp), n, c), Old: tf(part(d.old), n, c), Ref: tf(part(d.ref), n, c),
		Rollout: tf(part(d.roll), n, c), Advantages: tf(part(d.adv), n, c), Entropy: leaf(part(d.h), n, c),
		Weights: tf(wt, n, c), Mask: tf(mask, n, c), Sample: ti(idx, n, c), Samples: n,
	}
}

// fullConfig turns every term on: PPO with dual clip, k3 KL, entropy, truncated IS.
func fullConfig(agg algo.AggConfig) LossConfig {
	c := DefaultLossConfig()
	c.DualClip, c.KLCoef, c.EntropyCoef = 3, 0.05, 0.01
	c.IS, c.ISMax = ISTokenTruncate, 1.1
	c.Agg = agg
	return c
}

// TestLossMicroBatchesAddUp: a mini-batch of four samples split into two micro-batches gives the
// unsplit loss, gradients and metrics, because the weights carry the mini-batch's counts.
func TestLossMicroBatchesAddUp(t *testing.T) {
	lens := []int{5, 2, 3, 1}
	d := newBatchData(lens, 5, 1)
	samples := []algo.AggSample{{Tokens: 5, Traj: 0}, {Tokens: 2, Traj: 0}, {Tokens: 3, Traj: 1}, {Tokens: 1, Traj: 2}}
	aggs := []algo.AggConfig{
		{Mode: algo.AggTokenMean, Turns: algo.TurnsAsSequences},
		{Mode: algo.AggSeqMeanTokenMean, Turns: algo.TurnsAsSequences},
		{Mode: algo.AggSeqMeanTokenMean, Turns: algo.TrajectoryAsSequence},
		{Mode: algo.AggSeqMeanTokenSumNorm, Turns: algo.TurnsAsSequences, Norm: 5},
	}
	for _, policy := range policyLosses {
		for _, agg := range aggs {
			name := string(policy) + "/" + string(agg.Mode) + "/" + string(agg.Turns)
			c := fullConfig(agg)
			c.Policy = policy
			w, err := algo.AggWeights(samples, agg)
			if err != nil {
				t.Fatal(err)
			}
			onTorch(t, func() {
				full := d.inputs(0, 4, w)
				loss, st, err := Loss(c, full)
				if err != nil {
					t.Error(err)
					return
				}
				a, b := d.inputs(0, 2, w), d.inputs(2, 4, w)
				la, sa, _ := Loss(c, a)
				lb, sb, _ := Loss(c, b)
				if got, want := la.Float()+lb.Float(), loss.Float(); !near(got, want, 1e-6) {
					t.Errorf("%s: micro-batch losses add to %.9g, unsplit %.9g", name, got, want)
				}
				expectSlice(t, name+": dloss/dℓ", append(grad(la, a.LogProbs), grad(lb, b.LogProbs)...), grad(loss, full.LogProbs), 1e-6)
				expectSlice(t, name+": dloss/dH", append(grad(la, a.Entropy), grad(lb, b.Entropy)...), grad(loss, full.Entropy), 1e-6)
				expectMetrics(t, name, sa.Add(sb).Metrics(1), st.Metrics(1), 1e-6)
				if agg.Mode != algo.AggTokenMean {
					return
				}
				// Token means taken per micro-batch (7 and 4 tokens) and averaged, as a trainer
				// without global counts would, differ from the mini-batch's token mean.
				wa, _ := algo.AggWeights(samples[:2], agg)
				wb, _ := algo.AggWeights(samples[2:], agg)
				na, _, _ := Loss(c, d.inputs(0, 2, wa))
				nb, _, _ := Loss(c, d.inputs(2, 4, append([]float64{0, 0}, wb...)))
				if naive := (na.Float() + nb.Float()) / 2; near(naive, loss.Float(), 1e-4) {
					t.Errorf("%s: per-micro-batch means %.6g equal the global mean %.6g: the case tests nothing", name, naive, loss.Float())
				}
			})
		}
	}
}

// TestLossAllMaskedSample: a sample with no trained token and NaN or Inf in every input changes
// nothing: same loss and metrics as without it, zero (finite) gradient on its tokens.
func TestLossAllMaskedSample(t *testing.T) {
	d := newBatchData([]int{4, 0}, 4, 2)
	for i := 4; i < 8; i++ {
		d.lp[i], d.old[i], d.h[i] = math.Inf(-1), math.Inf(1), math.Inf(1)
	}
	for _, policy := range policyLosses {
		c := fullConfig(algo.DefaultAggConfig())
		c.Policy, c.IS = policy, ISSeqTruncate
		w := []float64{0.25, math.NaN()}
		onTorch(t, func() {
			both := d.inputs(0, 2, w)
			one := d.inputs(0, 1, w)
			l2, s2, err := Loss(c, both)
			if err != nil {
				t.Error(err)
				return
			}
			l1, s1, _ := Loss(c, one)
			if !near(l2.Float(), l1.Float(), 1e-7) || math.IsNaN(l2.Float()) {
				t.Errorf("%s: loss %v with the masked sample, %v without", policy, l2.Float(), l1.Float())
			}
			g := grad(l2, both.LogProbs)
			expectSlice(t, string(policy)+": dloss/dℓ", g, append(grad(l1, one.LogProbs), 0, 0, 0, 0), 1e-7)
			expectSlice(t, string(policy)+": dloss/dH", grad(l2, both.Entropy)[4:], []float64{0, 0, 0, 0}, 0)
			expectMetrics(t, string(policy), s2.Metrics(1), s1.Metrics(1), 1e-7)
		})
	}
}

// TestLossBFloat16Inputs: bf16 inputs are computed in float32, so they give the float32 result
// for the same values; the gradient comes back in bf16 (3 significant digits).
func TestLossBFloat16Inputs(t *testing.T) {
	onTorch(t, func() {
		in := ppoCase()
		bf := func(x *torch.Tensor) *torch.Tensor { return x.Detach().ToDType(torch.BFloat16) }
		asF32 := func(x *torch.Tensor) *torch.Tensor { return x.ToDType(torch.Float32) }
		b := LossInputs{
			LogProbs: bf(in.LogProbs).SetRequiresGrad(true), Old: bf(in.Old),
			Advantages: bf(in.Advantages), Weights: bf(in.Weights), Mask: in.Mask,
		}
		f := LossInputs{
			LogProbs: asF32(b.LogProbs).Detach().SetRequiresGrad(true), Old: asF32(b.Old),
			Advantages: asF32(b.Advantages), Weights: asF32(b.Weights), Mask: in.Mask,
		}
		c := DefaultLossConfig()
		c.DualClip = 3
		lb, sb, err := Loss(c, b)
		if err != nil {
			t.Error(err)
			return
		}
		lf, sf, _ := Loss(c, f)
		if lb.DType() != torch.Float32 || !near(lb.Float(), lf.Float(), 1e-6) {
			t.Errorf("bf16 loss %v (%v), float32 %v", lb.Float(), lb.DType(), lf.Float())
		}
		gb, gf := grad(lb, b.LogProbs), grad(lf, f.LogProbs)
		for i := range gf {
			if !near(gb[i], gf[i], 1e-2*math.Abs(gf[i])+1e-6) {
				t.Errorf("dloss/dℓ[%d]: bf16 %v, float32 %v", i, gb[i], gf[i])
			}
		}
		expectMetrics(t, "bf16", sb.Metrics(1), sf.Metrics(1), 1e-6)
	})
}

func TestStatsAdd(t *testing.T) {
	onTorch(t, func() {
		_, a, _ := Loss(DefaultLossConfig(), isCase())
		var zero Stats
		expectMetrics(t, "zero+a", zero.Add(a).Metrics(1), a.Metrics(1), 0)
		// Sums double, maxima stay, rates stay; pg_loss over 2 updates is the mean per update.
		want := a.Metrics(1)
		delete(want, "actor/loss_tokens")
		expectMetrics(t, "a+a", a.Add(a).Metrics(2), want, 1e-12)
		if got := a.Add(a).Metrics(1)["actor/loss_tokens"]; got != 8 {
			t.Errorf("loss_tokens of a+a = %v, want 8", got)
		}
		if len(zero.Metrics(1)) != 0 {
			t.Errorf("zero Stats has metrics %v", zero.Metrics(1))
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("adding value stats to policy stats did not panic")
				}
			}()
			_, v, _ := ValueLoss(0.5, ValueInputs{Values: tf([]float64{1}, 1), Returns: tf([]float64{1}, 1),
				Weights: tf([]float64{1}, 1), Mask: tf([]float64{1}, 1)})
			a.Add(v)
		}()
	})
}
