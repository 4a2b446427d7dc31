package setting

import (
	"errors"
	"math"
	"testing"
	"time"
)

// Each range says what its key takes, naming the key, in one of three forms: the bound an
// integer missed, the span of a real, or the span with what 0 means.
func TestRangeErrors(t *testing.T) {
	for _, tc := range []struct {
		c    Checker
		want string // "" for a value in range
	}{
		{In("rollout.tasks", 0, 1, MaxTrajectories), "rollout.tasks: 0: must be at least 1"},
		{In("rollout.tasks", MaxTrajectories+1, 1, MaxTrajectories), "rollout.tasks: 1048577: must be at most 1048576"},
		{In("rollout.tasks", 1, 1, MaxTrajectories), ""},
		{In("rollout.tasks", MaxTrajectories, 1, MaxTrajectories), ""},
		{In("env.digits", 7, 1, 6).OrZero("3"), "env.digits: 7: want 1 to 6 (0: 3)"},
		{In("env.digits", 0, 1, 6).OrZero("3"), ""},
		{In("env.lake_size", 9, 2, 6).OrZero("4").Because("why"), "env.lake_size: 9: want 2 to 6 (0: 4; why)"},
		{In("x", 9, 2, 6).Because("why"), "x: 9: must be at most 6 (why)"},
		{In("optim.beta1", 1.0, 0, 1).Below(), "optim.beta1: 1: must be in [0, 1)"},
		{In("rollout.top_p", 0.0, 0, 1).Above(), "rollout.top_p: 0: must be in (0, 1]"},
		{In("rollout.top_p", 1.0, 0, 1).Above(), ""},
		{In("direct_demos", math.NaN(), 0, 1), "direct_demos: NaN: must be in [0, 1]"},
		{AtLeast("optim.eps", 0.0, 0).Above(), "optim.eps: 0: must be a finite number > 0"},
		{AtLeast("optim.eps", math.Inf(1), 0).Above(), "optim.eps: +Inf: must be a finite number > 0"},
		{AtLeast("loss.clip_high", -1.0, 0), "loss.clip_high: -1: must be a finite number >= 0"},
		{AtLeast("loss.clip_high", 1e300, 0), ""},
		{AtLeast("loss.dual_clip", 0.5, 1).Above().OrZero("off"), "loss.dual_clip: 0.5: want a finite number > 1 (0: off)"},
		{AtLeast("loss.dual_clip", 0.0, 1).Above().OrZero("off"), ""},
		{Finite("loss.entropy_coef", math.Inf(-1)), "loss.entropy_coef: -Inf: must be a finite number"},
		{Finite("loss.entropy_coef", -3), ""},
		{AtLeast("env.tool_time", -time.Second, 0), "env.tool_time: -1s: must be at least 0s"},
		{AtLeast("env.tool_time", time.Hour, 0), ""},
		{AtLeast("n", int64(-1), 0), "n: -1: must be at least 0"},
	} {
		err := tc.c.Check()
		got := ""
		if err != nil {
			got = err.Error()
			if ke, ok := As(err); !ok || ke.Key == "" {
				t.Errorf("%q: not a KeyError", got)
			}
		}
		if got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	// Check reports the first range missed.
	err := Check(In("a", 1, 0, 2), In("b", 5, 0, 2), In("c", 9, 0, 2))
	if ke, ok := As(err); !ok || ke.Key != "b" {
		t.Errorf("Check: %v, want b's error", err)
	}
}

func TestProduct(t *testing.T) {
	for _, tc := range []struct {
		a, b, most, want int
		ok               bool
	}{
		{1 << 20, 4, 1 << 20, 0, false},
		{1 << 18, 4, 1 << 20, 1 << 20, true},
		{math.MaxInt, 3, math.MaxInt, 0, false}, // overflows 64 bits: refused, not wrapped
		{-1, 2, 10, 0, false},
	} {
		got, ok := Product(tc.a, tc.b, tc.most)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Product(%d, %d, %d) = %d, %v", tc.a, tc.b, tc.most, got, ok)
		}
	}
}

type color string

const (
	red  color = "red"
	blue color = "blue"
)

func parseColor(s string) (color, error) {
	return Parse("color", s, []color{red, blue}, map[string]color{"crimson": red})
}

// Decode canonicalises aliases and returns Parse's error; OneOf names the key.
func TestNamedValues(t *testing.T) {
	var c color
	if err := Decode(&c, []byte("crimson"), parseColor); err != nil || c != red {
		t.Errorf("crimson: %q %v", c, err)
	}
	err := Decode(&c, []byte("green"), parseColor)
	if err == nil || err.Error() != `unknown color "green" (want red, blue)` || c != red {
		t.Errorf("green: %v (kept %q)", err, c)
	}
	err = OneOf("paint.color", color("green"), []color{red, blue})
	var ke *KeyError
	if !errors.As(err, &ke) || err.Error() != `paint.color: unknown value "green" (want red, blue)` {
		t.Errorf("OneOf: %v", err)
	}
}
