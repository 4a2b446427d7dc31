package torch

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import "unsafe"

// GradBuffers keeps the gradients of a fixed list of parameters in flat buffers, one per device
// and dtype, laid out once and reused every step: each parameter's gradient (Grad) is a view of
// its region, backward accumulates into it in place, Zero clears all of them with one fill per
// buffer, and ClipGradNorm and StepGrads work on the few buffers instead of one tensor per
// parameter. This is what DDP's gradient_as_bucket_view does, for one process.
//
// A parameter that backward did not reach since Zero has no gradient once ClipGradNorm (or
// Settle) has looked: clipping and AdamW treat it exactly as without buffers (AdamW leaves it and
// its step count alone). A gradient replaced meanwhile (ZeroGrad sets it to none, the next
// backward makes a fresh one) is copied into its region. Close drops the gradients with the
// buffers. Call every method on the torch thread.
type GradBuffers struct {
	h       C.mt_gradbuf
	n, bufs int
	bytes   int64
}

// NewGradBuffers lays out buffers for the parameters of params that require grad and attaches the
// views (a gradient a parameter already has is kept: copied in).
func NewGradBuffers(params []*Tensor) *GradBuffers {
	hs := handles("NewGradBuffers", params)
	b := &GradBuffers{}
	check("NewGradBuffers", C.mt_gradbuf_new(handlesPtr(hs), C.int(len(hs)), &b.h))
	var n, bufs C.int
	var bytes C.int64_t
	check("NewGradBuffers", C.mt_gradbuf_info(b.h, &n, &bufs, &bytes))
	b.n, b.bufs, b.bytes = int(n), int(bufs), int64(bytes)
	return b
}

// Params is the number of parameters held (those that require grad); Buffers the number of flat
// buffers and Bytes their size.
func (b *GradBuffers) Params() int  { return b.n }
func (b *GradBuffers) Buffers() int { return b.bufs }
func (b *GradBuffers) Bytes() int64 { return b.bytes }

// Zero clears every gradient (the buffers keep their memory) and attaches the views again.
func (b *GradBuffers) Zero() {
	check("GradBuffers.Zero", C.mt_gradbuf_zero(b.handle("GradBuffers.Zero")))
}

// Settle finds the held parameters that backward reached since Zero, drops the others' gradients
// and reports, in order, which were reached.
func (b *GradBuffers) Settle() []bool {
	h := b.handle("GradBuffers.Settle")
	out := make([]bool, b.n)
	if b.n == 0 {
		return out
	}
	c := (*C.int)(C.malloc(C.size_t(b.n) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(c))
	check("GradBuffers.Settle", C.mt_gradbuf_settle(h, c))
	for i, v := range unsafe.Slice(c, b.n) {
		out[i] = v != 0
	}
	return out
}

// ClipGradNorm settles, then scales the gradients to a global L2 norm of at most maxNorm (as the
// function ClipGradNorm, torch.nn.utils.clip_grad_norm_) and returns the norm before: one norm
// per buffer rather than per parameter (the sums run in another order: equal to float32
// rounding). 0 when backward reached nothing; +Inf for maxNorm scales nothing.
func (b *GradBuffers) ClipGradNorm(maxNorm float64) float64 {
	var total C.double
	check("GradBuffers.ClipGradNorm", C.mt_gradbuf_clip(b.handle("GradBuffers.ClipGradNorm"), C.double(maxNorm), &total))
	return float64(total)
}

// StepGrads are the gradients for AdamW.StepWith over the held parameters, in order (after
// Settle or ClipGradNorm): the views themselves, float32 copies for float16 and bfloat16
// parameters (their masters' dtype: one cast per buffer), nil where a parameter has none. They
// live in the current scope.
func (b *GradBuffers) StepGrads() []*Tensor {
	h := b.handle("GradBuffers.StepGrads")
	if b.n == 0 {
		return nil
	}
	c := (*C.mt_tensor)(C.malloc(C.size_t(b.n) * C.size_t(unsafe.Sizeof(C.mt_tensor(nil)))))
	defer C.free(unsafe.Pointer(c))
	check("GradBuffers.StepGrads", C.mt_gradbuf_step_grads(h, c))
	out := make([]*Tensor, b.n)
	for i, t := range unsafe.Slice(c, b.n) {
		if t != nil {
			out[i] = wrap("GradBuffers.StepGrads", t)
		}
	}
	return out
}

func (b *GradBuffers) handle(op string) C.mt_gradbuf {
	if b == nil || b.h == nil {
		errorf(op, "gradient buffers are closed")
	}
	return b.h
}

// Close frees the buffers and drops the gradients; safe to call more than once.
func (b *GradBuffers) Close() {
	if b == nil || b.h == nil {
		return
	}
	h := b.h
	b.h = nil
	check("GradBuffers.Close", C.mt_gradbuf_free(h))
}
