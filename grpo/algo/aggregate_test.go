package algo

import (
	"testing"
)

// aggSamples: trajectory 0 has turns of 2 and 3 trained tokens, trajectory 1 turns of 0 and 5,
// trajectory 2 one turn of 4. N = 14 trained tokens; 4 turns with tokens; 3 trajectories of 5, 5
// and 4 tokens.
var aggSamples = []AggSample{{2, 0}, {3, 0}, {0, 1}, {5, 1}, {4, 2}}

func TestWeightsHandWorked(t *testing.T) {
	cases := []struct {
		c    AggConfig
		want []float64
	}{
		// token-mean: 1/N whatever the turn weighting.
		{AggConfig{Mode: AggTokenMean, Turns: TurnsAsSequences}, []float64{1. / 14, 1. / 14, 0, 1. / 14, 1. / 14}},
		{AggConfig{Mode: AggTokenMean, Turns: TrajectoryAsSequence}, []float64{1. / 14, 1. / 14, 0, 1. / 14, 1. / 14}},
		// Turns as sequences: K = 4 (the empty turn does not count).
		{AggConfig{Mode: AggSeqMeanTokenSum, Turns: TurnsAsSequences}, []float64{0.25, 0.25, 0, 0.25, 0.25}},
		{AggConfig{Mode: AggSeqMeanTokenMean, Turns: TurnsAsSequences}, []float64{1. / 8, 1. / 12, 0, 1. / 20, 1. / 16}},
		{AggConfig{Mode: AggSeqMeanTokenSumNorm, Turns: TurnsAsSequences, Norm: 10}, []float64{1. / 40, 1. / 40, 0, 1. / 40, 1. / 40}},
		// Trajectories as sequences: K = 3 of 5, 5 and 4 tokens.
		{AggConfig{Mode: AggSeqMeanTokenSum, Turns: TrajectoryAsSequence}, []float64{1. / 3, 1. / 3, 0, 1. / 3, 1. / 3}},
		{AggConfig{Mode: AggSeqMeanTokenMean, Turns: TrajectoryAsSequence}, []float64{1. / 15, 1. / 15, 0, 1. / 15, 1. / 12}},
		{AggConfig{Mode: AggSeqMeanTokenSumNorm, Turns: TrajectoryAsSequence, Norm: 10}, []float64{1. / 30, 1. / 30, 0, 1. / 30, 1. / 30}},
	}
	for _, tc := range cases {
		w, err := AggWeights(aggSamples, tc.c)
		if err != nil {
			t.Fatalf("%+v: %v", tc.c, err)
		}
		expectSlice(t, string(tc.c.Mode)+"/"+string(tc.c.Turns), w, tc.want, 1e-15)
	}
}

// TestWeightsMatchDefinitions checks Σ w·L against each mode's definition written out over
// per-token losses, for one mini-batch, and that any split of the samples adds up to it.
func TestWeightsMatchDefinitions(t *testing.T) {
	// Per-token losses of each sample (lengths as in aggSamples).
	L := [][]float64{{1, -2}, {0.5, 3, -1}, {}, {2, 2, -4, 1, 0.25}, {-1, 6, 0.5, 0.5}}
	seqSum := func(ls ...[]float64) (s float64) {
		for _, l := range ls {
			for _, x := range l {
				s += x
			}
		}
		return s
	}
	// Turns as sequences: sums per turn 1-2 = −1, 2.5, 1.25, 6 (4 turns with tokens, N = 14).
	// Trajectories: 1.5 (5 tokens), 1.25 (5 tokens), 6 (4 tokens).
	defs := map[AggConfig]float64{
		{Mode: AggTokenMean, Turns: TurnsAsSequences}:                    seqSum(L...) / 14,
		{Mode: AggSeqMeanTokenSum, Turns: TurnsAsSequences}:              (-1 + 2.5 + 1.25 + 6) / 4,
		{Mode: AggSeqMeanTokenMean, Turns: TurnsAsSequences}:             (-1./2 + 2.5/3 + 1.25/5 + 6./4) / 4,
		{Mode: AggSeqMeanTokenSumNorm, Turns: TurnsAsSequences, Norm: 8}: (-1 + 2.5 + 1.25 + 6) / 8 / 4,
		{Mode: AggSeqMeanTokenSum, Turns: TrajectoryAsSequence}:          (1.5 + 1.25 + 6) / 3,
		{Mode: AggSeqMeanTokenMean, Turns: TrajectoryAsSequence}:         (1.5/5 + 1.25/5 + 6./4) / 3,
	}
	for c, want := range defs {
		w, err := AggWeights(aggSamples, c)
		if err != nil {
			t.Fatal(err)
		}
		var total, first, second float64
		for i := range aggSamples {
			part := w[i] * seqSum(L[i])
			total += part
			if i < 2 {
				first += part
			} else {
				second += part
			}
		}
		if !near(total, want, 1e-12) || !near(first+second, want, 1e-12) {
			t.Errorf("%+v: Σ w·L = %.12g (split %.12g), want %.12g", c, total, first+second, want)
		}
		if got, err := AggLoss(L, []int{0, 0, 1, 1, 2}, c); err != nil || !near(got, want, 1e-12) {
			t.Errorf("%+v: AggLoss = %.12g (%v), want %.12g", c, got, err, want)
		}
	}
	_, err := AggLoss(L, []int{0}, DefaultAggConfig())
	expectErr(t, "AggLoss ids", err, "5 samples", "1 trajectory ids")
}

func TestWeightsEdgesAndErrors(t *testing.T) {
	w, err := AggWeights([]AggSample{{0, 0}, {0, 1}}, DefaultAggConfig())
	if err != nil {
		t.Fatal(err)
	}
	expectSlice(t, "no trained tokens", w, []float64{0, 0}, 0)

	_, err = AggWeights(aggSamples, AggConfig{Mode: "token-sum", Turns: TurnsAsSequences})
	expectErr(t, "unknown mode", err, `"token-sum"`, "token-mean")
	_, err = AggWeights(aggSamples, AggConfig{Mode: AggSeqMeanTokenSumNorm, Turns: TurnsAsSequences})
	expectErr(t, "norm constant", err, "loss.agg_norm", "seq-mean-token-sum-norm")
	_, err = AggWeights(aggSamples, AggConfig{Mode: AggTokenMean, Turns: "episode"})
	expectErr(t, "unknown turn weighting", err, `"episode"`)
	_, err = AggWeights([]AggSample{{-1, 0}}, DefaultAggConfig())
	expectErr(t, "negative tokens", err, "sample 0", "-1 trained tokens")

	if m, err := ParseAggMode("seq-mean-token-mean"); err != nil || m != AggSeqMeanTokenMean {
		t.Errorf("ParseAggMode = %q, %v", m, err)
	}
	_, err = ParseAggMode("mean")
	expectErr(t, "ParseAggMode", err, `"mean"`)
	if tw, err := ParseTurnWeighting("trajectory"); err != nil || tw != TrajectoryAsSequence {
		t.Errorf("ParseTurnWeighting = %q, %v", tw, err)
	}
}
