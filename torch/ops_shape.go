package torch

/*
#include "shim.h"
*/
import "C"

// Reshape returns t with a new shape (-1 infers one dimension), a view when possible.
func (t *Tensor) Reshape(shape ...int64) *Tensor {
	var out C.mt_tensor
	check("Reshape", C.mt_reshape(t.handle("Reshape"), i64p(shape), C.int(len(shape)), 0, &out))
	return wrap("Reshape", out)
}

// View returns a view with a new shape; it fails where Reshape would have to copy.
func (t *Tensor) View(shape ...int64) *Tensor {
	var out C.mt_tensor
	check("View", C.mt_reshape(t.handle("View"), i64p(shape), C.int(len(shape)), 1, &out))
	return wrap("View", out)
}

// Transpose swaps dimensions d0 and d1 (a view).
func (t *Tensor) Transpose(d0, d1 int64) *Tensor {
	var out C.mt_tensor
	check("Transpose", C.mt_transpose(t.handle("Transpose"), C.int64_t(d0), C.int64_t(d1), &out))
	return wrap("Transpose", out)
}

// Permute reorders the dimensions (a view).
func (t *Tensor) Permute(dims ...int64) *Tensor {
	var out C.mt_tensor
	check("Permute", C.mt_permute(t.handle("Permute"), i64p(dims), C.int(len(dims)), &out))
	return wrap("Permute", out)
}

// Unsqueeze inserts a size-1 dimension at dim.
func (t *Tensor) Unsqueeze(dim int64) *Tensor {
	var out C.mt_tensor
	check("Unsqueeze", C.mt_unsqueeze(t.handle("Unsqueeze"), C.int64_t(dim), &out))
	return wrap("Unsqueeze", out)
}

// Squeeze removes dimension dim if it has size 1.
func (t *Tensor) Squeeze(dim int64) *Tensor {
	var out C.mt_tensor
	check("Squeeze", C.mt_squeeze(t.handle("Squeeze"), C.int64_t(dim), 0, &out))
	return wrap("Squeeze", out)
}

// SqueezeAll removes every size-1 dimension.
func (t *Tensor) SqueezeAll() *Tensor {
	var out C.mt_tensor
	check("SqueezeAll", C.mt_squeeze(t.handle("SqueezeAll"), 0, 1, &out))
	return wrap("SqueezeAll", out)
}

// Expand broadcasts size-1 dimensions to shape without copying (-1 keeps a size).
func (t *Tensor) Expand(shape ...int64) *Tensor {
	var out C.mt_tensor
	check("Expand", C.mt_expand(t.handle("Expand"), i64p(shape), C.int(len(shape)), &out))
	return wrap("Expand", out)
}

// Repeat tiles the tensor reps[i] times along each dimension (a copy).
func (t *Tensor) Repeat(reps ...int64) *Tensor {
	var out C.mt_tensor
	check("Repeat", C.mt_repeat(t.handle("Repeat"), i64p(reps), C.int(len(reps)), &out))
	return wrap("Repeat", out)
}

// Slice is t[start:end:step] along dim (a view; negative start/end count from the end).
func (t *Tensor) Slice(dim, start, end, step int64) *Tensor {
	var out C.mt_tensor
	check("Slice", C.mt_slice(t.handle("Slice"), C.int64_t(dim), C.int64_t(start), C.int64_t(end), C.int64_t(step), &out))
	return wrap("Slice", out)
}

// Narrow is length elements along dim from start (a view).
func (t *Tensor) Narrow(dim, start, length int64) *Tensor {
	var out C.mt_tensor
	check("Narrow", C.mt_narrow(t.handle("Narrow"), C.int64_t(dim), C.int64_t(start), C.int64_t(length), &out))
	return wrap("Narrow", out)
}

func join(op string, ts []*Tensor, dim int64, stack bool) *Tensor {
	if len(ts) == 0 {
		errorf(op, "no tensors")
	}
	hs := handles(op, ts)
	var out C.mt_tensor
	check(op, C.mt_cat(&hs[0], C.int(len(hs)), C.int64_t(dim), cbool(stack), &out))
	return wrap(op, out)
}

// Cat concatenates along an existing dimension.
func Cat(ts []*Tensor, dim int64) *Tensor { return join("Cat", ts, dim, false) }

// Stack joins along a new dimension.
func Stack(ts []*Tensor, dim int64) *Tensor { return join("Stack", ts, dim, true) }

// Split cuts t along dim into pieces of size (the last may be smaller). They are views.
func (t *Tensor) Split(size, dim int64) []*Tensor {
	if size <= 0 {
		errorf("Split", "size must be positive, got %d", size)
	}
	n := (t.Size(int(dim)) + size - 1) / size
	return t.split("Split", size, 0, dim, int(n))
}

// Chunk cuts t along dim into at most n nearly equal pieces (views), as torch.chunk.
func (t *Tensor) Chunk(n, dim int64) []*Tensor {
	if n <= 0 {
		errorf("Chunk", "chunks must be positive, got %d", n)
	}
	return t.split("Chunk", 0, n, dim, int(n))
}

func (t *Tensor) split(op string, size, chunks, dim int64, cap int) []*Tensor {
	if cap == 0 {
		return nil
	}
	hs := make([]C.mt_tensor, cap)
	var n C.int
	check(op, C.mt_split(t.handle(op), C.int64_t(size), C.int64_t(chunks), C.int64_t(dim), &hs[0], C.int(cap), &n))
	out := make([]*Tensor, int(n))
	for i := range out {
		out[i] = wrap(op, hs[i])
	}
	return out
}

// SplitSizes cuts t along dim into pieces of the given sizes (views), e.g. a fused qkv projection.
func (t *Tensor) SplitSizes(sizes []int64, dim int64) []*Tensor {
	if len(sizes) == 0 {
		errorf("SplitSizes", "no sizes")
	}
	hs := make([]C.mt_tensor, len(sizes))
	check("SplitSizes", C.mt_split_sizes(t.handle("SplitSizes"), i64p(sizes), C.int(len(sizes)), C.int64_t(dim), &hs[0]))
	out := make([]*Tensor, len(sizes))
	for i := range out {
		out[i] = wrap("SplitSizes", hs[i])
	}
	return out
}

// Gather picks t[..., index[i], ...] along dim; index is int64 with t's number of dimensions.
func (t *Tensor) Gather(dim int64, index *Tensor) *Tensor {
	var out C.mt_tensor
	check("Gather", C.mt_gather(t.handle("Gather"), C.int64_t(dim), index.handle("Gather"), &out))
	return wrap("Gather", out)
}

// Scatter is a copy of t with src written at index along dim (the inverse of Gather).
func (t *Tensor) Scatter(dim int64, index, src *Tensor) *Tensor {
	return t.scatter("Scatter", dim, index, src, false)
}

// ScatterAdd is a copy of t with src added at index along dim.
func (t *Tensor) ScatterAdd(dim int64, index, src *Tensor) *Tensor {
	return t.scatter("ScatterAdd", dim, index, src, true)
}

func (t *Tensor) scatter(op string, dim int64, index, src *Tensor, add bool) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_scatter(t.handle(op), C.int64_t(dim), index.handle(op), src.handle(op), cbool(add), &out))
	return wrap(op, out)
}

// Scatter_ writes src at index along dim in place.
func (t *Tensor) Scatter_(dim int64, index, src *Tensor) *Tensor {
	check("Scatter_", C.mt_scatter(t.handle("Scatter_"), C.int64_t(dim), index.handle("Scatter_"), src.handle("Scatter_"), 0, nil))
	return t
}

// IndexSelect picks whole slices along dim by a 1-D int64 index.
func (t *Tensor) IndexSelect(dim int64, index *Tensor) *Tensor {
	var out C.mt_tensor
	check("IndexSelect", C.mt_index_select(t.handle("IndexSelect"), C.int64_t(dim), index.handle("IndexSelect"), &out))
	return wrap("IndexSelect", out)
}

// IndexCopy_ writes the slices of src into t at index along dim, in place (e.g. a KV cache write).
func (t *Tensor) IndexCopy_(dim int64, index, src *Tensor) *Tensor {
	check("IndexCopy_", C.mt_index_copy_(t.handle("IndexCopy_"), C.int64_t(dim), index.handle("IndexCopy_"), src.handle("IndexCopy_")))
	return t
}

// NoPadding is Embedding's padding index when no row is padding.
const NoPadding int64 = -1

// Embedding looks up rows of weight [V, D] for int64 ids of any shape: result [ids..., D]. Ids
// must lie in [0, V): on CUDA an out-of-range id is a device-side assert, not an error. padding
// (in [0, V), or NoPadding) is nn.Embedding's padding_idx: the lookup gives that row no gradient,
// so a pad token that appears in the ids leaves it untouched (other uses of the same weight, a
// tied output head, still train it).
func Embedding(weight, ids *Tensor, padding int64) *Tensor {
	var out C.mt_tensor
	check("Embedding", C.mt_embedding(weight.handle("Embedding"), ids.handle("Embedding"), C.int64_t(padding), &out))
	return wrap("Embedding", out)
}
