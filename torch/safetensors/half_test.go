package safetensors

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

func TestF32ToBF16(t *testing.T) {
	cases := []struct {
		in   uint32 // float32 bits
		want uint16
	}{
		{0x3F800000, 0x3F80}, // 1.0
		{0x80000000, 0x8000}, // -0
		{0x3F808000, 0x3F80}, // 1 + 2^-8: exactly halfway, kept LSB 0 is even → down
		{0x3F818000, 0x3F82}, // 1 + 3·2^-8: halfway, kept LSB 1 is odd → up to even
		{0x3F808001, 0x3F81}, // just above halfway → up
		{0x3F807FFF, 0x3F80}, // just below halfway → down
		{0x7F7FFFFF, 0x7F80}, // max float32 rounds up to +Inf
		{0xFF800000, 0xFF80}, // -Inf
		{0x7FC00001, 0x7FC0}, // quiet NaN
		{0x7F800001, 0x7FC0}, // NaN with payload only in the dropped bits: stays NaN
		{0xFFA00000, 0xFFE0}, // negative NaN keeps its sign and payload bit
	}
	for _, c := range cases {
		if got := F32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	// Every bf16 value widens exactly and narrows back to itself (NaNs stay NaN).
	for h := 0; h < 1<<16; h++ {
		f := BF16ToF32(uint16(h))
		back := F32ToBF16(f)
		if f != f {
			if b := BF16ToF32(back); b == b {
				t.Fatalf("bf16 NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("bf16 %#04x → %v → %#04x", h, f, back)
		}
	}
}

func TestF32ToF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3C00},
		{-2, 0xC000},
		{0.1, 0x2E66},       // 0.1f = 0x3DCCCCCD; 0.1·2^13 mantissa → 0x266 with remainder < half
		{65504, 0x7BFF},     // largest half
		{65519, 0x7BFF},     // below the midpoint to 65536
		{65520, 0x7C00},     // the midpoint: 0x7BFF is odd → rounds up to Inf
		{1e6, 0x7C00},       // overflow
		{0x1p-14, 0x0400},   // smallest normal
		{0x1p-24, 0x0001},   // smallest subnormal
		{0x1p-25, 0x0000},   // half the smallest subnormal: tie to even (0)
		{0x1.8p-24, 0x0002}, // 1.5·2^-24: tie between 1 and 2 → even 2
		{0x1.8p-25, 0x0001}, // 0.75·2^-24 → 1
		{0x1p-26, 0x0000},
		{0x1.ffcp-15, 0x0400}, // 1023.5 subnormal units: tie → even 1024 = smallest normal
		{float32(math.Inf(-1)), 0xFC00},
		{-0.0, 0x0000}, // Go's -0.0 literal is +0
	}
	for _, c := range cases {
		if got := F32ToF16(c.in); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := F32ToF16(float32(math.Copysign(0, -1))); got != 0x8000 {
		t.Errorf("F32ToF16(-0) = %#04x", got)
	}
	if got := F32ToF16(math.Float32frombits(0x7F800001)); got&0x7C00 != 0x7C00 || got&0x3FF == 0 {
		t.Errorf("NaN became %#04x", got)
	}
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		back := F32ToF16(f)
		if f != f {
			if b := F16ToF32(back); b == b {
				t.Fatalf("f16 NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("f16 %#04x → %v → %#04x", h, f, back)
		}
	}
}

// F32ToF16 against a brute-force reference: the nearest of all finite halves, computed in float64
// (exact for these values), ties to the even bit pattern, beyond 65520 → Inf.
func TestF32ToF16MatchesNearest(t *testing.T) {
	var vals []float64 // non-negative finite halves, increasing with their bit patterns
	for h := 0; h < 0x7C00; h++ {
		vals = append(vals, float64(F16ToF32(uint16(h))))
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200000; i++ {
		// Random magnitudes across the half range and beyond, biased to interesting exponents.
		x := float32(math.Ldexp(rng.Float64()+0.5, rng.Intn(44)-30))
		want := uint16(0x7C00)
		if float64(x) < 65520 {
			k := sort.SearchFloat64s(vals, float64(x)) // vals[k-1] < x <= vals[k]
			switch {
			case vals[k] == float64(x):
				want = uint16(k)
			default:
				lo, hi := vals[k-1], vals[k]
				dlo, dhi := float64(x)-lo, hi-float64(x)
				want = uint16(k)
				if dlo < dhi || (dlo == dhi && (k-1)%2 == 0) {
					want = uint16(k - 1)
				}
			}
		}
		if got := F32ToF16(x); got != want {
			t.Fatalf("F32ToF16(%g [%#08x]) = %#04x, nearest is %#04x", x, math.Float32bits(x), got, want)
		}
		if got := F32ToF16(-x); got != want|0x8000 {
			t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", -x, got, want|0x8000)
		}
	}
}

func TestDecodeEncode(t *testing.T) {
	xs := []float32{1, -0.5, 3.140625}
	if got, _ := DecodeBF16(EncodeBF16(xs)); got[0] != 1 || got[1] != -0.5 || got[2] != 3.140625 {
		t.Errorf("bf16 round trip %v", got)
	}
	// 3.140625 = 0x40490000 → bf16 0x4049 → bytes 49 40.
	if b := EncodeBF16(xs[2:]); b[0] != 0x49 || b[1] != 0x40 {
		t.Errorf("bf16 bytes %x", b)
	}
	if got, _ := DecodeF16(EncodeF16(xs)); got[2] != 3.140625 {
		t.Errorf("f16 round trip %v", got)
	}
	if _, err := DecodeF16([]byte{1, 2, 3}); err == nil {
		t.Error("odd-length F16 accepted")
	}
	if _, err := DecodeF32([]byte{1, 2, 3}); err == nil {
		t.Error("F32 data of 3 bytes accepted")
	}
}
