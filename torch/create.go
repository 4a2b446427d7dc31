package torch

/*
#include "shim.h"
*/
import "C"

func full(op string, shape []int64, fill C.int, v float64, dt DType, dev Device) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_full(i64p(shape), C.int(len(shape)), C.int(dt), C.int(dev), fill, C.double(v), &out))
	return wrap(op, out)
}

// Zeros is a tensor of zeros.
func Zeros(shape []int64, dt DType, dev Device) *Tensor {
	return full("Zeros", shape, C.MT_FILL_ZEROS, 0, dt, dev)
}

// Ones is a tensor of ones.
func Ones(shape []int64, dt DType, dev Device) *Tensor {
	return full("Ones", shape, C.MT_FILL_ONES, 0, dt, dev)
}

// Full is a tensor with every element v.
func Full(shape []int64, v float64, dt DType, dev Device) *Tensor {
	return full("Full", shape, C.MT_FILL_VALUE, v, dt, dev)
}

// Empty is an uninitialised tensor.
func Empty(shape []int64, dt DType, dev Device) *Tensor {
	return full("Empty", shape, C.MT_FILL_EMPTY, 0, dt, dev)
}

// Arange is start, start+step, ... up to but excluding end.
func Arange(start, end, step float64, dt DType, dev Device) *Tensor {
	var out C.mt_tensor
	check("Arange", C.mt_arange(C.double(start), C.double(end), C.double(step), C.int(dt), C.int(dev), &out))
	return wrap("Arange", out)
}

// ZerosLike is Zeros with t's shape, dtype and device.
func ZerosLike(t *Tensor) *Tensor {
	i := t.Info()
	return Zeros(i.Shape, i.DType, i.Device)
}

// OnesLike is Ones with t's shape, dtype and device.
func OnesLike(t *Tensor) *Tensor {
	i := t.Info()
	return Ones(i.Shape, i.DType, i.Device)
}
