package algo

import (
	"math"
	"testing"
)

// ragenTurns is the example at the bottom of RAGEN's core_algos.py as two explicit turns: values
// 0.1 … 1.0 on ten trained tokens, turn rewards r0 at token 4 and 1 at token 9.
func ragenTurns(r0 float64) []GAETurn {
	return []GAETurn{
		{Values: []float64{0.1, 0.2, 0.3, 0.4, 0.5}, Reward: r0},
		{Values: []float64{0.6, 0.7, 0.8, 0.9, 1.0}, Reward: 1},
	}
}

func TestBiLevelGAERagenExample(t *testing.T) {
	// γ = λ = 1, γ_hi = 0.95. Turn level, backwards:
	//	turn 1: δ = 1 + 0 − V(9)=1.0 → Â = 0, turn return 0 + 1.0 = 1.0
	//	turn 0: δ = 1 + 0.95·1.0 − 0.5 = 1.45 → Â = 1.45 + 0.95·0 = 1.45, turn return 1.95
	// Token level, restarting at each turn end with the turn return as reward:
	//	turn 1: p9: δ = 1.0 − 1.0 = 0; p8: 0 + 1.0 − 0.9 = 0.1 → A = 0.1; p7 0.2; p6 0.3; p5 0.4
	//	turn 0: p4: δ = 1.95 − 0.5 = 1.45; p3: 0.5 − 0.4 = 0.1 → 1.55; p2 1.65; p1 1.75; p0 1.85
	// Returns A + V: 1.95 on every token of turn 0, 1.0 on turn 1.
	c := GAEConfig{Gamma: 1, Lambda: 1, TurnGamma: 0.95, BiLevel: true}
	adv, ret := biLevelGAE(ragenTurns(1), c)
	expectNested(t, "adv", adv, [][]float64{{1.85, 1.75, 1.65, 1.55, 1.45}, {0.4, 0.3, 0.2, 0.1, 0}}, 1e-12)
	expectNested(t, "ret", ret, [][]float64{{1.95, 1.95, 1.95, 1.95, 1.95}, {1, 1, 1, 1, 1}}, 1e-12)

	// GAE whitens the advantages over all ten tokens: mean 9.25/10 = 0.925; squared deviations
	// 2·(0.925² + 0.825² + 0.725² + 0.625² + 0.525²) = 5.45625, Bessel var 5.45625/9 = 0.60625.
	wa, wr, err := BiLevelGAE([][]GAETurn{ragenTurns(1)}, 1, 1, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(0.60625 + 1e-8)
	var want [][]float64
	for _, turn := range adv {
		var w []float64
		for _, a := range turn {
			w = append(w, (a-0.925)/s)
		}
		want = append(want, w)
	}
	expectNested(t, "whitened", wa[0], want, 1e-9)
	expectNested(t, "returns not whitened", wr[0], ret, 0)
}

func TestBiLevelGAEZeroTurnReward(t *testing.T) {
	// Turn 0's reward is 0. RAGEN would find no turn end at token 4 and chain the ten tokens as one
	// turn; with explicit ends turn 0 still ends there:
	//	turn 1 as before: Â = 0, turn return 1.0
	//	turn 0: δ = 0 + 0.95·1.0 − 0.5 = 0.45 → Â = 0.45, turn return 0.95
	//	tokens of turn 0: p4 0.45, p3 0.55, p2 0.65, p1 0.75, p0 0.85; returns 0.95
	c := GAEConfig{Gamma: 1, Lambda: 1, TurnGamma: 0.95, BiLevel: true}
	adv, ret := biLevelGAE(ragenTurns(0), c)
	expectNested(t, "adv", adv, [][]float64{{0.85, 0.75, 0.65, 0.55, 0.45}, {0.4, 0.3, 0.2, 0.1, 0}}, 1e-12)
	expectNested(t, "ret", ret, [][]float64{{0.95, 0.95, 0.95, 0.95, 0.95}, {1, 1, 1, 1, 1}}, 1e-12)
}

// discountTurns: turn 0 has values 1, 2 with a token reward 0.5 on its first token and turn
// reward 0; turn 1 has value 3 and turn reward 1.
func discountTurns() []GAETurn {
	return []GAETurn{
		{Values: []float64{1, 2}, TokenRewards: []float64{0.5, 0}},
		{Values: []float64{3}, Reward: 1},
	}
}

func TestTokenGAEDiscounted(t *testing.T) {
	// γ = 0.9, λ = 0.5 (γλ = 0.45), one chain over the three tokens:
	//	p2: δ = 1 + 0.9·0 − 3 = −2 → A = −2, R = 1
	//	p1: δ = 0 + 0.9·3 − 2 = 0.7 → A = 0.7 + 0.45·(−2) = −0.2, R = 1.8
	//	p0: δ = 0.5 + 0.9·2 − 1 = 1.3 → A = 1.3 + 0.45·(−0.2) = 1.21, R = 2.21
	adv, ret := tokenGAE(discountTurns(), GAEConfig{Gamma: 0.9, Lambda: 0.5})
	expectNested(t, "adv", adv, [][]float64{{1.21, -0.2}, {-2}}, 1e-12)
	expectNested(t, "ret", ret, [][]float64{{2.21, 1.8}, {1}}, 1e-12)

	// GAE whitens the three advantages 1.21, −0.2, −2: mean −0.33, deviations 1.54, 0.13, −1.67,
	// Bessel var (2.3716 + 0.0169 + 2.7889)/2 = 2.5887; the returns stay as they are.
	wa, wr, err := GAE([][]GAETurn{discountTurns()}, 0.9, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(2.5887 + 1e-8)
	expectNested(t, "GAE adv", wa[0], [][]float64{{1.54 / s, 0.13 / s}, {-1.67 / s}}, 1e-9)
	expectNested(t, "GAE ret", wr[0], ret, 0)
	_, _, err = GAE(nil, 1.5, 1)
	expectErr(t, "GAE gamma", err, "advantage.gamma", "1.5")
}

func TestBiLevelGAEDiscounted(t *testing.T) {
	// γ = 0.9, λ = 0.5, γ_hi = 0.8. Turn level (ends: p1 with V 2, p2 with V 3):
	//	turn 1: δ = 1 + 0 − 3 = −2 → Â = −2, turn return 1
	//	turn 0: δ = 0 + 0.8·3 − 2 = 0.4 → Â = 0.4 + 0.8·0.5·(−2) = −0.4, turn return 1.6
	// Token level:
	//	turn 1: p2: δ = 1 − 3 = −2 → A = −2, R = 1
	//	turn 0: p1: δ = 1.6 − 2 = −0.4 → A = −0.4, R = 1.6; p0: δ = 0.5 + 0.9·2 − 1 = 1.3 →
	//	A = 1.3 + 0.45·(−0.4) = 1.12, R = 2.12
	adv, ret := biLevelGAE(discountTurns(), GAEConfig{Gamma: 0.9, Lambda: 0.5, TurnGamma: 0.8, BiLevel: true})
	expectNested(t, "adv", adv, [][]float64{{1.12, -0.4}, {-2}}, 1e-12)
	expectNested(t, "ret", ret, [][]float64{{2.12, 1.6}, {1}}, 1e-12)
}

func TestGAETurnWithoutTrainedTokens(t *testing.T) {
	// Turn 1 was masked (no trained tokens) and carries reward 2: it arrives at turn 0's end.
	// Plain and bi-level (γ = λ = 1): δ = 2 − 1 = 1 → A = 1, R = 2.
	tr := []GAETurn{{Values: []float64{1}}, {Reward: 2}}
	for _, bi := range []bool{false, true} {
		c := GAEConfig{Gamma: 1, Lambda: 1, TurnGamma: 0.95, BiLevel: bi}
		var adv, ret [][]float64
		if bi {
			adv, ret = biLevelGAE(tr, c)
		} else {
			adv, ret = tokenGAE(tr, c)
		}
		expectNested(t, "adv", adv, [][]float64{{1}, {}}, 1e-12)
		expectNested(t, "ret", ret, [][]float64{{2}, {}}, 1e-12)
	}
	// A masked first turn has no earlier turn to take its reward: dropped, A = 0 − 1.
	adv, _ := tokenGAE([]GAETurn{{Reward: 5}, {Values: []float64{1}}}, DefaultGAEConfig())
	expectNested(t, "dropped", adv, [][]float64{{}, {-1}}, 1e-12)
}

func TestWhiten(t *testing.T) {
	// 1, 2, 3: mean 2, Bessel var (1 + 0 + 1)/2 = 1.
	got := whiten([][]float64{{1, 2}, {}, {3}})
	s := math.Sqrt(1 + 1e-8)
	expectNested(t, "whiten", got, [][]float64{{-1 / s, 0}, {}, {1 / s}}, 1e-12)
	expectNested(t, "one value", whiten([][]float64{{7}}), [][]float64{{0}}, 0)
}

func TestGAEErrors(t *testing.T) {
	_, _, err := GAEAdvantage([][]GAETurn{{{Values: []float64{1, 2}, TokenRewards: []float64{1}}}}, DefaultGAEConfig())
	expectErr(t, "token rewards", err, "trajectory 0", "turn 0", "2 values but 1 token rewards")
	_, _, err = GAEAdvantage([][]GAETurn{{}, {{Values: []float64{math.NaN()}}}}, DefaultGAEConfig())
	expectErr(t, "NaN value", err, "trajectory 1", "token 0", "NaN")
	_, _, err = GAEAdvantage(nil, GAEConfig{Gamma: 1.5, Lambda: 1, TurnGamma: 1})
	expectErr(t, "gamma", err, "advantage.gamma", "1.5")
}
