package algo

import "testing"

func TestOverlongPenalty(t *testing.T) {
	// Max 100 tokens, buffer 20, factor 1: no penalty up to 80 tokens, then −(n − 80)/20.
	o := Overlong{Buffer: 20, Factor: 1}
	if err := o.Validate(100); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]float64{10: 0, 80: 0, 85: -0.25, 90: -0.5, 100: -1} {
		if got := o.Penalty(n, 100); !near(got, want, 1e-15) {
			t.Errorf("Penalty(%d) = %v, want %v", n, got, want)
		}
	}
	// Factor 0.5 halves it.
	if got := (Overlong{Buffer: 20, Factor: 0.5}).Penalty(90, 100); !near(got, -0.25, 1e-15) {
		t.Errorf("factor 0.5: %v, want -0.25", got)
	}
	expectErr(t, "buffer too long", Overlong{Buffer: 200, Factor: 1}.Validate(100), "dapo.overlong_len", "200")
	expectErr(t, "negative factor", Overlong{Buffer: 20, Factor: -1}.Validate(100), "dapo.overlong_factor")
}
