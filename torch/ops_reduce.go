package torch

/*
#include "shim.h"
*/
import "C"

func (t *Tensor) reduce(op string, code C.int, keepdim bool, dims []int64) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_reduce(code, t.handle(op), i64p(dims), C.int(len(dims)), cbool(keepdim), &out))
	return wrap(op, out)
}

// Sum adds over dims (all when none given); keepdim keeps them with size 1.
func (t *Tensor) Sum(keepdim bool, dims ...int64) *Tensor {
	return t.reduce("Sum", C.MT_SUM, keepdim, dims)
}

// Mean averages over dims (all when none given).
func (t *Tensor) Mean(keepdim bool, dims ...int64) *Tensor {
	return t.reduce("Mean", C.MT_MEAN, keepdim, dims)
}

// Max is the largest value over dims (all when none given).
func (t *Tensor) Max(keepdim bool, dims ...int64) *Tensor {
	return t.reduce("Max", C.MT_AMAX, keepdim, dims)
}

// Min is the smallest value over dims (all when none given).
func (t *Tensor) Min(keepdim bool, dims ...int64) *Tensor {
	return t.reduce("Min", C.MT_AMIN, keepdim, dims)
}

// LogSumExp is log(sum(exp(t))) over dims, computed stably.
func (t *Tensor) LogSumExp(keepdim bool, dims ...int64) *Tensor {
	return t.reduce("LogSumExp", C.MT_LOGSUMEXP, keepdim, dims)
}

// Any is true where any element over dims is non-zero.
func (t *Tensor) Any(keepdim bool, dims ...int64) *Tensor {
	return t.reduce("Any", C.MT_ANY, keepdim, dims)
}

// All is true where every element over dims is non-zero.
func (t *Tensor) All(keepdim bool, dims ...int64) *Tensor {
	return t.reduce("All", C.MT_ALL, keepdim, dims)
}

// Argmax is the index of the largest value along dim (the first one on ties).
func (t *Tensor) Argmax(dim int64, keepdim bool) *Tensor {
	var out C.mt_tensor
	check("Argmax", C.mt_argmax(t.handle("Argmax"), C.int64_t(dim), cbool(keepdim), &out))
	return wrap("Argmax", out)
}

// MaxDim is the largest values along dim and their indices.
func (t *Tensor) MaxDim(dim int64, keepdim bool) (values, indices *Tensor) {
	return t.maxDim("MaxDim", dim, keepdim, false)
}

// MinDim is the smallest values along dim and their indices.
func (t *Tensor) MinDim(dim int64, keepdim bool) (values, indices *Tensor) {
	return t.maxDim("MinDim", dim, keepdim, true)
}

func (t *Tensor) maxDim(op string, dim int64, keepdim, min bool) (*Tensor, *Tensor) {
	var v, i C.mt_tensor
	check(op, C.mt_max_dim(t.handle(op), C.int64_t(dim), cbool(keepdim), cbool(min), &v, &i))
	return wrap(op, v), wrap(op, i)
}

// Cumsum is the running sum along dim.
func (t *Tensor) Cumsum(dim int64) *Tensor {
	var out C.mt_tensor
	check("Cumsum", C.mt_cumsum(t.handle("Cumsum"), C.int64_t(dim), &out))
	return wrap("Cumsum", out)
}

// Softmax along dim.
func (t *Tensor) Softmax(dim int64) *Tensor { return t.softmax("Softmax", dim, false, -1) }

// LogSoftmax along dim.
func (t *Tensor) LogSoftmax(dim int64) *Tensor { return t.softmax("LogSoftmax", dim, true, -1) }

// SoftmaxAs computes the softmax in dtype dt (e.g. Float32 for bfloat16 logits).
func (t *Tensor) SoftmaxAs(dim int64, dt DType) *Tensor {
	return t.softmax("SoftmaxAs", dim, false, dt)
}

// LogSoftmaxAs computes the log-softmax in dtype dt.
func (t *Tensor) LogSoftmaxAs(dim int64, dt DType) *Tensor {
	return t.softmax("LogSoftmaxAs", dim, true, dt)
}

func (t *Tensor) softmax(op string, dim int64, log bool, dt DType) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_softmax(t.handle(op), C.int64_t(dim), cbool(log), C.int(dt), &out))
	return wrap(op, out)
}

// TopK is the k largest (or smallest) values along dim, sorted, with their indices.
func (t *Tensor) TopK(k, dim int64, largest bool) (values, indices *Tensor) {
	var v, i C.mt_tensor
	check("TopK", C.mt_topk(t.handle("TopK"), C.int64_t(k), C.int64_t(dim), cbool(largest), &v, &i))
	return wrap("TopK", v), wrap("TopK", i)
}

// Sort sorts along dim (stable) and returns the values and their original indices.
func (t *Tensor) Sort(dim int64, descending bool) (values, indices *Tensor) {
	var v, i C.mt_tensor
	check("Sort", C.mt_sort(t.handle("Sort"), C.int64_t(dim), cbool(descending), &v, &i))
	return wrap("Sort", v), wrap("Sort", i)
}
