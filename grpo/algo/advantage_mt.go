package algo

// MT-GRPO turn-level credit assignment (Zeng et al., "Reinforcing Multi-Turn Reasoning in LLM
// Agents via Turn-Level Credit Assignment", arXiv 2505.11821; reference code
// SiliangZeng/Multi-Turn-RL-Agent verifiers/trainers/mt_grpo_env_trainer.py, _assign_advantages).
//
// The reference works on one token row per trajectory and splits it at the first tool result
// message: tokens before it get Â^out + c·Â^turn, tokens after it Â^out. With one sample per turn
// the split falls between turns: the turns up to and including the one that issued the tool call
// whose result came first get Â^out + c·Â^turn, later turns Â^out. Without a tool result every
// turn gets Â^comb.

import "fmt"

// MTTrajectory is what MT-GRPO needs of one trajectory.
type MTTrajectory struct {
	// Group is the trajectory's GRPO group.
	Group int
	// Outcome is R_out (correctness and format of the final answer); Turn is R_turn (the turn
	// reward: the tool call ran, its result holds the answer...). R_comb = R_out + R_turn.
	Outcome, Turn float64
	// Turns is the number of samples (turns) the trajectory trains.
	Turns int
	// ToolTurn is the index of the turn whose tool call produced the trajectory's first tool
	// result, or -1 when no tool result came back.
	ToolTurn int
}

// MTStats holds the group statistics of the three rewards.
type MTStats struct {
	Outcome, Turn, Combined GroupStats
}

// MTGRPO computes MT-GRPO advantages per trajectory and turn, [B] → [B][Turns]: R_out, R_turn
// and R_comb are each group-normalised as GRPOOutcomeAdvantage does (ε = c.Eps, std division when
// c.NormStd); a trajectory with a tool result gets Â^out + c.TurnCoef·Â^turn on turns
// 0..ToolTurn and Â^out after, one without gets Â^comb on every turn.
func MTGRPOAdvantage(trajs []MTTrajectory, c AdvConfig) ([][]float64, MTStats, error) {
	var st MTStats
	groups := make([]int, len(trajs))
	out, turn, comb := make([]float64, len(trajs)), make([]float64, len(trajs)), make([]float64, len(trajs))
	for i, t := range trajs {
		if t.Turns < 0 || t.ToolTurn < -1 || t.ToolTurn >= t.Turns {
			return nil, st, fmt.Errorf("grpo: MT-GRPO trajectory %d: tool turn %d of %d turns", i, t.ToolTurn, t.Turns)
		}
		groups[i], out[i], turn[i], comb[i] = t.Group, t.Outcome, t.Turn, t.Outcome+t.Turn
	}
	var aOut, aTurn, aComb []float64
	var err error
	if aOut, st.Outcome, err = GRPOOutcomeAdvantage(out, groups, c.Eps, c.NormStd); err != nil {
		return nil, st, fmt.Errorf("%w (R_out)", err)
	}
	if aTurn, st.Turn, err = GRPOOutcomeAdvantage(turn, groups, c.Eps, c.NormStd); err != nil {
		return nil, st, fmt.Errorf("%w (R_turn)", err)
	}
	if aComb, st.Combined, err = GRPOOutcomeAdvantage(comb, groups, c.Eps, c.NormStd); err != nil {
		return nil, st, fmt.Errorf("%w (R_comb)", err)
	}
	adv := make([][]float64, len(trajs))
	for i, t := range trajs {
		adv[i] = make([]float64, t.Turns)
		for k := range adv[i] {
			switch {
			case t.ToolTurn < 0:
				adv[i][k] = aComb[i]
			case k <= t.ToolTurn:
				adv[i][k] = aOut[i] + c.TurnCoef*aTurn[i]
			default:
				adv[i][k] = aOut[i]
			}
		}
	}
	return adv, st, nil
}
