package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BF16ToF32 widens a bfloat16 (the top 16 bits of a float32); exact.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows a float32 to bfloat16, rounding to nearest, ties to even, as torch does.
// NaN stays NaN (quiet, sign and top payload bits kept); overflow rounds to ±Inf.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: truncating could clear every mantissa bit
		return uint16(b>>16) | 0x0040
	}
	// Adding 0x7fff rounds half down; adding one more when the kept LSB is odd makes ties even.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F16ToF32 widens an IEEE half; exact, subnormals included.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: mant × 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(f) | sign)
	case 0x1f: // Inf or NaN (payload kept)
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// F32ToF16 narrows a float32 to IEEE half, rounding to nearest, ties to even. Values beyond the
// half range become ±Inf, values below half the smallest subnormal become ±0, NaN stays NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(mant>>13) // quiet NaN with the top payload bits
	}
	e := exp - 127 + 15 // rebiased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal result: value / 2^-24 = (1.mant as a 24-bit integer M) >> (14 - e).
		shift := uint32(14 - e)
		if shift >= 25 { // value < 2^-25, below half the smallest subnormal (the tie is at shift 24)
			return sign
		}
		return sign | roundShift(mant|0x800000, shift) // may carry into the smallest normal
	}
	// Normal: keep 10 of 23 mantissa bits; a carry out of the mantissa bumps the exponent and
	// can round up to Inf (0x7c00), which is the correct result.
	return sign | (uint16(e)<<10 + roundShift(mant, 13))
}

// roundShift returns m >> s rounded to nearest, ties to even.
func roundShift(m, s uint32) uint16 {
	q := m >> s
	rem := m & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return uint16(q)
}

// DecodeBF16 converts little-endian BF16 bytes to float32s.
func DecodeBF16(b []byte) ([]float32, error) { return decode16(b, "BF16", BF16ToF32) }

// DecodeF16 converts little-endian F16 bytes to float32s.
func DecodeF16(b []byte) ([]float32, error) { return decode16(b, "F16", F16ToF32) }

// EncodeBF16 converts float32s to little-endian BF16 bytes.
func EncodeBF16(xs []float32) []byte { return encode16(xs, F32ToBF16) }

// EncodeF16 converts float32s to little-endian F16 bytes.
func EncodeF16(xs []float32) []byte { return encode16(xs, F32ToF16) }

// DecodeF32 converts little-endian F32 bytes to float32s.
func DecodeF32(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("safetensors: F32 data of %d bytes is not a multiple of 4", len(b))
	}
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs, nil
}

// EncodeF32 converts float32s to little-endian F32 bytes.
func EncodeF32(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decode16(b []byte, name string, conv func(uint16) float32) ([]float32, error) {
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("safetensors: %s data of %d bytes is not a multiple of 2", name, len(b))
	}
	xs := make([]float32, len(b)/2)
	for i := range xs {
		xs[i] = conv(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return xs, nil
}

func encode16(xs []float32, conv func(float32) uint16) []byte {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(b[2*i:], conv(x))
	}
	return b
}
