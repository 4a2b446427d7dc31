package rollout

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// refDist is the distribution a Sampling setting samples from, written directly in float64 from
// the definitions (transformers' order: temperature, top-k, top-p on the renormalised top-k
// distribution, min-p relative to the most likely token).
func refDist(p []float64, s Sampling) []float64 {
	T := s.temperature()
	q := make([]float64, len(p))
	sum := 0.0
	for i := range p {
		q[i] = math.Pow(p[i], 1/T)
		sum += q[i]
	}
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
		q[i] /= sum
	}
	sort.SliceStable(order, func(a, b int) bool { return q[order[a]] > q[order[b]] })
	keep := make([]bool, len(p))
	massK := 0.0
	for _, i := range order {
		keep[i] = s.TopK == 0 || s.TopK >= len(p) || q[i] >= q[order[s.TopK-1]] // ties with the k-th stay
		if keep[i] {
			massK += q[i]
		}
	}
	before := 0.0
	for _, i := range order {
		if keep[i] && s.TopP > 0 && s.TopP < 1 && before >= s.TopP*massK {
			keep[i] = false
		}
		if keep[i] {
			before += q[i]
		}
		if q[i] < s.MinP*q[order[0]] {
			keep[i] = false
		}
	}
	out := make([]float64, len(p))
	tot := 0.0
	for i := range q {
		if keep[i] {
			out[i] = q[i]
			tot += q[i]
		}
	}
	for i := range out {
		out[i] /= tot
	}
	return out
}

// Empirical frequencies of 40,000 draws per setting match the distribution each setting defines.
// All settings run as rows of one batch, so per-row parameters are exercised together.
//
// Bound: a bin's count c ~ Binomial(N, q). The test requires |c − Nq| ≤ 6·sqrt(Nq(1−q)); for
// Nq(1−q) ≥ 100 the normal approximation gives P(fail) ≈ 2e-9 per bin, and over the 7 settings ×
// 6 bins (union bound) below 1e-7. Bins with q = 0 must be empty. The draws are seeded, so the
// test is deterministic; the bound says a correct sampler fails it for at most 1 seed in 10^7.
//
// Hand-worked targets, p = [.4 .25 .15 .1 .06 .04]: top_k 3 → [.4 .25 .15]/.8 = [.5 .3125 .1875];
// top_p .6 → mass before each sorted token 0, .4, .65: keep two → [.4 .25]/.65 = [.6154 .3846];
// min_p .2 → keep p ≥ .08: four tokens /.9; T .5 → p² / Σp² = [.6149 .2402 .0865 .0384 .0138 .0061].
func TestSamplingFrequencies(t *testing.T) {
	p := []float64{0.4, 0.25, 0.15, 0.1, 0.06, 0.04}
	settings := []Sampling{
		{},
		{Temperature: 0.5},
		{TopK: 3},
		{TopP: 0.6},
		{MinP: 0.2},
		{Temperature: 2, TopK: 5, MinP: 0.45},
		{Temperature: 0.7, TopK: 4, TopP: 0.9},
	}
	hand := map[int][]float64{2: {.5, .3125, .1875, 0, 0, 0}, 3: {.4 / .65, .25 / .65, 0, 0, 0, 0},
		4: {.4 / .9, .25 / .9, .15 / .9, .1 / .9, 0, 0}}
	for i, want := range hand {
		for j, v := range refDist(p, settings[i]) {
			if !near(v, want[j], 1e-12) {
				t.Fatalf("reference of setting %d: %v, hand-worked %v", i, refDist(p, settings[i]), want)
			}
		}
	}
	const N = 40000
	V := len(p)
	row := make([]float32, V)
	for i := range p {
		row[i] = float32(math.Log(p[i]))
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var logits []float32
	var draws []draw
	for k := range settings {
		for range N {
			logits = append(logits, row...)
			draws = append(draws, draw{s: &settings[k], u: rng.Float64()})
		}
	}
	onTorch(t, func() error {
		got := sampleRows(torch.FromSlice(logits, int64(len(draws)), int64(V)), draws)
		for k, s := range settings {
			want := refDist(p, s)
			tempered := refDist(p, Sampling{Temperature: s.Temperature})
			counts := make([]int, V)
			for _, d := range got[k*N : (k+1)*N] {
				counts[d.id]++
				if !near(float64(d.logProb), math.Log(want[d.id]), 2e-5) ||
					!near(float64(d.temperedLogProb), math.Log(tempered[d.id]), 2e-5) {
					t.Errorf("setting %d token %d: log-probs %g %g, want %g %g", k, d.id, d.logProb, d.temperedLogProb,
						math.Log(want[d.id]), math.Log(tempered[d.id]))
					break
				}
			}
			for j, q := range want {
				mean, sd := N*q, math.Sqrt(N*q*(1-q))
				if q == 0 && counts[j] != 0 || math.Abs(float64(counts[j])-mean) > 6*sd {
					t.Errorf("setting %+v: token %d drawn %d times, expected %.1f ± %.1f (6 sd)", s, j, counts[j], mean, 6*sd)
				}
			}
		}
		return nil
	})
}

// Greedy rows in a batch with sampled rows take the argmax, with log-prob 0 under the (point
// mass) sampled distribution and log p at temperature 1; u near 1 never picks a truncated token.
func TestSamplingGreedyRowsAndEdges(t *testing.T) {
	p := []float64{0.1, 0.6, 0.3}
	row := make([]float32, 3)
	for i := range p {
		row[i] = float32(math.Log(p[i]))
	}
	g := Sampling{Greedy: true, Temperature: 5}
	k1 := Sampling{TopK: 2}
	plain := Sampling{}
	draws := []draw{{&g, 0.99}, {&k1, 0.999999999}, {&plain, 0}, {&plain, 0.999999999}}
	var logits []float32
	for range draws {
		logits = append(logits, row...)
	}
	onTorch(t, func() error {
		got := sampleRows(torch.FromSlice(logits, int64(len(draws)), 3), draws)
		// Greedy: token 1, log-prob 0, tempered log-prob log .6 (temperature 1 for greedy rows).
		if d := got[0]; d.id != 1 || d.logProb != 0 || !near(float64(d.temperedLogProb), math.Log(0.6), 1e-6) {
			t.Errorf("greedy row: %+v", d)
		}
		// top_k 2 keeps tokens 1 and 2 (sorted order .6, .3); u → 1 takes the last kept: token 2,
		// log(.3/.9).
		if d := got[1]; d.id != 2 || !near(float64(d.logProb), math.Log(0.3/0.9), 1e-5) {
			t.Errorf("top-k row with u→1: %+v", d)
		}
		// In a batch that sorts (row 1 needs it), the inverse CDF runs over the sorted order
		// .6, .3, .1: u = 0 takes token 1, u → 1 token 0.
		if got[2].id != 1 || got[3].id != 0 {
			t.Errorf("sorted batch: u=0 gave %d, u→1 gave %d; want 1 and 0", got[2].id, got[3].id)
		}
		// Without top-k/top-p the vocabulary order is kept: u = 0 takes token 0, u → 1 token 2.
		got = sampleRows(torch.FromSlice(logits[:6], 2, 3), draws[2:])
		if got[0].id != 0 || got[1].id != 2 {
			t.Errorf("unsorted batch: u=0 gave %d, u→1 gave %d; want 0 and 2", got[0].id, got[1].id)
		}
		return nil
	})
}

// Top-k keeps the tokens tied with the k-th, as transformers and vLLM do. p = [.1 .3 .2 .2 .2]:
// top_k 2 keeps the .3 and all three .2s, mass .9; the inverse CDF over the sorted kept mass
// .3, .5, .7, .9 with u = .95 (.855 of .9) takes the last .2: log-prob log(.2/.9). Keeping exactly
// two tokens would give log(.2/.5) and never draw the other two .2s.
func TestSamplingTopKKeepsTies(t *testing.T) {
	p := []float64{0.1, 0.3, 0.2, 0.2, 0.2}
	row := make([]float32, len(p))
	for i := range p {
		row[i] = float32(math.Log(p[i]))
	}
	if want := []float64{0, .3 / .9, .2 / .9, .2 / .9, .2 / .9}; !nearAll(refDist(p, Sampling{TopK: 2}), want, 1e-12) {
		t.Fatalf("reference: %v, want %v", refDist(p, Sampling{TopK: 2}), want)
	}
	k2 := Sampling{TopK: 2}
	onTorch(t, func() error {
		got := sampleRows(torch.FromSlice(append(append([]float32(nil), row...), row...), 2, 5), []draw{{&k2, 0.95}, {&k2, 0.1}})
		if d := got[0]; d.id < 2 || !near(float64(d.logProb), math.Log(0.2/0.9), 1e-5) {
			t.Errorf("u = .95: %+v, want one of the tied .2s with log-prob log(.2/.9)", d)
		}
		if d := got[1]; d.id != 1 || !near(float64(d.logProb), math.Log(0.3/0.9), 1e-5) {
			t.Errorf("u = .1: %+v, want token 1 with log-prob log(.3/.9)", d)
		}
		return nil
	})
}

func nearAll(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i], tol) {
			return false
		}
	}
	return true
}

// Rows whose logits define no distribution are flagged, on every path of the sampler: a NaN or
// +Inf logit makes log-sum-exp (greedy) and the kept mass (sampling) NaN or infinite, as do logits
// that are all −Inf; a row with some −Inf logits (masked tokens) is a distribution and stays
// finite: p = softmax([0, ln 2, −Inf]) = [1/3, 2/3, 0].
func TestSamplingFlagsNonFiniteRows(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	rows := [][]float32{{0, 1, 2}, {0, nan, 2}, {0, inf, 2}, {-inf, -inf, -inf}, {0, float32(math.Ln2), -inf}}
	want := []bool{true, false, false, false, true}
	var logits []float32
	for _, r := range rows {
		logits = append(logits, r...)
	}
	for _, s := range []Sampling{{Greedy: true}, {}, {TopK: 2}, {TopP: 0.9}, {MinP: 0.1}} {
		draws := make([]draw, len(rows))
		for i := range draws {
			draws[i] = draw{s: &s, u: 0.5}
		}
		onTorch(t, func() error {
			got := sampleRows(torch.FromSlice(logits, int64(len(rows)), 3), draws)
			for i, d := range got {
				if d.finite != want[i] {
					t.Errorf("%+v row %v: finite %v, want %v", s, rows[i], d.finite, want[i])
				}
			}
			// The masked row samples from [1/3, 2/3, 0]: never token 2.
			if d := got[4]; d.id == 2 || math.IsNaN(float64(d.temperedLogProb)) {
				t.Errorf("%+v masked row: %+v", s, d)
			}
			return nil
		})
	}
}
