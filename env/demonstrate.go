package env

import (
	"fmt"
	"regexp"
	"strings"
)

// Demonstrator writes the assistant message a good policy sends next, given the task and the
// conversation so far (the context's messages). Built-in environments with generated tasks carry
// one (Environment.Demonstrate): supervised warm-up steps train a model on what it writes, played
// through the rollout like any policy so that contexts and chat template are exactly those of RL.
type Demonstrator func(task Task, msgs []Message) (string, error)

var multQuestion = regexp.MustCompile(`What is (\d+) \* (\d+)\?`)

// demonstrateCalcMult calls the calculator with the task's product, then answers with the tool's
// result after "####".
func demonstrateCalcMult(task Task, msgs []Message) (string, error) {
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleTool {
		return "#### " + strings.TrimSpace(msgs[n-1].Content), nil
	}
	for _, m := range task.Prompt {
		if q := multQuestion.FindStringSubmatch(m.Content); q != nil {
			return fmt.Sprintf("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%s * %s\"}}\n</tool_call>", q[1], q[2]), nil
		}
	}
	return "", fmt.Errorf("env: calc_mult task %s has no \"What is A * B?\" question", task.ID)
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
