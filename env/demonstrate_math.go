package env

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

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

// directAnswer states the ground truth after "####" at once: no worked steps, no tool.
func directAnswer(task Task, _ []Message) (string, error) { return "#### " + task.GroundTruth, nil }

var (
	// calcAnnotation is one of GSM8K's <<expression=result>> calculator annotations.
	calcAnnotation = regexp.MustCompile(`<<([^=<>]+)=([^<>]+)>>`)
	arithmeticOnly = regexp.MustCompile(`^[0-9.+\-*/() ]+$`)
	numberToken    = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)
)

// demonstrateGSM8KPython computes the answer with one python call, a program that redoes the
// worked solution's calculator annotations (extra_info.answer's <<expression=result>>) one
// variable per step, a step's number that is an earlier step's result read from that step's
// variable; then it answers with the number the program printed, after "####".
func demonstrateGSM8KPython(task Task, msgs []Message) (string, error) {
	if _, out, ok := lastToolStep(msgs); ok {
		if strings.HasPrefix(out, "Error:") {
			return "", fmt.Errorf("env: gsm8k_python task %s: the program failed: %s", task.ID, out)
		}
		lines := strings.Split(out, "\n")
		return "#### " + plainNumber(strings.TrimSpace(lines[len(lines)-1])), nil
	}
	code, err := solutionProgram(task)
	if err != nil {
		return "", err
	}
	return toolCallText("python", "code", code), nil
}

// solutionProgram is the program demonstrateGSM8KPython runs for task.
func solutionProgram(task Task) (string, error) {
	sol, _ := task.Extra["answer"].(string)
	steps := calcAnnotation.FindAllStringSubmatch(sol, -1)
	if len(steps) == 0 {
		return "", fmt.Errorf("env: gsm8k_python task %s has no worked solution with <<calculation=result>> steps (extra_info.answer)", task.ID)
	}
	var b strings.Builder
	vars := map[string]string{} // a step's result → its variable
	for i, s := range steps {
		expr := strings.TrimSpace(s[1])
		if !arithmeticOnly.MatchString(expr) {
			return "", fmt.Errorf("env: gsm8k_python task %s: step %q is not arithmetic", task.ID, s[0])
		}
		expr = numberToken.ReplaceAllStringFunc(expr, func(n string) string { return cmp.Or(vars[n], n) })
		v := fmt.Sprintf("s%d", i+1)
		fmt.Fprintf(&b, "%s = %s\n", v, expr)
		vars[strings.TrimSpace(s[2])] = v
	}
	fmt.Fprintf(&b, "print(s%d)", len(steps))
	return b.String(), nil
}

// plainNumber writes a printed float with an integer value as that integer ("4.0" → "4"), and
// any other text as it is.
func plainNumber(s string) string {
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == float64(int64(f)) && strings.Contains(s, ".") {
		return strconv.FormatInt(int64(f), 10)
	}
	return s
}

// countdownNumbers reads "Using the numbers [a, b, c], create an equation that equals t".
var countdownNumbers = regexp.MustCompile(`numbers \[([0-9, ]+)\], create an equation that equals (\d+)`)

// demonstrateCountdown finds an equation with countdownSolve and writes its steps in
// <think></think>, then the equation in <answer></answer>.
func demonstrateCountdown(task Task, _ []Message) (string, error) {
	steps, eq, err := countdownSolution(task)
	if err != nil {
		return "", err
	}
	return "<think>" + strings.Join(steps, ", ") + ".</think>\n<answer>" + eq + "</answer>", nil
}

// directCountdown writes the equation alone, without the steps that find it.
func directCountdown(task Task, _ []Message) (string, error) {
	_, eq, err := countdownSolution(task)
	if err != nil {
		return "", err
	}
	return "<answer>" + eq + "</answer>", nil
}

// countdownSolution reads the task's numbers and target from its prompt and solves it.
func countdownSolution(task Task) (steps []string, eq string, err error) {
	m := countdownNumbers.FindStringSubmatch(taskQuestion(task))
	if m == nil {
		return nil, "", fmt.Errorf("env: countdown task %s has no \"Using the numbers [...], create an equation that equals N\" question", task.ID)
	}
	var nums []int
	if err := json.Unmarshal([]byte("["+m[1]+"]"), &nums); err != nil {
		return nil, "", fmt.Errorf("env: countdown task %s: numbers [%s]: %v", task.ID, m[1], err)
	}
	target, _ := strconv.Atoi(m[2])
	if steps, eq, ok := countdownSolve(nums, target); ok {
		return steps, eq, nil
	}
	return nil, "", fmt.Errorf("env: countdown task %s: no equation over %v equals %d", task.ID, nums, target)
}

// countTerm is a value reached from some of the numbers, the expression that reaches it and the
// steps that compute it ("12 + 7 = 19").
type countTerm struct {
	v     *big.Rat
	expr  string
	steps []string
}

// countdownSolve searches every way of combining the numbers two at a time with + - * / until
// one value is left, for one equal to target that uses every number once. It tries integer
// steps first (what a person writes), then any rational ones. It returns the steps and the
// equation.
func countdownSolve(nums []int, target int) ([]string, string, bool) {
	terms := make([]countTerm, len(nums))
	for i, n := range nums {
		terms[i] = countTerm{v: new(big.Rat).SetInt64(int64(n)), expr: strconv.Itoa(n)}
	}
	want := new(big.Rat).SetInt64(int64(target))
	for _, integer := range []bool{true, false} {
		if t, ok := combine(terms, want, integer); ok {
			return t.steps, strings.TrimSuffix(strings.TrimPrefix(t.expr, "("), ")"), true
		}
	}
	return nil, "", false
}

// combine replaces two terms by their sum, difference, product or quotient, recursively, until
// one term is left; it returns the first one equal to want.
func combine(terms []countTerm, want *big.Rat, integer bool) (countTerm, bool) {
	if len(terms) == 1 {
		return terms[0], terms[0].v.Cmp(want) == 0
	}
	for i := range terms {
		for j := range terms {
			if i == j {
				continue
			}
			a, b := terms[i], terms[j]
			rest := make([]countTerm, 0, len(terms)-1)
			for k, t := range terms {
				if k != i && k != j {
					rest = append(rest, t)
				}
			}
			for _, op := range "+*-/" {
				if (op == '+' || op == '*') && i > j { // commutative: once per pair
					continue
				}
				v, ok := apply(op, a.v, b.v)
				if !ok || integer && (!v.IsInt() || v.Sign() < 0) {
					continue
				}
				step := fmt.Sprintf("%s %c %s = %s", a.v.RatString(), op, b.v.RatString(), v.RatString())
				t := countTerm{v: v, expr: fmt.Sprintf("(%s %c %s)", a.expr, op, b.expr),
					steps: append(append(append([]string(nil), a.steps...), b.steps...), step)}
				if found, ok := combine(append(rest, t), want, integer); ok {
					return found, true
				}
			}
		}
	}
	return countTerm{}, false
}

func apply(op rune, a, b *big.Rat) (*big.Rat, bool) {
	v := new(big.Rat)
	switch op {
	case '+':
		v.Add(a, b)
	case '-':
		v.Sub(a, b)
	case '*':
		v.Mul(a, b)
	default:
		if b.Sign() == 0 {
			return nil, false
		}
		v.Quo(a, b)
	}
	return v, true
}
