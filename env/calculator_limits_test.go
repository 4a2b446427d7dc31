package env

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// Hostile expressions end in a clear error (or their value) within a bounded time: deep nesting
// does not overflow the stack, long literals are refused before they are converted, and sums
// whose denominators grow are stopped like products.
func TestCalculatorHostileExpressions(t *testing.T) {
	deep := strings.Repeat("(", 600_000) + "1" + strings.Repeat(")", 600_000)
	cases := []struct {
		name, expr, want string // want: the value, or "error: " and the start of the message
	}{
		{"600k nested parentheses", deep, "error: expression too long"},
		{"nesting past the depth limit", strings.Repeat("(", maxDepth+1) + "1" + strings.Repeat(")", maxDepth+1), "error: expression nested too deeply"},
		{"nesting at the depth limit", strings.Repeat("(", maxDepth) + "7" + strings.Repeat(")", maxDepth), "7"},
		{"3M unary minus signs", strings.Repeat("-", 3_000_000) + "1", "error: expression too long"},
		{"unary signs within the length limit", strings.Repeat("-", maxExpression-2) + "1", "1"}, // an even number of signs
		{"power chain past the depth limit", strings.Repeat("1^", maxDepth+1) + "1", "error: expression nested too deeply"},
		{"3M-digit literal", strings.Repeat("7", 3_000_000), "error: expression too long"},
		{"literal over the digit cap", strings.Repeat("7", maxDigits+1), "error: number too long"},
		{"decimal over the digit cap", "0." + strings.Repeat("3", maxDigits), "error: number too long"},
		{"literal with separators at the cap", strings.Repeat("1_", maxDigits-1) + "1", strings.Repeat("1", maxDigits)},
		// 1/3^600 + 1/7^600 + …: 3^600 has 287 digits, 7^600 508, 11^600 625; the sum's
		// denominator is their product (1419 digits), past the 1000-digit cap at the third term.
		{"growing denominators in a sum", "1/3^600 + 1/7^600 + 1/11^600 + 1/13^600", "error: result too large"},
		{"growing denominators, under the cap", "1 + 1/3^600 + 1/7^600 - 1/3^600 - 1/7^600", "1"}, // 3^600·7^600: 795 digits
	}
	for _, c := range cases {
		t0 := time.Now()
		v, err := Evaluate(c.expr)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = FormatRat(v)
		}
		if ok := got == c.want || strings.HasPrefix(c.want, "error: ") && strings.HasPrefix(got, c.want); !ok {
			t.Errorf("%s: got %s, want %s", c.name, clip(got, 80), c.want)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%s: took %v", c.name, d)
		}
	}
}

// Countdown checks the model's equation with the same evaluator: nesting and sign runs that
// overflowed the stack are refused with the calculator's error.
func TestCountdownHostileEquations(t *testing.T) {
	truth := CountdownTruth{Target: 5, Numbers: []int{2, 3}}
	for _, eq := range []string{
		strings.Repeat("(", 600_000) + "2 + 3" + strings.Repeat(")", 600_000),
		strings.Repeat("-", 3_000_000) + "2 + 3",
		strings.Repeat("(", maxDepth+1) + "2 + 3" + strings.Repeat(")", maxDepth+1),
	} {
		if err := CheckCountdown(eq, truth); err == nil || !strings.Contains(err.Error(), "expression") {
			t.Errorf("%s: %v", clip(eq, 20), err)
		}
	}
	if err := CheckCountdown(strings.Repeat("(", maxDepth)+"2 + 3"+strings.Repeat(")", maxDepth), truth); err != nil {
		t.Errorf("nesting at the limit: %v", err)
	}
}

// The calculator honours its context: a cancelled call returns the context's error, and a long
// evaluation polls the context as it goes and stops when it is done.
func TestCalculatorHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	args, _ := json.Marshal(map[string]string{"expression": "1+1"})
	if _, err := (Calculator{}).Call(ctx, args); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	// ~400 operations on numbers of ~500 digits; the context reports itself cancelled from its
	// third poll on, so the evaluation must stop part-way with its error.
	heavy := strings.TrimSuffix(strings.Repeat("3^600/7^500+", maxExpression/len("3^600/7^500+")), "+")
	polls := &cancelAfter{Context: context.Background(), n: 3}
	if _, err := EvaluateContext(polls, heavy); !errors.Is(err, context.Canceled) || polls.calls != 3 {
		t.Fatalf("got %v after %d polls; want context.Canceled after 3", err, polls.calls)
	}
	if v, err := Evaluate(heavy); err != nil || v.Sign() <= 0 {
		t.Fatalf("without a deadline: %v, %v", v, err)
	}
}

// cancelAfter is a context whose Err is context.Canceled from its n-th call on.
type cancelAfter struct {
	context.Context
	n, calls int
}

func (c *cancelAfter) Err() error {
	if c.calls++; c.calls >= c.n {
		return context.Canceled
	}
	return nil
}
