package grpo

import "testing"

func TestPassAtK(t *testing.T) {
	// n = 4 draws, c = 1 success: pass@1 = 1/4; pass@4 = 1; pass@2 = 1 − C(3,2)/C(4,2) = 1 − 3/6.
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{{4, 1, 1, 0.25}, {4, 1, 4, 1}, {4, 1, 2, 0.5}, {4, 0, 4, 0}, {5, 5, 1, 1}} {
		if got := passAtK(c.n, c.c, c.k); !near(got, c.want, 1e-12) {
			t.Errorf("pass@%d with %d of %d: %g, want %g", c.k, c.c, c.n, got, c.want)
		}
	}
}
