// Package expect holds the comparisons the math packages' tests share (grpo, grpo/algo): values
// within a tolerance, element by element, and errors that mention what they must. Imported by
// tests only.
package expect

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// Near reports whether a and b differ by at most tol.
func Near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Slice checks got against want element-wise within tol.
func Slice(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
		return
	}
	for i := range got {
		if !Near(got[i], want[i], tol) {
			t.Errorf("%s[%d] = %.9g, want %.9g (all: %v)", what, i, got[i], want[i], got)
			return
		}
	}
}

// Nested checks got against want row by row (Slice on each row).
func Nested(t *testing.T, what string, got, want [][]float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d rows %v, want %d %v", what, len(got), got, len(want), want)
		return
	}
	for i := range got {
		Slice(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i], tol)
	}
}

// Err checks that err is an error whose message holds every one of parts.
func Err(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one mentioning %q", what, parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not mention %q", what, err, p)
		}
	}
}
