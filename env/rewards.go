package env

import (
	"math/big"
	"math/bits"
	"strings"
)

// Reward functions shared by the environments. Trajectory functions look at the final message
// (the last turn, when it gave a final answer); turn functions at one turn's TurnInfo or tool
// results.

// finalText is the final answer's text, or "" when the episode ended without one (out of turns).
func finalText(t *Trajectory) string {
	if len(t.Turns) == 0 || !t.Final().Final {
		return ""
	}
	return t.LastAssistant()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// FormatMathReward: 1 when the final message states "#### <number>".
func FormatMathReward(weight float64) RewardFunc {
	return RewardFunc{Name: "format", Weight: weight, Gate: true, Fn: func(t *Trajectory) float64 {
		return b2f(FormatMath(finalText(t)))
	}}
}

// StrictAccuracy: 1 when the "####" answer equals the ground truth (verl's strict score).
func StrictAccuracy(weight float64) RewardFunc {
	return RewardFunc{Name: "accuracy_strict", Weight: weight, Gate: true, Fn: func(t *Trajectory) float64 {
		return b2f(AnswersEqual(ExtractStrict(finalText(t)), t.Task.GroundTruth))
	}}
}

// LenientAccuracy: 1 when any extracted answer (####, \boxed, Answer:, last number) is right.
func LenientAccuracy(weight float64) RewardFunc {
	return RewardFunc{Name: "accuracy", Weight: weight, Fn: func(t *Trajectory) float64 {
		return b2f(AnswersEqual(ExtractLenient(finalText(t)), t.Task.GroundTruth))
	}}
}

// TagAnswerAccuracy: 1 when <tag>...</tag> matches the ground truth after SQuAD normalisation
// (numbers compare as numbers).
func TagAnswerAccuracy(tag string, weight float64) RewardFunc {
	return RewardFunc{Name: "accuracy", Weight: weight, Gate: true, Fn: func(t *Trajectory) float64 {
		a, ok := ExtractTag(finalText(t), tag)
		if !ok {
			return 0
		}
		return b2f(AnswersEqual(a, t.Task.GroundTruth) || (NormalizeText(a) != "" && NormalizeText(a) == NormalizeText(t.Task.GroundTruth)))
	}}
}

// FormatTagReward: 1 when the final message has a non-blank <tag>...</tag>.
func FormatTagReward(tag string, weight float64) RewardFunc {
	return RewardFunc{Name: "format", Weight: weight, Gate: true, Fn: func(t *Trajectory) float64 {
		return b2f(FormatGeneral(finalText(t), tag))
	}}
}

// SuccessReward: 1 when a game reports success on its last turn.
func SuccessReward(weight float64) RewardFunc {
	return RewardFunc{Name: "success", Weight: weight, Gate: true, Fn: func(t *Trajectory) float64 {
		return b2f(t.Final().Success)
	}}
}

// ToolSuccessTurn (MT-GRPO "tool executed successfully"): the fraction of the turn's tool calls
// that ran without error; 0 for a turn without calls.
func ToolSuccessTurn(weight float64) TurnRewardFunc {
	return TurnRewardFunc{Name: "tool_success", Weight: weight, Fn: func(t *Trajectory, i int) float64 {
		in := t.Turns[i].Result.Info
		if in.ToolCalls == 0 {
			return 0
		}
		return float64(in.ToolSuccesses) / float64(in.ToolCalls)
	}}
}

// AnswerInResultTurn (MT-GRPO "exist answer in search results"): 1 when a tool result of the
// turn contains the ground-truth answer.
func AnswerInResultTurn(weight float64) TurnRewardFunc {
	return TurnRewardFunc{Name: "answer_in_result", Weight: weight, Fn: func(t *Trajectory, i int) float64 {
		return b2f(t.Turns[i].Result.Info.AnswerInToolResult)
	}}
}

// InvalidActionsTurn (RAGEN's penalty for an invalid action): minus the number of game moves
// in the turn that were not understood. It is never positive: a per-move reward for moves that
// were understood would pay a game for lasting (10 safe moves on FrozenLake would earn more than
// reaching the goal in 3), which PPO's returns, unlike the outcome score, add up.
func InvalidActionsTurn(weight float64) TurnRewardFunc {
	return TurnRewardFunc{Name: "invalid_actions", Weight: weight, Fn: func(t *Trajectory, i int) float64 {
		return -float64(t.Turns[i].Result.Info.InvalidActions)
	}}
}

// MathRubric scores "####" answers: reward = strict accuracy (verl's default), with format and
// lenient accuracy reported beside it.
func MathRubric() *Rubric {
	return &Rubric{Funcs: []RewardFunc{StrictAccuracy(1), FormatMathReward(0), LenientAccuracy(0)}}
}

// ToolMathRubric is MathRubric plus MT-GRPO's turn rewards.
func ToolMathRubric() *Rubric {
	r := MathRubric()
	r.Turn = []TurnRewardFunc{ToolSuccessTurn(1), AnswerInResultTurn(1)}
	return r
}

// PartialProductTurn is calc_mult's step reward: 1 when a tool result of turn i is a new partial
// product of the question's numbers (the product of two or more of them, in any order, that no
// earlier turn's tool result reached), else 0. A call that copies a number wrong, repeats a step
// or multiplies anything else earns 0, so each calculator turn is credited for its own step: on
// three or more factors this is the informative turn reward that AnswerInResultTurn (the final
// product only) is not. Tasks that are not "What is A * B * ...?" questions earn 0.
func PartialProductTurn(weight float64) TurnRewardFunc {
	return TurnRewardFunc{Name: "partial_product", Weight: weight, Fn: func(t *Trajectory, i int) float64 {
		products := partialProducts(multFactors(t.Task))
		if len(products) == 0 {
			return 0
		}
		reached := map[string]bool{}
		for j := range i {
			for _, m := range t.Turns[j].Result.Messages {
				if m.Role == RoleTool {
					reached[strings.TrimSpace(m.Content)] = true
				}
			}
		}
		for _, m := range t.Turns[i].Result.Messages {
			if v := strings.TrimSpace(m.Content); m.Role == RoleTool && products[v] && !reached[v] {
				return 1
			}
		}
		return 0
	}}
}

// partialProducts is the set of products of two or more of the numbers xs (decimal strings, as
// multFactors gives them); empty for fewer than two numbers.
func partialProducts(xs []string) map[string]bool {
	if len(xs) > 8 { // 2^n subsets; generated tasks have at most 4 numbers
		return nil
	}
	out := map[string]bool{}
	for mask := 1; mask < 1<<len(xs); mask++ {
		if bits.OnesCount(uint(mask)) < 2 {
			continue
		}
		p := big.NewInt(1)
		for k, x := range xs {
			if mask&(1<<k) != 0 {
				v, _ := new(big.Int).SetString(x, 10) // digits: multQuestion matched them
				p.Mul(p, v)
			}
		}
		out[p.String()] = true
	}
	return out
}

// CalcMultRubric is MathRubric with calc_mult's turn rewards: tool_success and partial_product
// (MT-GRPO's R_turn), and answer_in_result reported beside them with weight 0.
func CalcMultRubric() *Rubric {
	r := MathRubric()
	r.Turn = []TurnRewardFunc{ToolSuccessTurn(1), PartialProductTurn(1), AnswerInResultTurn(0)}
	return r
}
