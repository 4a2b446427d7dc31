package env

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// Countdown (TinyZero, verl/utils/reward_score/countdown.py): combine the given numbers with
// + - * / and parentheses to hit the target. Reward conventions are TinyZero's: 0 without an
// <answer>, 0.1 (format score) for an answer that is wrong or breaks the rules, 1 for a correct
// one.
//
// As in TinyZero, every given number must be used exactly once (CountdownTruth.AtMostOnce relaxes
// that to "at most once", the task as its prompt words it). Deviations: the answer is the last
// <answer>...</answer> anywhere in the final message (TinyZero looks only at its last line); the
// result is compared exactly (rationals) where TinyZero allows a 1e-5 float error.

// CountdownTruth is the ground truth of a countdown row (a JSON text in reward_model.ground_truth).
type CountdownTruth struct {
	Target  int   `json:"target"`
	Numbers []int `json:"numbers"`
	// AtMostOnce lets an equation leave numbers out; by default (TinyZero) it uses each once.
	AtMostOnce bool `json:"at_most_once,omitempty"`
}

var (
	equationChars = regexp.MustCompile(`^[0-9+\-*/().\s]+$`)
	integerRe     = regexp.MustCompile(`[0-9]+`)
)

// CheckCountdown verifies an equation against the truth. The error says what is wrong.
func CheckCountdown(equation string, t CountdownTruth) error {
	if len(equation) > maxExpression { // before the scans below: the calculator refuses it anyway
		return fmt.Errorf("expression too long (%d bytes; the limit is %d)", len(equation), maxExpression)
	}
	if !equationChars.MatchString(equation) {
		return fmt.Errorf("only numbers, + - * / and parentheses are allowed")
	}
	avail := map[int]int{}
	for _, n := range t.Numbers {
		avail[n]++
	}
	used := 0
	for _, s := range integerRe.FindAllString(equation, -1) {
		n, err := strconv.Atoi(s)
		if err != nil || avail[n] == 0 {
			return fmt.Errorf("%s is not one of the given numbers (or is used too often)", s)
		}
		avail[n]--
		used++
	}
	if !t.AtMostOnce && used != len(t.Numbers) {
		return fmt.Errorf("every number must be used exactly once")
	}
	v, err := Evaluate(equation)
	if err != nil {
		return err
	}
	if v.Cmp(new(big.Rat).SetInt64(int64(t.Target))) != 0 {
		return fmt.Errorf("the equation equals %s, not %d", FormatRat(v), t.Target)
	}
	return nil
}

// CountdownRubric: format (an <answer> is present, weight 0.1) + accuracy (weight 0.9), so a
// correct answer scores 1, a wrong one 0.1 and none 0 — TinyZero's values.
func CountdownRubric() *Rubric {
	return &Rubric{Funcs: []RewardFunc{
		FormatTagReward("answer", 0.1),
		{Name: "accuracy", Weight: 0.9, Gate: true, Fn: func(t *Trajectory) float64 {
			var truth CountdownTruth
			if json.Unmarshal([]byte(t.Task.GroundTruth), &truth) != nil {
				return 0
			}
			eq, ok := ExtractTag(finalText(t), "answer")
			return b2f(ok && CheckCountdown(eq, truth) == nil)
		}},
	}}
}

// GenerateCountdown makes n tasks with 3 or 4 numbers from 1..99 and a target reachable by
// some expression over all of them (1..999, integer at every step).
func GenerateCountdown(n int, seed int64) []data.Row { return take(n, countdownStream(seed)) }

// countdownStream makes the same tasks one at a time.
func countdownStream(seed int64) stream {
	r := newRand(seed, "countdown")
	return func(i int) data.Row {
		nums, target, solution := countdownTask(r)
		truth, _ := json.Marshal(CountdownTruth{Target: target, Numbers: nums})
		return data.Row{
			DataSource: "countdown",
			Prompt: []data.Message{{Role: "user", Content: fmt.Sprintf("Using the numbers %v, create an equation that equals %d. You can use basic arithmetic operations (+, -, *, /) and each number can only be used once. Show your work in <think> </think> tags. And return the final answer in <answer> </answer> tags, for example <answer> (1 + 2) / 3 </answer>.",
				jsonInts(nums), target)}},
			Ability:     "math",
			RewardModel: data.RewardModel{Style: "rule", GroundTruth: string(truth)},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(i), "solution": solution},
		}
	}
}

// jsonInts writes a list the way Python prints it ("[44, 19, 35]"), as TinyZero's prompt does.
func jsonInts(a []int) string {
	s := make([]string, len(a))
	for i, n := range a {
		s[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// countdownTask folds random numbers left to right with random operations, keeping only
// integer, positive steps, until the result lands in 1..999. It returns the numbers (shuffled),
// the target and the expression that reaches it.
func countdownTask(r *rand.Rand) ([]int, int, string) {
	for {
		k := 3 + r.IntN(2)
		nums := make([]int, k)
		for j := range nums {
			nums[j] = 1 + r.IntN(99)
		}
		acc, expr := nums[0], strconv.Itoa(nums[0])
		ok := true
		for _, x := range nums[1:] {
			op := "+-*/"[r.IntN(4)]
			if op == '/' && acc%x != 0 {
				op = '+'
			}
			switch op {
			case '+':
				acc += x
			case '-':
				acc -= x
			case '*':
				acc *= x
			case '/':
				acc /= x
			}
			expr = fmt.Sprintf("(%s %c %d)", expr, op, x)
			if acc <= 0 {
				ok = false
				break
			}
		}
		if ok && acc < 1000 {
			r.Shuffle(len(nums), func(a, b int) { nums[a], nums[b] = nums[b], nums[a] })
			return nums, acc, strings.TrimSuffix(strings.TrimPrefix(expr, "("), ")")
		}
	}
}
