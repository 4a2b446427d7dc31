package model

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// θ = 10000, d = 8: inv_freq_i = 10000^(-2i/8) = 10000^(-i/4) = 1, 0.1, 0.01, 0.001.
func TestInvFreqDefault(t *testing.T) {
	got := invFreq(Rope{Type: "default", Theta: 10000}, 8)
	want := []float64{1, 0.1, 0.01, 0.001}
	for i := range want {
		if !near(float64(got[i]), want[i], 1e-6) {
			t.Fatalf("inv_freq[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// llama3 scaling with factor 8, low 1, high 4, original context 64 on the inv_freq above:
// low_freq_wavelen = 64/1 = 64, high_freq_wavelen = 64/4 = 16; wavelen = 2π/inv:
//
//	i=0: 6.283  < 16   → kept:        1
//	i=1: 62.83  in [16, 64] → smooth: s = (64/62.832 − 1)/(4 − 1) = 0.0061973,
//	     inv' = (1−s)·0.1/8 + s·0.1 = 0.0124225 + 0.00061973 = 0.0130423
//	i=2: 628.3  > 64   → 0.01/8  = 0.00125
//	i=3: 6283   > 64   → 0.001/8 = 0.000125
func TestInvFreqLlama3(t *testing.T) {
	r := Rope{Type: "llama3", Theta: 10000, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64}
	got := invFreq(r, 8)
	want := []float64{1, 0.0130423, 0.00125, 0.000125}
	for i := range want {
		if !near(float64(got[i]), want[i], 2e-5) {
			t.Fatalf("inv_freq[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// Llama 3.2's own setting (θ 5e5, factor 32, orig 8192, d 64): the highest frequency (wavelen 2π)
	// is untouched and the lowest (wavelen 2π·5e5^(62/64) ≈ 1.98e6 > 8192) is divided by 32.
	r = Rope{Type: "llama3", Theta: 500000, Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	got = invFreq(r, 64)
	plain := invFreq(Rope{Type: "default", Theta: 500000}, 64)
	if got[0] != plain[0] || !near(float64(got[31]), float64(plain[31])/32, 1e-6) {
		t.Fatalf("llama3.2 ends: %v %v (plain %v %v)", got[0], got[31], plain[0], plain[31])
	}
}

// Position 2, inv = [1, 0.1] (θ 100, d 4: 100^(-2/4) = 0.1): angles 2 and 0.2, and the table repeats
// them over the two halves: cos = [cos 2, cos .2, cos 2, cos .2].
func TestRopeTables(t *testing.T) {
	inv := invFreq(Rope{Type: "default", Theta: 100}, 4)
	cos, sin := ropeTables(inv, []int32{0, 2})
	want := []float64{1, 1, 1, 1, math.Cos(2), math.Cos(0.2), math.Cos(2), math.Cos(0.2)}
	wantSin := []float64{0, 0, 0, 0, math.Sin(2), math.Sin(0.2), math.Sin(2), math.Sin(0.2)}
	for i := range want {
		if !near(float64(cos[i]), want[i], 1e-6) || !near(float64(sin[i]), wantSin[i], 1e-6) {
			t.Fatalf("[%d] cos %v sin %v, want %v %v", i, cos[i], sin[i], want[i], wantSin[i])
		}
	}
}
