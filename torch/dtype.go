package torch

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
)

// DType is a tensor element type.
type DType int

// The element types mtgrpo uses. Float64 exists for tests and reference math.
const (
	Float32  DType = C.MT_F32
	Float16  DType = C.MT_F16
	BFloat16 DType = C.MT_BF16
	Int64    DType = C.MT_I64
	Int32    DType = C.MT_I32
	Uint8    DType = C.MT_U8
	Bool     DType = C.MT_BOOL
	Float64  DType = C.MT_F64
)

var dtypeNames = map[DType]string{
	Float32: "float32", Float16: "float16", BFloat16: "bfloat16", Int64: "int64",
	Int32: "int32", Uint8: "uint8", Bool: "bool", Float64: "float64",
}

func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// Size is the bytes per element.
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Float16, BFloat16:
		return 2
	case Int64, Float64:
		return 8
	case Uint8, Bool:
		return 1
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float16 || d == BFloat16 || d == Float64
}

// ParseDType accepts torch names (float32, bfloat16, ...), short ones (f32, bf16, fp16, ...) and
// safetensors ones (F32, BF16, I64, U8, BOOL, ...).
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "float32", "f32", "fp32", "float":
		return Float32, nil
	case "float16", "f16", "fp16", "half":
		return Float16, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	case "int64", "i64", "long":
		return Int64, nil
	case "int32", "i32", "int":
		return Int32, nil
	case "uint8", "u8", "byte":
		return Uint8, nil
	case "bool":
		return Bool, nil
	case "float64", "f64", "fp64", "double":
		return Float64, nil
	}
	return 0, fmt.Errorf("torch: unknown dtype %q", s)
}

// Device is where a tensor lives: CPU, or CUDA(n) for cuda:n.
type Device int

// CPU is the host.
const CPU Device = C.MT_CPU

// CUDA is the n-th CUDA device.
func CUDA(n int) Device { return Device(n) }

// IsCUDA reports whether d is a CUDA device.
func (d Device) IsCUDA() bool { return d >= 0 }

// Index is the CUDA device index (-1 for the CPU).
func (d Device) Index() int { return int(d) }

func (d Device) String() string {
	if d == CPU {
		return "cpu"
	}
	return "cuda:" + strconv.Itoa(int(d))
}

// ParseDevice accepts "cpu", "cuda" (= cuda:0) and "cuda:N".
func ParseDevice(s string) (Device, error) {
	switch s {
	case "cpu":
		return CPU, nil
	case "cuda":
		return CUDA(0), nil
	}
	if rest, ok := strings.CutPrefix(s, "cuda:"); ok {
		n, err := strconv.Atoi(rest)
		if err == nil && n >= 0 {
			return CUDA(n), nil
		}
	}
	return CPU, fmt.Errorf("torch: bad device %q (want cpu, cuda or cuda:N)", s)
}
