package safetensors

import "fmt"

// DType is a safetensors element type, spelled as in the file header.
type DType string

// The element types the format defines. Sub-byte types (F4, F6_*) are not supported.
const (
	Bool   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
	C64    DType = "C64"
	F8E4M3 DType = "F8_E4M3"
	F8E5M2 DType = "F8_E5M2"
	F8E8M0 DType = "F8_E8M0"
)

var itemSizes = map[DType]int{
	Bool: 1, U8: 1, I8: 1, F8E4M3: 1, F8E5M2: 1, F8E8M0: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	F64: 8, I64: 8, U64: 8, C64: 8,
}

// Size is the number of bytes per element, or 0 for an unknown type.
func (d DType) Size() int { return itemSizes[d] }

// Valid reports whether d is a type this package knows.
func (d DType) Valid() bool { return itemSizes[d] != 0 }

// byteSize returns numel(shape)*itemsize, or an error if a dimension is negative or the product
// overflows int64 (a hostile header must not wrap around into a small, valid-looking size).
func byteSize(d DType, shape []int64) (int64, error) {
	n := int64(d.Size())
	if n == 0 {
		return 0, fmt.Errorf("unknown dtype %q", string(d))
	}
	const max = int64(^uint64(0) >> 1)
	for i, dim := range shape {
		if dim < 0 {
			return 0, fmt.Errorf("shape %v: dimension %d is negative", shape, i)
		}
		if dim != 0 && n > max/dim {
			return 0, fmt.Errorf("shape %v: byte size overflows int64", shape)
		}
		n *= dim
	}
	return n, nil
}
