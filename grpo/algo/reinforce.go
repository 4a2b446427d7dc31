package algo

// REINFORCE++ without a baseline, per trajectory over its turns' trained tokens, in plain Go.
// Reference: verl core_algos.py compute_reinforce_plus_plus_outcome_advantage; Hu, "REINFORCE++"
// (arXiv 2501.03262).
//
// Deviation from verl, on purpose: D12 (the return runs across turns), stated in doc.go.

import "fmt"

// RewardTurn is one turn of a trajectory as REINFORCE++ sees it.
type RewardTurn struct {
	// Tokens is the number of trained tokens of the turn.
	Tokens int
	// Reward is the turn reward; it arrives at the turn's last trained token.
	Reward float64
	// TokenRewards are extra per-token rewards (−β·KL, see KLRewards), one per trained token;
	// nil means none.
	TokenRewards []float64
}

// ReinforcePlusPlusAdvantage is REINFORCE++'s advantage, [B][turns] → advantages and returns
// [B][turns][tokens]: the discounted return G_p = r_p + γ·G_{p+1} over each trajectory's trained
// tokens in order (G after the last token 0, each turn's reward on its last trained token, the
// token rewards on theirs), then the returns whitened over every trained token of the batch:
// A_p = (G_p − m)/sqrt(v + 1e-8), m and v the mean and Bessel variance. No baseline and no
// group: the whitening is the only normalisation. Returns are G.
// Reference: verl compute_reinforce_plus_plus_outcome_advantage (returns, then masked_whiten).
func ReinforcePlusPlusAdvantage(trajs [][]RewardTurn, gamma float64) (adv, ret [][][]float64, err error) {
	if err := (GAEConfig{Gamma: gamma, Lambda: 1, TurnGamma: 1}).Validate(); err != nil {
		return nil, nil, err
	}
	// GAE with every value 0 and λ = 1 is the discounted return: δ_p = r_p, A_p = r_p + γ·A_{p+1}.
	in := make([][]GAETurn, len(trajs))
	for i, tr := range trajs {
		in[i] = make([]GAETurn, len(tr))
		for t, u := range tr {
			if u.Tokens < 0 {
				return nil, nil, fmt.Errorf("grpo: REINFORCE++ trajectory %d turn %d has %d trained tokens", i, t, u.Tokens)
			}
			in[i][t] = GAETurn{Values: make([]float64, u.Tokens), Reward: u.Reward, TokenRewards: u.TokenRewards}
		}
	}
	return runGAE("REINFORCE++", in, GAEConfig{Gamma: gamma, Lambda: 1}, tokenGAE)
}
