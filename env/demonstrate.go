package env

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"regexp"
	"strings"
)

// Demonstrator writes the assistant message a good policy sends next, given the task and the
// conversation so far (the context's messages). Built-in environments with generated tasks carry
// one (Environment.Demonstrate): supervised warm-up steps train a model on what it writes, played
// through the rollout like any policy so that contexts and chat template are exactly those of RL.
type Demonstrator func(task Task, msgs []Message) (string, error)

var (
	multQuestion   = regexp.MustCompile(`What is (\d+(?: \* \d+)+)\?`)
	multExpression = regexp.MustCompile(`^\s*(\d+)\s*\*\s*(\d+)\s*$`)
)

// calcMultDemonstrator is demonstrateCalcMult, except that a share direct of the tasks (chosen
// by a hash of the task's question, so the same ones every time) is answered at once with the
// product, without the calculator.
func calcMultDemonstrator(direct float64) Demonstrator {
	return func(task Task, msgs []Message) (string, error) {
		if direct > 0 && (len(msgs) == 0 || msgs[len(msgs)-1].Role != RoleTool) && unitHash(taskQuestion(task)) < direct {
			return "#### " + task.GroundTruth, nil
		}
		return demonstrateCalcMult(task, msgs)
	}
}

// multFactors is the numbers of the task's "What is A * B * ...?" question, as written; nil when
// its prompt has no such question.
func multFactors(task Task) []string {
	var xs []string
	for _, m := range task.Prompt {
		if q := multQuestion.FindStringSubmatch(m.Content); q != nil {
			xs = strings.Split(q[1], " * ")
		}
	}
	return xs
}

// taskQuestion is the text of the task's prompt.
func taskQuestion(task Task) string {
	var b strings.Builder
	for _, m := range task.Prompt {
		b.WriteString(m.Content)
	}
	return b.String()
}

// unitHash maps s to [0, 1) (FNV-1a).
func unitHash(s string) float64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return float64(h.Sum64()>>11) / (1 << 53)
}

// demonstrateCalcMult multiplies the task's numbers with the calculator one call at a time (the
// first two, then each result by the next number), then answers with the last result after
// "####". It reads where it is from the last call and its result alone, so it plays the same
// under every condenser: the last call's left operand is the product of the numbers before its
// right one.
func demonstrateCalcMult(task Task, msgs []Message) (string, error) {
	xs := multFactors(task)
	if xs == nil {
		return "", fmt.Errorf("env: calc_mult task %s has no \"What is A * B?\" question", task.ID)
	}
	call := func(a, b string) string {
		return fmt.Sprintf("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%s * %s\"}}\n</tool_call>", a, b)
	}
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != RoleTool || msgs[n-2].Role != RoleAssistant || len(msgs[n-2].ToolCalls) == 0 {
		return call(xs[0], xs[1]), nil
	}
	result := strings.TrimSpace(msgs[n-1].Content)
	var args struct {
		Expression string `json:"expression"`
	}
	if err := json.Unmarshal(msgs[n-2].ToolCalls[0].Function.Arguments, &args); err != nil {
		return "", fmt.Errorf("env: calc_mult task %s: the last call's arguments: %w", task.ID, err)
	}
	ops := multExpression.FindStringSubmatch(args.Expression)
	if ops == nil {
		return "", fmt.Errorf("env: calc_mult task %s: the last call %q is not A * B", task.ID, args.Expression)
	}
	prefix := new(big.Int)
	prefix.SetString(xs[0], 10)
	for k := 1; k < len(xs); k++ {
		if ops[1] == prefix.String() && ops[2] == xs[k] {
			if k == len(xs)-1 {
				return "#### " + result, nil
			}
			return call(result, xs[k+1]), nil
		}
		x, _ := new(big.Int).SetString(xs[k], 10)
		prefix.Mul(prefix, x)
	}
	return "", fmt.Errorf("env: calc_mult task %s: the last call %q is no step of %s", task.ID, args.Expression, strings.Join(xs, " * "))
}

// demonstrateGSM8K writes the task's reference solution (extra_info.answer, GSM8K's worked
// solution) ending in "#### answer".
func demonstrateGSM8K(task Task, _ []Message) (string, error) {
	sol, _ := task.Extra["answer"].(string)
	if sol == "" {
		return "", fmt.Errorf("env: gsm8k task %s has no worked solution (extra_info.answer)", task.ID)
	}
	if !strings.Contains(sol, "####") {
		sol = strings.TrimSpace(sol) + "\n#### " + task.GroundTruth
	}
	return sol, nil
}
