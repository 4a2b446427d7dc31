package algo

import (
	"math"
	"testing"
)

// A batch of four groups used by the outcome-advantage tests:
//
//	group 7: scores 1, 0, 0, 1   μ = 0.5, Bessel var = 4·0.25/3 = 1/3, σ = 1/√3
//	group 3: scores 2, 4, 9      μ = 5, deviations −3, −1, 4, var = 26/2 = 13, σ = √13
//	group 5: score 5             singleton
//	group 1: scores .1, .1, .1   equal (their float mean is 0.10000000000000002, not 0.1)
var (
	advScores = []float64{1, 0, 2, 0, 5, 4, 1, 0.1, 9, 0.1, 0.1}
	advGroups = []int{7, 7, 3, 7, 5, 3, 7, 1, 3, 1, 1}
)

func TestGRPOOutcomeAdvantageHandWorked(t *testing.T) {
	// ε = 0: group 7 gives ±0.5·√3 = ±0.8660254037844386; group 3 gives {−3, −1, 4}/√13.
	r13 := math.Sqrt(13)
	h := math.Sqrt(3) / 2
	adv, st, err := GRPOOutcomeAdvantage(advScores, advGroups, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	expectSlice(t, "GRPO", adv, []float64{h, -h, -3 / r13, -h, 0, -1 / r13, h, 0, 4 / r13, 0, 0}, 1e-12)
	// The singleton and the equal group are exactly 0, not merely small.
	for _, i := range []int{4, 7, 9, 10} {
		if adv[i] != 0 {
			t.Errorf("adv[%d] = %g, want exactly 0", i, adv[i])
		}
	}
	// 4 groups, 1 singleton, 1 equal group holding 3 of 11 trajectories; MeanStd over the three
	// groups of two or more: (1/√3 + √13 + 0)/3.
	want := GroupStats{Groups: 4, Singletons: 1, ZeroStd: 1, FracZeroStd: 3.0 / 11, MeanStd: (1/math.Sqrt(3) + r13) / 3}
	if st.Groups != want.Groups || st.Singletons != want.Singletons || st.ZeroStd != want.ZeroStd ||
		!near(st.FracZeroStd, want.FracZeroStd, 1e-12) || !near(st.MeanStd, want.MeanStd, 1e-12) {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	if m := st.Metrics(); m["frac_reward_zero_std"] != st.FracZeroStd || m["reward_std"] != st.MeanStd {
		t.Errorf("metrics = %v", m)
	}

	// ε = 1e-6 as in verl: 0.5/(1/√3 + 1e-6).
	adv, _, _ = GRPOOutcomeAdvantage(advScores, advGroups, 1e-6, true)
	if w := 0.5 / (1/math.Sqrt(3) + 1e-6); !near(adv[0], w, 1e-12) {
		t.Errorf("ε = 1e-6: adv[0] = %.12g, want %.12g", adv[0], w)
	}
}

func TestDrGRPOAndRLOO(t *testing.T) {
	// Dr.GRPO: s − μ. Group 7: ±0.5; group 3: −3, −1, 4.
	adv, _, err := OutcomeAdvantage(AdvConfig{Estimator: EstDrGRPO, Eps: 1e-6, NormStd: true}, advScores, advGroups, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectSlice(t, "Dr.GRPO", adv, []float64{0.5, -0.5, -3, -0.5, 0, -1, 0.5, 0, 4, 0, 0}, 1e-12)

	// RLOO: s_i − mean of the others = n/(n−1)·(s − μ). Group 7 (n = 4): 1 − mean(0, 0, 1) = 2/3;
	// group 3 (n = 3): 2 − mean(4, 9) = −4.5, 4 − 5.5 = −1.5, 9 − 3 = 6.
	adv, _, err = RLOOAdvantage(advScores, advGroups)
	if err != nil {
		t.Fatal(err)
	}
	expectSlice(t, "RLOO", adv, []float64{2. / 3, -2. / 3, -4.5, -2. / 3, 0, -1.5, 2. / 3, 0, 6, 0, 0}, 1e-12)
}

// TRL's scale_rewards="batch": the group's mean is subtracted, then everything is divided by the
// std of the whole batch.
func TestGRPOBatchStd(t *testing.T) {
	// advScores: Σs = 22.3, Σs² = 128.03 over B = 11, so the Bessel variance is
	// (128.03 − 22.3²/11)/10 = 8.282181818…, σ_B = 2.87788…. s − μ_g: group 7 ±0.5, group 3
	// −3, −1, 4, the singleton and the equal group 0. TRL's ε is 1e-4.
	sB := math.Sqrt((128.03 - 22.3*22.3/11) / 10)
	d := sB + 1e-4
	c := DefaultAdvConfig()
	c.StdOver, c.Eps = StdBatch, 1e-4
	adv, st, err := OutcomeAdvantage(c, advScores, advGroups, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectSlice(t, "batch std", adv, []float64{0.5 / d, -0.5 / d, -3 / d, -0.5 / d, 0, -1 / d, 0.5 / d, 0, 4 / d, 0, 0}, 1e-12)
	if st.Groups != 4 || st.ZeroStd != 1 {
		t.Errorf("stats %+v", st)
	}
	// grpo_multiturn takes the same std; with norm_std off (Dr.GRPO) nothing is divided.
	c.Estimator = EstMultiTurnGRPO
	multi, _, _ := OutcomeAdvantage(c, advScores, advGroups, nil)
	expectSlice(t, "grpo_multiturn batch std", multi, adv, 0)
	c.NormStd = false
	plain, _, _ := OutcomeAdvantage(c, advScores, advGroups, nil)
	expectSlice(t, "norm_std off", plain, []float64{0.5, -0.5, -3, -0.5, 0, -1, 0.5, 0, 4, 0, 0}, 1e-12)
	// One trajectory has no spread: 0/(0 + ε).
	one, _, _ := GRPOBatchStdAdvantage([]float64{3}, []int{0}, 1e-4)
	expectSlice(t, "single", one, []float64{0}, 0)
	c.StdOver = "global"
	_, _, err = OutcomeAdvantage(c, advScores, advGroups, nil)
	expectErr(t, "unknown scope", err, "advantage.std_over", `"global"`)
}

// REINFORCE++: discounted returns over each trajectory's trained tokens, whitened over the batch.
func TestReinforcePlusPlusHandWorked(t *testing.T) {
	// γ = 0.5.
	//	A: one turn of 3 tokens, reward 1:             G = 0.25, 0.5, 1
	//	B: turn 0 of 1 token (reward 0), turn 1 of 2 tokens (reward 2):
	//	   the return runs across the turns:          G = 0.5 | 1, 2
	//	C: one token, reward 0, token reward −0.25 (a KL reward): G = −0.25
	// The seven returns sum to 5: m = 5/7 and, in 28ths, the deviations are −13, −6, 8 | −6 | 8,
	// 36 | −27, whose squares sum to 2394/784; the Bessel variance is 2394/784/6 = 399/784, so
	// A = deviation/√(399/784 + 1e-8) ≈ k/√399 for the deviations k (in 28ths).
	trajs := [][]RewardTurn{
		{{Tokens: 3, Reward: 1}},
		{{Tokens: 1}, {Tokens: 2, Reward: 2}},
		{{Tokens: 1, TokenRewards: []float64{-0.25}}},
	}
	adv, ret, err := ReinforcePlusPlusAdvantage(trajs, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	s := 28 * math.Sqrt(399.0/784+1e-8)
	expectSlice(t, "A returns", ret[0][0], []float64{0.25, 0.5, 1}, 1e-15)
	expectSlice(t, "B turn 0 returns", ret[1][0], []float64{0.5}, 1e-15)
	expectSlice(t, "B turn 1 returns", ret[1][1], []float64{1, 2}, 1e-15)
	expectSlice(t, "C returns", ret[2][0], []float64{-0.25}, 1e-15)
	expectSlice(t, "A", adv[0][0], []float64{-13 / s, -6 / s, 8 / s}, 1e-12)
	expectSlice(t, "B turn 0", adv[1][0], []float64{-6 / s}, 1e-12)
	expectSlice(t, "B turn 1", adv[1][1], []float64{8 / s, 36 / s}, 1e-12)
	expectSlice(t, "C", adv[2][0], []float64{-27 / s}, 1e-12)

	// γ = 1 with outcome rewards only: every token of a trajectory has its score as return.
	_, ret, _ = ReinforcePlusPlusAdvantage([][]RewardTurn{{{Tokens: 2, Reward: 1}}, {{Tokens: 2}}}, 1)
	expectSlice(t, "γ = 1", append(ret[0][0], ret[1][0]...), []float64{1, 1, 0, 0}, 0)

	_, _, err = ReinforcePlusPlusAdvantage(trajs, 1.5)
	expectErr(t, "γ out of range", err, "advantage.gamma")
	_, _, err = ReinforcePlusPlusAdvantage([][]RewardTurn{{{Tokens: 2, TokenRewards: []float64{1}}}}, 1)
	expectErr(t, "token rewards", err, "REINFORCE++ trajectory 0", "2 values but 1 token rewards")
}

func TestReinforcePlusPlusBaselineAdvantage(t *testing.T) {
	// Group 0: scores 1, 0 → a = 0.5, −0.5; group 1: 3, 3 → 0, 0. Token counts 1, 3, 2, 2 (N = 8):
	// token-weighted mean m = (0.5·1 − 0.5·3)/8 = −0.125; squared deviations weighted:
	// 1·0.625² + 3·0.375² + 4·0.125² = 0.390625 + 0.421875 + 0.0625 = 0.875; var = 0.875/7 = 0.125.
	// A = (a + 0.125)/√0.125.
	adv, st, err := ReinforcePlusPlusBaselineAdvantage([]float64{1, 0, 3, 3}, []int{0, 0, 1, 1}, []int{1, 3, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(0.125)
	expectSlice(t, "REINFORCE++-baseline", adv, []float64{0.625 / s, -0.375 / s, 0.125 / s, 0.125 / s}, 1e-6)
	if st.ZeroStd != 1 {
		t.Errorf("ZeroStd = %d, want 1", st.ZeroStd)
	}
	// Without token counts each trajectory weighs 1: a = 0.5, −0.5, 0, 0; m = 0; var = 0.5/3.
	adv, _, _ = ReinforcePlusPlusBaselineAdvantage([]float64{1, 0, 3, 3}, []int{0, 0, 1, 1}, nil)
	s = math.Sqrt(0.5 / 3)
	expectSlice(t, "unweighted", adv, []float64{0.5 / s, -0.5 / s, 0, 0}, 1e-6)
	// One trajectory: nothing to whiten against.
	adv, _, _ = ReinforcePlusPlusBaselineAdvantage([]float64{4}, []int{0}, nil)
	expectSlice(t, "single", adv, []float64{0}, 0)
}

func TestOutcomeDispatchAndErrors(t *testing.T) {
	c := DefaultAdvConfig()
	grpo, _, err := OutcomeAdvantage(c, advScores, advGroups, nil)
	if err != nil {
		t.Fatal(err)
	}
	direct, _, _ := GRPOOutcomeAdvantage(advScores, advGroups, 1e-6, true)
	expectSlice(t, "grpo", grpo, direct, 0)
	c.Estimator = EstMultiTurnGRPO
	multi, _, _ := OutcomeAdvantage(c, advScores, advGroups, nil)
	expectSlice(t, "grpo_multiturn", multi, direct, 0)

	for _, e := range []Estimator{EstMTGRPO, EstGAE, EstReinforcePP} {
		c.Estimator = e
		_, _, err := OutcomeAdvantage(c, advScores, advGroups, nil)
		expectErr(t, string(e), err, string(e))
	}
	c.Estimator = "ppo"
	_, _, err = OutcomeAdvantage(c, advScores, advGroups, nil)
	expectErr(t, "unknown estimator", err, `"ppo"`)
	_, _, err = GRPOOutcomeAdvantage([]float64{1, math.NaN()}, []int{0, 0}, 1e-6, true)
	expectErr(t, "NaN score", err, "trajectory 1", "NaN")
	_, _, err = GRPOOutcomeAdvantage([]float64{1, 2}, []int{0}, 1e-6, true)
	expectErr(t, "length mismatch", err, "2 scores", "1 group")
}

func TestParseEstimator(t *testing.T) {
	for s, want := range map[string]Estimator{
		"grpo": EstGRPO, "drgrpo": EstDrGRPO, "dr_grpo": EstDrGRPO, "rloo": EstRLOO,
		"reinforce_plus_plus_baseline": EstReinforcePPBaseline, "grpo_multiturn": EstMultiTurnGRPO,
		"mt_grpo": EstMTGRPO, "gae": EstGAE, "reinforce_plus_plus": EstReinforcePP,
	} {
		got, err := ParseEstimator(s)
		if err != nil || got != want {
			t.Errorf("ParseEstimator(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	_, err := ParseEstimator("reinforce++")
	expectErr(t, "unknown", err, `"reinforce++"`, "grpo, drgrpo")
}

func TestMTGRPO(t *testing.T) {
	// One group of three, ε = 0:
	//	T1: R_out 1, R_turn 1, 3 turns, first tool result from turn 1
	//	T2: R_out 0, R_turn 1, 2 turns, first tool result from turn 0
	//	T3: R_out 0, R_turn 0, 1 turn, no tool result
	// R_out = (1, 0, 0): μ = 1/3, var = (4/9 + 1/9 + 1/9)/2 = 1/3 → Â^out = (2/√3, −1/√3, −1/√3).
	// R_turn = (1, 1, 0) → Â^turn = (1/√3, 1/√3, −2/√3).
	// R_comb = (2, 1, 0): μ = 1, var = 1 → Â^comb = (1, 0, −1).
	// c = 1: T1 turns 0, 1: 2/√3 + 1/√3 = √3; turn 2: 2/√3. T2 turn 0: −1/√3 + 1/√3 = 0; turn 1:
	// −1/√3. T3 (no tool result): Â^comb = −1.
	r3 := math.Sqrt(3)
	trajs := []MTTrajectory{
		{Group: 4, Outcome: 1, Turn: 1, Turns: 3, ToolTurn: 1},
		{Group: 4, Outcome: 0, Turn: 1, Turns: 2, ToolTurn: 0},
		{Group: 4, Outcome: 0, Turn: 0, Turns: 1, ToolTurn: -1},
	}
	c := AdvConfig{Estimator: EstMTGRPO, NormStd: true, TurnCoef: 1}
	adv, st, err := MTGRPOAdvantage(trajs, c)
	if err != nil {
		t.Fatal(err)
	}
	expectNested(t, "MT-GRPO", adv, [][]float64{{r3, r3, 2 / r3}, {0, -1 / r3}, {-1}}, 1e-12)
	if st.Outcome.Groups != 1 || st.Combined.ZeroStd != 0 {
		t.Errorf("stats = %+v", st)
	}

	// c = 0.5 changes only the turns up to the tool turn: T1 turns 0, 1: 2/√3 + 0.5/√3 = 2.5/√3;
	// T2 turn 0: −1/√3 + 0.5/√3 = −0.5/√3.
	c.TurnCoef = 0.5
	adv, _, _ = MTGRPOAdvantage(trajs, c)
	expectNested(t, "MT-GRPO c=0.5", adv, [][]float64{{2.5 / r3, 2.5 / r3, 2 / r3}, {-0.5 / r3, -1 / r3}, {-1}}, 1e-12)

	// No trajectory has a tool result: every turn gets Â^comb.
	for i := range trajs {
		trajs[i].ToolTurn = -1
	}
	adv, _, _ = MTGRPOAdvantage(trajs, c)
	expectNested(t, "MT-GRPO no tool", adv, [][]float64{{1, 1, 1}, {0, 0}, {-1}}, 1e-12)

	trajs[2].ToolTurn = 1
	_, _, err = MTGRPOAdvantage(trajs, c)
	expectErr(t, "tool turn out of range", err, "trajectory 2", "tool turn 1 of 1 turns")
}
