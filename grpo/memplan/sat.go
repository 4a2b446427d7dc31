package memplan

import (
	"math"
	"math/bits"
)

// The plan's arithmetic saturates: sizes that are absurd but each allowed (a vocabulary, a width,
// a context at their bounds, multiplied) can need more bytes than an int64 holds, and a product
// that wrapped would read as a small or negative size that fits. Every product and sum of byte
// counts goes through mul and add, which give Beyond when the result would pass it; a plan with
// a quantity at Beyond never fits, whatever the device.

// Beyond stands for a quantity past what an int64 holds (8 EiB): more than any device has.
const Beyond int64 = math.MaxInt64

// mul is the product of non-negative factors, Beyond when it does not fit an int64.
func mul(xs ...int64) int64 {
	p := uint64(1)
	for _, x := range xs {
		if x < 0 {
			panic("memplan: a negative factor") // Validate refuses what would make one
		}
		hi, lo := bits.Mul64(p, uint64(x))
		if hi != 0 || lo > uint64(Beyond) {
			return Beyond
		}
		p = lo
	}
	return int64(p)
}

// add is the sum of non-negative terms, Beyond when it does not fit an int64.
func add(xs ...int64) int64 {
	s := int64(0)
	for _, x := range xs {
		if x < 0 {
			panic("memplan: a negative term")
		}
		if x > Beyond-s {
			return Beyond
		}
		s += x
	}
	return s
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0, b > 0, without overflow.
func ceilDiv(a, b int64) int64 { return a/b + min(1, a%b) }
