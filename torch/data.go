package torch

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// Element is a Go type with a matching tensor dtype.
type Element interface {
	float32 | float64 | int64 | int32 | uint8 | bool
}

func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int64:
		return Int64
	case int32:
		return Int32
	case uint8:
		return Uint8
	case bool:
		return Bool
	}
	panic("unreachable")
}

// shapeOr returns shape, or [n] when shape is empty; it checks that shape holds n elements.
func shapeOr(op string, n int, shape []int64) []int64 {
	if len(shape) == 0 {
		return []int64{int64(n)}
	}
	prod := int64(1)
	for _, d := range shape {
		if d < 0 {
			errorf(op, "negative dimension in shape %v", shape)
		}
		prod *= d
	}
	if prod != int64(n) {
		errorf(op, "%d values do not fill shape %v (%d elements)", n, shape, prod)
	}
	return shape
}

// fromRaw copies n elements of dt at p into a new CPU tensor.
func fromRaw(op string, p unsafe.Pointer, nbytes int, dt DType, shape []int64) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_from_data(p, C.size_t(nbytes), C.int(dt), i64p(shape), C.int(len(shape)), C.int(CPU), &out))
	return wrap(op, out)
}

// FromSlice copies data into a new CPU tensor of the matching dtype. With no shape the tensor is
// one-dimensional; otherwise shape must hold exactly len(data) elements (an empty shape slice
// given explicitly as []int64{} is not possible: use Scalar for 0-d tensors).
func FromSlice[T Element](data []T, shape ...int64) *Tensor {
	dt := dtypeOf[T]()
	shape = shapeOr("FromSlice", len(data), shape)
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	return fromRaw("FromSlice", p, len(data)*dt.Size(), dt, shape)
}

// Scalar is a 0-dimensional tensor holding v.
func Scalar(v float64, dt DType, dev Device) *Tensor {
	return Full(nil, v, dt, dev)
}

// FromBits copies raw 16-bit patterns (bfloat16 or float16) into a new CPU tensor of dtype dt.
func FromBits(bits []uint16, dt DType, shape ...int64) *Tensor {
	if dt != BFloat16 && dt != Float16 {
		errorf("FromBits", "dtype %s is not a 16-bit float", dt)
	}
	shape = shapeOr("FromBits", len(bits), shape)
	var p unsafe.Pointer
	if len(bits) > 0 {
		p = unsafe.Pointer(&bits[0])
	}
	return fromRaw("FromBits", p, len(bits)*2, dt, shape)
}

// FromFloats copies float32 values into a new CPU tensor converted to dt (e.g. bfloat16).
func FromFloats(data []float32, dt DType, shape ...int64) *Tensor {
	t := FromSlice(data, shape...)
	if dt == Float32 {
		return t
	}
	r := t.ToDType(dt)
	t.Free()
	return r
}

// FromBytes copies raw little-endian element bytes (as stored in safetensors) into a new CPU
// tensor. The tensor owns its memory: data may be reused or unmapped afterwards.
func FromBytes(data []byte, dt DType, shape ...int64) *Tensor {
	if dt.Size() == 0 {
		errorf("FromBytes", "unknown dtype %d", int(dt))
	}
	if len(data)%dt.Size() != 0 {
		errorf("FromBytes", "%d bytes is not a whole number of %s elements", len(data), dt)
	}
	shape = shapeOr("FromBytes", len(data)/dt.Size(), shape)
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	return fromRaw("FromBytes", p, len(data), dt, shape)
}

// copyOut copies t's elements (from any device and layout) into p.
func (t *Tensor) copyOut(op string, p unsafe.Pointer, nbytes int) {
	check(op, C.mt_to_data(t.handle(op), p, C.size_t(nbytes)))
}

// Bytes copies the raw little-endian element bytes out (row-major order, from any device).
func (t *Tensor) Bytes() []byte {
	i := t.Info()
	b := make([]byte, int(i.Numel)*i.DType.Size())
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	t.copyOut("Bytes", p, len(b))
	return b
}

// ToSlice copies the elements out; T must match the tensor's dtype.
func ToSlice[T Element](t *Tensor) []T {
	i := t.Info()
	if want := dtypeOf[T](); want != i.DType {
		errorf("ToSlice", "tensor is %s, asked for %s values", i.DType, want)
	}
	out := make([]T, int(i.Numel))
	var p unsafe.Pointer
	if len(out) > 0 {
		p = unsafe.Pointer(&out[0])
	}
	t.copyOut("ToSlice", p, len(out)*i.DType.Size())
	return out
}

// converted returns the values of t as dtype dt, converting on the tensor's device when needed.
func converted[T Element](t *Tensor, dt DType) []T {
	if t.DType() == dt {
		return ToSlice[T](t)
	}
	c := t.ToDType(dt)
	defer c.Free()
	return ToSlice[T](c)
}

// Float32s copies the elements out as float32, converting from any dtype.
func (t *Tensor) Float32s() []float32 { return converted[float32](t, Float32) }

// Float64s copies the elements out as float64, converting from any dtype.
func (t *Tensor) Float64s() []float64 { return converted[float64](t, Float64) }

// Int64s copies the elements out as int64, converting from any dtype.
func (t *Tensor) Int64s() []int64 { return converted[int64](t, Int64) }

// Bools copies the elements out as bool (non-zero = true).
func (t *Tensor) Bools() []bool { return converted[bool](t, Bool) }

// Bits copies the raw 16-bit patterns of a bfloat16 or float16 tensor.
func (t *Tensor) Bits() []uint16 {
	i := t.Info()
	if i.DType != BFloat16 && i.DType != Float16 {
		errorf("Bits", "tensor is %s, not a 16-bit float", i.DType)
	}
	out := make([]uint16, int(i.Numel))
	var p unsafe.Pointer
	if len(out) > 0 {
		p = unsafe.Pointer(&out[0])
	}
	t.copyOut("Bits", p, len(out)*2)
	return out
}
