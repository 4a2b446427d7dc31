package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"regexp"
	"strings"
)

// Demonstrator writes the assistant message a good policy sends next, given the task and the
// conversation so far (the context's messages). Every built-in environment with generated tasks
// carries one (Environment.Demonstrate): supervised warm-up steps train a model on what it
// writes, played through the rollout like any policy so that contexts and chat template are
// exactly those of RL. Each reads where the episode stands from the context's messages alone
// (the last step, and the state its own last message wrote), so it plays the same under every
// condenser that keeps the last step.
type Demonstrator func(task Task, msgs []Message) (string, error)

// mixed plays imperfect on the share of tasks whose key (hashed to [0, 1)) falls below share,
// and perfect on the others: the same tasks every time (Config.DirectDemos).
func mixed(share float64, key func(Task) string, perfect, imperfect Demonstrator) Demonstrator {
	if share <= 0 {
		return perfect
	}
	return func(task Task, msgs []Message) (string, error) {
		if unitHash(key(task)) < share {
			return imperfect(task, msgs)
		}
		return perfect(task, msgs)
	}
}

// withDemos sets e's demonstrators: Demonstrate plays imperfect on the share direct of the tasks
// (by key), DemonstratePerfect is perfect when that share is not 0.
func withDemos(e *Environment, direct float64, key func(Task) string, perfect, imperfect Demonstrator) {
	e.Demonstrate = mixed(direct, key, perfect, imperfect)
	if direct > 0 {
		e.DemonstratePerfect = perfect
	}
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

// firstTurn reports whether the context holds no assistant message yet.
func firstTurn(msgs []Message) bool {
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			return false
		}
	}
	return true
}

// lastToolStep is the context's last step when it was a tool call and its result: the last
// assistant message's first call and the tool message after it.
func lastToolStep(msgs []Message) (call FunctionCall, result string, ok bool) {
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != RoleTool || msgs[n-2].Role != RoleAssistant || len(msgs[n-2].ToolCalls) == 0 {
		return FunctionCall{}, "", false
	}
	return msgs[n-2].ToolCalls[0].Function, strings.TrimSpace(msgs[n-1].Content), true
}

// toolCallText writes a call of tool name with one string argument in Qwen's markup:
//
//	<tool_call>
//	{"name": "calculator", "arguments": {"expression": "12 * 34"}}
//	</tool_call>
func toolCallText(name, arg, value string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(value) // a string always encodes
	return fmt.Sprintf("<tool_call>\n{\"name\": %q, \"arguments\": {%q: %s}}\n</tool_call>", name, arg, strings.TrimSpace(b.String()))
}

var (
	multQuestion   = regexp.MustCompile(`What is (\d+(?: \* \d+)+)\?`)
	multExpression = regexp.MustCompile(`^\s*(\d+)\s*\*\s*(\d+)\s*$`)
)

// directMult answers a calc_mult task at once with the product, without the calculator (before
// any tool result; after one it plays on as demonstrateCalcMult).
func directMult(task Task, msgs []Message) (string, error) {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != RoleTool {
		return "#### " + task.GroundTruth, nil
	}
	return demonstrateCalcMult(task, msgs)
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
	call := func(a, b string) string { return toolCallText("calculator", "expression", a+" * "+b) }
	last, result, ok := lastToolStep(msgs)
	if !ok {
		return call(xs[0], xs[1]), nil
	}
	var args struct {
		Expression string `json:"expression"`
	}
	if err := json.Unmarshal(last.Arguments, &args); err != nil {
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
